"""Feasibility probe of a shallower mention tower (issue 45's next lever): a
student made of some of the trained mention tower's layers, distilled on the
KB's names and the training mentions (loss 1 - cosine to the teacher's
embedding, pooled as the module pools; AdamW, batches of 64), then put in place of the teacher
in memory (nothing is saved: the saved format keeps one encoder config for both
towers) and scored on dev like the teacher: Acc@1 of the top candidate, gold
ids resolved through the KB, the PyTorch runtime, the kNN datastore re-encoded
by the student. Also times both towers encoding the same texts.

With `--served`, a pipeline of the same weights as the default saves them (the
int8 ONNX mention tower, the int8 name scan, the shortcut), the student is also
exported to int8 ONNX and put in place of the served graph in memory: dev Acc@1
of the served pipeline with the teacher's graph and with the student's, and both
graphs' ONNX Runtime time over the same texts. The student's graph is written
beside the output JSON (`<output>.student_int8.onnx`) for the next step.

    python -m bench distill-probe PIPELINE TRAIN.spacy DEV.spacy --layers 0,2,4 --epochs 2 --output OUT.json
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

def dev_accuracy(nlp: Any, kb: Any, path: Path) -> float:
    """Acc@1 of the top candidate (`Span._.kb_ents[0]`) on the gold spans of
    `path`, gold ids (a `|`-list) resolved through `kb`; NIL gold left out."""
    from spacy.tokens import DocBin, Span

    docs = list(DocBin().from_disk(path).get_docs(nlp.vocab))
    golds = [[(e.start, e.end, e.label_, e.kb_id_) for e in doc.ents] for doc in docs]
    for doc, gold in zip(docs, golds):
        doc.ents = [Span(doc, start, end, label=label) for start, end, label, _ in gold]
    right = total = 0
    for doc, gold in zip(nlp.pipe(docs), golds):
        for ent, (_, _, _, kb_id) in zip(doc.ents, gold):
            if not kb_id or kb_id == "NIL":
                continue
            wanted = {kb.resolve(part) or part for part in kb_id.replace("+", "|").split("|") if part}
            top = ent._.kb_ents[0][0] if ent._.kb_ents else None
            right += top in wanted
            total += 1
    return right / max(total, 1)


def onnx_seconds(graph: Any, model: Any, texts: Sequence[str], batch: int = 64) -> float:
    """Seconds ONNX Runtime takes to encode `texts` with `graph` (bytes or a path),
    tokenised beforehand, by length buckets of `batch` as the runtime runs them."""
    from spacy_bioel.encoders.onnx_sessions import new_session
    from spacy_bioel.encoders.thinc_biencoder import batch_tokenizer
    from spacy_bioel.encoders.common import length_buckets

    session, tokenizer = new_session(graph), batch_tokenizer(model)
    keys = list(texts)
    inputs = [tokenizer([keys[i] for i in indices]) for indices in length_buckets(keys, batch)]
    start = time.perf_counter()
    for ids, mask in inputs:
        session.run(None, {"input_ids": ids, "attention_mask": mask})
    return round(time.perf_counter() - start, 2)


def served_with(served: Path, graph: bytes, dev: Path) -> float:
    """Dev Acc@1 of the ONNX-served pipeline `served` with `graph` in place of its
    mention tower's (in memory; its datastore keys stay the teacher's)."""
    import spacy

    nlp = spacy.load(served)
    linker = nlp.get_pipe("bioel_linker")
    linker.runtime.use_student(graph, {"probe": True})
    return dev_accuracy(nlp, linker.kb, dev)


def probe(pipeline: Path, train: Path, dev: Path, layers: List[int], epochs: float,
          learn_rate: float = 1e-4, batch: int = 64, seed: int = 0,
          served: Optional[Path] = None, output: Optional[Path] = None) -> Dict[str, Any]:
    import spacy
    import torch
    from spacy.tokens import DocBin

    from spacy_bioel.encoders.distill import distill_mention_tower, pooled
    from spacy_bioel.encoders.runtime import TorchRuntime
    from spacy_bioel.encoders.thinc_biencoder import torch_module

    nlp = spacy.load(pipeline)
    linker = nlp.get_pipe("bioel_linker")
    if not isinstance(linker.runtime, TorchRuntime):
        linker.set_stage("runtime", TorchRuntime())
    module = torch_module(linker.model)
    if module.shared:
        raise SystemExit("the probe needs separate towers: the concept tower stays the teacher")
    teacher_acc = dev_accuracy(nlp, linker.kb, dev)
    texts = sorted(set(linker.index.names.names) |
                   {e.text for doc in DocBin().from_disk(train).get_docs(nlp.vocab) for e in doc.ents})
    teacher = module.mention_encoder
    start = time.perf_counter()
    student, curve = distill_mention_tower(linker.model, texts, layers, epochs, learn_rate, batch,
                                           seed)
    train_s = time.perf_counter() - start
    module.mention_encoder = student
    linker.datastore_stale = True
    linker.refresh()
    student_acc = dev_accuracy(nlp, linker.kb, dev)
    timed = texts[:5000]
    seconds = {}
    with torch.no_grad():
        for label, tower in (("student", student), ("teacher", teacher)):
            start = time.perf_counter()
            for i in range(0, len(timed), 64):
                pooled(linker.model, tower, timed[i:i + 64])
            seconds[label] = round(time.perf_counter() - start, 2)
    result = {"pipeline": str(pipeline), "layers": layers, "epochs": epochs, "texts": len(texts),
              "teacher_dev_acc@1": teacher_acc, "student_dev_acc@1": student_acc,
              "loss_curve": curve, "distill_s": round(train_s, 1),  # the teacher's targets included
              "encode_s_per_tower": seconds, "timed_texts": len(timed)}
    if served is not None:
        from spacy_bioel.encoders.onnx_export import export_mention_encoder, read_graph

        graph = export_mention_encoder(linker.model, "int8-all")  # the student is the mention tower now
        if output is not None:
            Path(f"{output}.student_int8.onnx").write_bytes(graph)
        teacher_path = Path(served) / "bioel_linker" / "runtime" / "mention.onnx"
        teacher_graph = read_graph(teacher_path)  # its weights inlined (saved beside it)
        result["served"] = {
            "pipeline": str(served),
            "teacher_dev_acc@1": served_with(served, teacher_graph, dev),
            "student_dev_acc@1": served_with(served, graph, dev),
            "onnx_s": {"teacher": onnx_seconds(str(teacher_path), linker.model, timed),
                       "student": onnx_seconds(graph, linker.model, timed)},
            "onnx_mb": {"teacher": round(len(teacher_graph) / 1e6, 1),
                        "student": round(len(graph) / 1e6, 1)}}
    return result


__all__ = ["probe", "dev_accuracy", "pooled"]

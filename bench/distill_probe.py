"""Feasibility probe of a shallower mention tower (issue 45's next lever): a
student made of some of the trained mention tower's layers, distilled on the
KB's names and the training mentions (loss 1 - cosine to the teacher's
embedding, pooled as the module pools; AdamW, batches of 64), then put in place of the teacher
in memory (nothing is saved: the saved format keeps one encoder config for both
towers) and scored on dev like the teacher: Acc@1 of the top candidate, gold
ids resolved through the KB, the PyTorch runtime, the kNN datastore re-encoded
by the student. Also times both towers encoding the same texts.

    python -m bench distill-probe PIPELINE TRAIN.spacy DEV.spacy --layers 0,2,4 --epochs 2 --output OUT.json
"""
from __future__ import annotations

import copy
import random
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

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


def pooled(model: Any, encoder: Any, texts: Sequence[str]):
    """The embeddings of `texts` by `encoder` (a transformer), pooled and
    normalised as the linker's module does it (`torch_biencoder.pool`)."""
    import torch

    from spacy_bioel.encoders.thinc_biencoder import tokenize, torch_module
    from spacy_bioel.encoders.torch_biencoder import pool

    module = torch_module(model)
    ids, mask = tokenize(model, list(texts), torch.device("cpu"))
    hidden = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
    return module._normalise(pool(hidden, mask, module.pooling, ids, module.mask_id))


def probe(pipeline: Path, train: Path, dev: Path, layers: List[int], epochs: float,
          learn_rate: float = 1e-4, batch: int = 64, seed: int = 0) -> Dict[str, Any]:
    import spacy
    import torch
    from spacy.tokens import DocBin

    from spacy_bioel.encoders.runtime import TorchRuntime
    from spacy_bioel.encoders.thinc_biencoder import torch_module
    from spacy_bioel.progress import progress_bar

    torch.manual_seed(seed)
    rng = random.Random(seed)
    nlp = spacy.load(pipeline)
    linker = nlp.get_pipe("bioel_linker")
    if not isinstance(linker.runtime, TorchRuntime):
        linker.set_stage("runtime", TorchRuntime())
    module = torch_module(linker.model)
    if module.shared:
        raise SystemExit("the probe needs separate towers: the concept tower stays the teacher")
    teacher_acc = dev_accuracy(nlp, linker.kb, dev)
    texts = sorted({name for _, name in linker.kb.names()} |
                   {e.text for doc in DocBin().from_disk(train).get_docs(nlp.vocab) for e in doc.ents})
    teacher = module.mention_encoder
    teacher.eval()
    start = time.perf_counter()
    with torch.no_grad():
        targets = torch.cat([pooled(linker.model, teacher, texts[i:i + 256])
                             for i in range(0, len(texts), 256)])
    encode_s = time.perf_counter() - start
    student = copy.deepcopy(teacher)
    student.encoder.layer = torch.nn.ModuleList([student.encoder.layer[i] for i in layers])
    student.config.num_hidden_layers = len(layers)
    for parameter in student.parameters():
        parameter.requires_grad_(True)
    optimizer = torch.optim.AdamW(student.parameters(), lr=learn_rate, weight_decay=0.01)
    per_epoch = max(1, len(texts) // batch)
    steps, order, curve = max(1, int(epochs * per_epoch)), list(range(len(texts))), []
    student.train()
    start = time.perf_counter()
    bar = progress_bar(total=steps, desc="Distilling", unit=" steps")
    for step in range(steps):
        if step % per_epoch == 0:
            rng.shuffle(order)
        chosen = order[(step % per_epoch) * batch:(step % per_epoch + 1) * batch]
        loss = (1 - (pooled(linker.model, student, [texts[i] for i in chosen])
                     * targets[chosen]).sum(-1)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        bar.update(1)
        if step % 200 == 0 or step == steps - 1:
            curve.append((step, round(loss.item(), 4)))
            bar.set_postfix(loss=f"{loss.item():.4f}")
    bar.close()
    train_s = time.perf_counter() - start
    student.eval()
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
    return {"pipeline": str(pipeline), "layers": layers, "epochs": epochs, "texts": len(texts),
            "teacher_dev_acc@1": teacher_acc, "student_dev_acc@1": student_acc,
            "loss_curve": curve, "teacher_encode_s": round(encode_s, 1),
            "distill_s": round(train_s, 1), "encode_s_per_tower": seconds, "timed_texts": len(timed)}


__all__ = ["probe", "dev_accuracy", "pooled"]

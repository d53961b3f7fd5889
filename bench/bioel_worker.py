"""One run of a saved bioel_linker pipeline for the side-by-side benchmark
(`python -m bench side-by-side`), in a fresh process, possibly of another
environment (the pipeline served by ONNX runs where PyTorch is not installed).

    python bioel_worker.py link PIPELINE DOCS.jsonl OUT.json [BATCH_SIZE]
    python bioel_worker.py build PIPELINE OUT.json

`link` loads the pipeline, builds docs from DOCS.jsonl (per line the tokens,
{"words", "spaces", "spans": [[start_token, end_token, label], ...]}, as the
scispaCy worker builds them), links them with
`nlp.pipe` and writes each mention's top candidate (`Span._.kb_ents[0]`, as
`evaluate`'s Acc@1 reads it; NIL when there is none), the number of NIL answers
(`kb_id_`), the times, the peak RSS, the linker's counts (shortcuts, cache hits)
and its seconds per stage (`BioELLinker.timings`, the runtime's tokenizing). `build` times
what building the pipeline's derived parts from its KB and weights takes: the
name index (every KB name encoded), the kNN datastore and, for the ONNX
runtime, the exported encoder (`repair-pipeline`'s work).
"""
import json
import resource
import sys
import time
from collections import Counter

try:  # run by path, its folder first on sys.path (until __main__ drops it): stdlib only
    from machine import where
except ImportError:  # imported as bench.bioel_worker (bench/scale.py)
    from .machine import where


def peak_rss_mb() -> float:
    """This process' peak resident set size (MB): Linux's VmHWM, which starts
    afresh at exec (ru_maxrss does not: a worker would report at least the RSS
    its parent had when it forked)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM"):
                    return int(line.split()[1]) / 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def benchmark_docs(vocab, docs_path: str):
    """Yield the docs of DOCS.jsonl built from the benchmark's tokens and token
    spans, so that every system (this worker and scispacy_worker.py) links the
    same mentions whatever its own tokenizer would make of the text."""
    from spacy.tokens import Doc, Span

    with open(docs_path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            doc = Doc(vocab, words=record["words"], spaces=record["spaces"])
            doc.ents = [Span(doc, s, e, label=label) for s, e, label in record["spans"]]
            yield doc


def link(pipeline: str, docs_path: str, out: str, batch_size: int = 64) -> None:
    start = time.perf_counter()
    import spacy

    imported = time.perf_counter()
    rss_imported = peak_rss_mb()
    nlp = spacy.load(pipeline)
    for _, pipe in nlp.pipeline:  # the library records its stages' seconds only when asked
        for part in (pipe, getattr(pipe, "runtime", None)):
            if part is not None and hasattr(part, "timings"):
                part.timings = Counter()
    loaded = time.perf_counter()
    predictions, nil_answers = [], 0
    for doc in nlp.pipe(benchmark_docs(nlp.vocab, docs_path), batch_size=batch_size):
        for ent in doc.ents:
            candidates = ent._.kb_ents
            predictions.append(candidates[0][0] if candidates else "NIL")
            nil_answers += ent.kb_id_ == "NIL"
    linked = time.perf_counter()
    counts = {}
    for _, pipe in nlp.pipeline:
        counts.update({k: int(v) for k, v in getattr(pipe, "counts", {}).items()})
    runtime = [getattr(pipe, "runtime", None) for _, pipe in nlp.pipeline]
    timings = {}
    for _, pipe in nlp.pipeline:
        timings.update(getattr(pipe, "timings", None) or {})
        timings.update(getattr(getattr(pipe, "runtime", None), "timings", None) or {})
    result = {"import_s": imported - start, "load_s": loaded - imported,
              "link_s": linked - loaded, "mentions": len(predictions),
              "predictions": predictions, "nil_answers": nil_answers,
              "rss_after_import_mb": rss_imported,
              "peak_rss_mb": peak_rss_mb(), "counts": counts, "timings": timings,
              "torch_imported": "torch" in sys.modules,
              "runtime": [getattr(r, "name", None) for r in runtime if r is not None],
              "versions": {"spacy": spacy.__version__, "python": sys.version.split()[0]}}
    result["where"] = where()
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


def build(pipeline: str, out: str) -> None:
    import tempfile

    start = time.perf_counter()
    from spacy_bioel.pipeline.loading import repair_pipeline

    nlp = repair_pipeline(pipeline)  # loads without index, datastore and runtime; re-creates them
    with tempfile.TemporaryDirectory() as tmp:
        nlp.to_disk(tmp)  # an ONNX runtime exports the mention tower here
    result = {"build_s": time.perf_counter() - start, "peak_rss_mb": peak_rss_mb()}
    result["where"] = where()
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    if sys.path and sys.path[0].rstrip("/").endswith("bench"):
        del sys.path[0]  # run by path: the package's modules must not shadow any import
    args = sys.argv[1:]
    if args and args[0] == "link" and len(args) in (4, 5):
        link(args[1], args[2], args[3], int(args[4]) if len(args) == 5 else 64)
    elif args and args[0] == "build" and len(args) == 3:
        build(args[1], args[2])
    else:
        sys.exit(__doc__)

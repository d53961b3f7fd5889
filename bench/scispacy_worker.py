"""One run of scispaCy's linker for the side-by-side benchmark
(`python -m bench side-by-side`), in scispaCy's own environment.

This file is run by path with that environment's Python (scispaCy pins
numpy<2 and, to build its index, scipy<1.11), so it imports nothing from the
spacy_bioel package: only the standard library, spaCy, scispaCy and its
sibling file bioel_worker.py (which needs nothing else either).

    python scispacy_worker.py build KB.jsonl INDEX_DIR OUT.json
    python scispacy_worker.py link KB.jsonl INDEX_DIR DOCS.jsonl OUT.json [--threshold 0.7]

`build` fits scispaCy's TF-IDF vectorizer and nmslib HNSW index over the KB's
aliases (`create_tfidf_ann_index`). `link` loads them, builds docs from
DOCS.jsonl's tokens and token spans (`bioel_worker.benchmark_docs`, as the other
worker does), runs the abbreviation detector and the linker (k=30, scispaCy's
default threshold 0.7, no definition filter: the KB has no definitions) and
writes the top concept of every mention (or NIL), the times and the peak RSS.
"""
import json
import sys
import time

# run by path: its folder is on sys.path, and bioel_worker imports nothing of this package
from bioel_worker import benchmark_docs, peak_rss_mb
from machine import where


def build(kb_path: str, index_dir: str, out: str) -> None:
    import os

    start = time.perf_counter()
    from scispacy.candidate_generation import create_tfidf_ann_index
    from scispacy.linking_utils import KnowledgeBase

    os.makedirs(index_dir, exist_ok=True)
    kb = KnowledgeBase(kb_path)
    create_tfidf_ann_index(index_dir, kb)
    result = {"build_s": time.perf_counter() - start, "aliases": len(kb.alias_to_cuis),
              "concepts": len(kb.cui_to_entity), "peak_rss_mb": peak_rss_mb()}
    result["where"] = where()
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


def link(kb_path: str, index_dir: str, docs_path: str, out: str, threshold: float) -> None:
    start = time.perf_counter()
    import spacy
    import scispacy
    from scispacy.abbreviation import AbbreviationDetector  # noqa: F401 (registers the factory)
    from scispacy.candidate_generation import CandidateGenerator, LinkerPaths
    from scispacy.linking import EntityLinker
    from scispacy.linking_utils import KnowledgeBase

    imported = time.perf_counter()
    rss_imported = peak_rss_mb()
    kb = KnowledgeBase(kb_path)
    aliases, vectorizer, ann_index = LinkerPaths.from_directory(index_dir).load()
    generator = CandidateGenerator(ann_index, vectorizer, aliases, kb)
    nlp = spacy.blank("en")
    nlp.add_pipe("abbreviation_detector")
    linker = EntityLinker(nlp, candidate_generator=generator, resolve_abbreviations=True,
                          threshold=threshold, filter_for_definitions=False)
    loaded = time.perf_counter()
    predictions = []
    for doc in nlp.pipe(benchmark_docs(nlp.vocab, docs_path), batch_size=64):
        doc = linker(doc)
        predictions.extend(ent._.kb_ents[0][0] if ent._.kb_ents else "NIL" for ent in doc.ents)
    linked = time.perf_counter()
    result = {"import_s": imported - start, "load_s": loaded - imported,
              "link_s": linked - loaded, "mentions": len(predictions),
              "predictions": predictions, "rss_after_import_mb": rss_imported,
              "peak_rss_mb": peak_rss_mb(),
              "versions": {"scispacy": scispacy.__version__, "spacy": spacy.__version__,
                           "python": sys.version.split()[0]},
              "settings": {"k": linker.k, "threshold": linker.threshold,
                           "filter_for_definitions": linker.filter_for_definitions,
                           "resolve_abbreviations": True,
                           "max_entities_per_mention": linker.max_entities_per_mention}}
    result["where"] = where()
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    if sys.path and sys.path[0].rstrip("/").endswith("bench"):
        del sys.path[0]  # run by path: the package's modules must not shadow any import
    args = sys.argv[1:]
    if args and args[0] == "build" and len(args) == 4:
        build(*args[1:])
    elif args and args[0] == "link" and len(args) in (5, 7):
        threshold = float(args[6]) if len(args) == 7 and args[5] == "--threshold" else 0.7
        link(args[1], args[2], args[3], args[4], threshold)
    else:
        sys.exit(__doc__)

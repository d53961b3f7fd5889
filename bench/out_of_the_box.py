"""What a user gets out of the box (issue 72): the default pipeline (the shipped
disease NER before the untrained linker on the embedded MiniLM and the embedded
Disease Ontology) on the raw text of test corpora its NER never trained on.

Per corpus:
- NER strict P/R/F1 (exact span; every mention one label, as `bench e2e`);
- document-level concept P/R/F1 in the corpus' vocabulary (MeSH for NCBI and
  BC5CDR), the linker writing each DOID concept's id there through DOID's
  cross-references (`id_space`; a concept without one is NIL), and the ceiling
  those cross-references set: the share of gold concepts that are an id some
  DOID concept maps to (recall ceiling; F1 ceiling at precision 1);
- docs/s end to end;
- a KB-name dictionary matcher as the floor: the longest matches of DOID's
  names (`ner.kb_names.NameMatcher`, the NER's own name features), each linked
  to the first concept of that name, scored the same way.

Beside them, a fresh process's `link` call (`bench.embedded_default.one_call`):
the first call on a fresh cache (it builds the pipeline) and later calls (it
loads it), wall seconds and peak RSS.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set

from .machine import cpu_name, where, where_line

logger = logging.getLogger(__name__)


def dictionary_floor(kb, gold_docs: Sequence, make_doc, id_space: str, label: str):
    """The dictionary matcher's DocResults (see the module)."""
    from spacy_bioel.kb.normalize import normalize_text
    from spacy_bioel.kb.xrefs import id_in_space
    from spacy_bioel.ner.kb_names import NameMatcher

    from . import e2e

    matcher = NameMatcher([name for _, name in kb.names()])
    aliases = kb.alias_index
    results = []
    for gold in gold_docs:
        doc = make_doc(gold.text)
        predicted = {}
        for start, end in matcher.longest(matcher.matches(doc), len(doc)):
            span = doc[start:end]
            ids = aliases.get(normalize_text(span.text)) or []
            mapped = id_in_space(kb.get(ids[0]), id_space) if ids else None
            predicted[(span.start_char, span.end_char, label)] = mapped or e2e.NIL
        results.append(e2e.gold_result(gold, predicted, label))
    return results


def ceiling(results: Sequence, reachable: Set[str]) -> Dict[str, Any]:
    gold = sum(len(r.gold_concepts) for r in results)
    hit = sum(len(r.gold_concepts & reachable) for r in results)
    recall = hit / gold if gold else 0.0
    return {"gold_concepts": gold, "reachable": hit, "recall": recall,
            "f": 2 * recall / (1 + recall) if recall else 0.0}


def evaluate(corpora: Dict[str, Path], id_space: str = "MESH", n_bootstrap: int = 1000,
             limit: int = 0, ner: Optional[Path] = None,
             settings: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """`ner`: a trained NER pipeline in place of the shipped one (same linker and
    document consistency); `settings`: linker settings changed from the default
    (`set_option`; to measure one on dev, paired with the default)."""
    from spacy_bioel.cli import read_docs
    from spacy_bioel.ner.shipped import LABEL, manifest
    from spacy_bioel.pipeline.embedded_default import default_pipeline
    from spacy_bioel.pipeline.loading import find_linker

    from . import e2e
    from .cli.e2e import run_pipeline

    started = time.perf_counter()
    if ner is None:
        nlp = default_pipeline()
    else:
        from spacy_bioel.pipeline.embedded_default import load_ner_source, with_ner

        nlp = default_pipeline(ner=False)
        nlp = with_ner(nlp, load_ner_source(str(ner), nlp.vocab))
    load_seconds = time.perf_counter() - started
    linker = find_linker(nlp)
    linker.set_option("id_space", id_space)
    for key, value in (settings or {}).items():
        linker.set_option(key, value)
    kb = linker.kb
    from spacy_bioel.kb.xrefs import reachable as reachable_ids

    reachable = reachable_ids(kb, id_space)
    report: Dict[str, Any] = {
        "pipeline": (f"default_pipeline() ({'shipped NER' if ner is None else f'the NER of {ner}'}"
                     f" + untrained linker, embedded MiniLM + {kb.name})"),
        "pipe_names": nlp.pipe_names, "id_space": id_space,
        "ner_manifest": ({k: v for k, v in manifest().items() if k != "files"} if ner is None
                         else {"pipeline": str(ner)}),
        "load_seconds_in_process": round(load_seconds, 2), "cpu": cpu_name(),
        "where": where("default_pipeline()" if ner is None else
                       f"default_pipeline(ner=False) + the NER of {ner}"), "corpora": {},
        "bootstrap": n_bootstrap, "settings": dict(settings or {})}
    for name, path in corpora.items():
        gold_docs = read_docs([path])
        gold_docs = gold_docs[:limit] if limit else gold_docs
        linker.counts.clear()
        docs, seconds = run_pipeline(nlp, [d.text for d in gold_docs])
        results = [e2e.gold_result(g, e2e.predicted_mentions(d, None, LABEL), LABEL)
                   for g, d in zip(gold_docs, docs)]
        floor = dictionary_floor(kb, gold_docs, nlp.make_doc, id_space, LABEL)
        total = sum(seconds.values())
        report["corpora"][name] = {
            "data": str(path), "documents": len(gold_docs),
            "default": e2e.scores(results, n_bootstrap),
            "dictionary_floor": e2e.scores(floor, n_bootstrap),
            "ceiling": ceiling(results, reachable),
            "id_space_unmapped": int(linker.counts.get("id_space_unmapped", 0)),
            "docs_per_s": len(gold_docs) / total if total else None,
            "seconds": {k: round(v, 3) for k, v in seconds.items()}}
        row = report["corpora"][name]["default"]
        logger.info("%s: NER F1 %.1f, document F1 %.1f", name, 100 * row["ner"]["f"],
                    100 * row["documents"]["f"])
    return report


def calls(n: int = 3, pythons: Sequence[str] = ()) -> Dict[str, Any]:
    """`link` on the default, each call a fresh process on one fresh cache per
    interpreter (this one, then each of `pythons`, e.g. the base install's): the
    first builds, the later ones load."""
    import sys
    import tempfile

    from .embedded_default import one_call

    out: Dict[str, Any] = {"installs": {}}
    for python in [sys.executable, *pythons]:
        with tempfile.TemporaryDirectory(prefix="bioel-ootb-") as cache:
            rows = [one_call("default", "embedded:doid", "embedded:all-MiniLM-L6-v2", Path(cache),
                             python=python) for _ in range(n)]
        out["installs"][python] = rows
    return out


def markdown(report: Dict[str, Any], link_calls: Optional[Dict[str, Any]] = None) -> str:
    lines = ["# Out of the box: plain text in, linked concepts out", "",
             f"{report['pipeline']}; pipes {report['pipe_names']}; ids written in "
             f"{report['id_space']} through the KB's cross-references. Where: "
             f"{where_line(report.get('where')) or report['cpu']}. "
             f"95% intervals from {report['bootstrap']} bootstrap resamples of the documents.", "",
             "| corpus | system | NER P | NER R | NER F1 | doc P | doc R | doc F1 | doc F1 95% CI | docs/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for name, entry in report["corpora"].items():
        for system, key in (("default pipeline", "default"), ("dictionary floor", "dictionary_floor")):
            ner, doc = entry[key]["ner"], entry[key]["documents"]
            ci = doc["ci95"].get("f", [None, None])
            interval = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci[0] is not None else ""
            speed = f"{entry['docs_per_s']:.1f}" if key == "default" else ""
            lines.append(f"| {name} | {system} | {100 * ner['p']:.1f} | {100 * ner['r']:.1f} | "
                         f"{100 * ner['f']:.1f} | {100 * doc['p']:.1f} | {100 * doc['r']:.1f} | "
                         f"{100 * doc['f']:.1f} | {interval} | {speed} |")
    lines += ["", "The cross-references' ceiling (gold concepts some DOID concept maps to):", "",
              "| corpus | gold concepts (per document) | reachable | recall ceiling | F1 ceiling | mentions linked to a concept without an id there |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, entry in report["corpora"].items():
        c = entry["ceiling"]
        lines.append(f"| {name} | {c['gold_concepts']} | {c['reachable']} | {100 * c['recall']:.1f} | "
                     f"{100 * c['f']:.1f} | {entry['id_space_unmapped']} |")
    if link_calls:
        lines += ["", "`python -m spacy_bioel link` (plain text) in a fresh process, one fresh cache "
                  "per install:", "",
                  "| install (interpreter) | PyTorch installed | call | seconds | peak RSS MB |",
                  "|---|---|---|---:|---:|"]
        for python, rows in link_calls["installs"].items():
            for i, row in enumerate(rows):
                lines.append(f"| `{python}` | {'yes' if row['torch_installed'] else 'no'} | "
                             f"{'first (builds)' if i == 0 else f'later {i}'} | "
                             f"{row['seconds']:.2f} | {row['peak_rss_mb']:.0f} |")
    return "\n".join(lines) + "\n"


__all__ = ["calls", "ceiling", "dictionary_floor", "evaluate", "markdown"]

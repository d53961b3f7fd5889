"""NERs across corpora (issue 73): each NER reads each corpus' raw test text, its
mentions made consistent as the shipped pipeline does (`bioel_mention_consistency`
with its defaults), and strict P/R/F1 (spans only, one label) is scored with
bootstrap intervals over documents: a per-corpus NER on its own corpus and on the
other, the joint one on both. Nothing is chosen here (test)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from . import e2e
from .machine import where, where_line
from .ner_dev import LABEL, ner_only


def evaluate(models: Dict[str, Path], corpora: Dict[str, Path], n_bootstrap: int = 1000
             ) -> Dict[str, Any]:
    import spacy

    from spacy_bioel.cli import read_docs
    from spacy_bioel.pipeline.consistency import MentionConsistency

    gold = {name: read_docs([path]) for name, path in corpora.items()}
    report: Dict[str, Any] = {"models": {k: str(v) for k, v in models.items()},
                              "corpora": {k: str(v) for k, v in corpora.items()},
                              "bootstrap": n_bootstrap, "rows": {}, "where": where("spacy.load")}
    for model_name, path in models.items():
        nlp = spacy.load(path)
        consistency = MentionConsistency(nlp)
        row: Dict[str, Any] = {}
        with nlp.select_pipes(enable=ner_only(nlp)):
            for corpus, gold_docs in gold.items():
                started = time.perf_counter()
                docs = [consistency(doc) for doc in nlp.pipe([d.text for d in gold_docs], batch_size=32)]
                seconds = time.perf_counter() - started
                results = [e2e.gold_result(g, e2e.predicted_mentions(d, None, LABEL), LABEL)
                           for g, d in zip(gold_docs, docs)]
                row[corpus] = {**e2e.scores(results, n_bootstrap)["ner"],
                               "docs_per_s": len(docs) / seconds if seconds else None}
        report["rows"][model_name] = row
    return report


def markdown(report: Dict[str, Any], title: str) -> str:
    corpora = list(report["corpora"])
    lines = [f"# {title}", "", "Strict NER F1 (spans only, one label) on each corpus' raw text (the split given), "
             "with the abbreviations' consistency; 95% intervals from "
             f"{report['bootstrap']} bootstrap resamples of the documents.", "",
             "| NER | " + " | ".join(f"{c} F1 [95% CI] (P / R)" for c in corpora) + " | docs/s |",
             "|---|" + "---:|" * (len(corpora) + 1)]
    for name, row in report["rows"].items():
        cells = []
        for corpus in corpora:
            r = row[corpus]
            ci = r["ci95"].get("f", [None, None])
            interval = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci[0] is not None else ""
            cells.append(f"{100 * r['f']:.1f}{interval} ({100 * r['p']:.1f} / {100 * r['r']:.1f})")
        speed = ", ".join(f"{row[c]['docs_per_s']:.0f}" for c in corpora)
        lines.append(f"| {name} (`{report['models'][name]}`) | " + " | ".join(cells) + f" | {speed} |")
    if report.get("where"):
        lines += ["", f"Where: {where_line(report['where'])}."]
    return "\n".join(lines) + "\n"


def pooled(reports: List[Dict[str, Any]]) -> Dict[str, Dict[str, Dict[str, float]]]:
    """Model name -> corpus -> mean and sample std of F1 over the reports (one per
    seed; a model missing from a report is left out of that seed)."""
    values: Dict[str, Dict[str, List[float]]] = {}
    for report in reports:
        for model, row in report["rows"].items():
            for corpus, scored in row.items():
                values.setdefault(model, {}).setdefault(corpus, []).append(100 * scored["f"])
    return {model: {corpus: {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1
                             else 0.0, "n": len(v)} for corpus, v in row.items()}
            for model, row in values.items()}


def pooled_markdown(table: Dict[str, Dict[str, Dict[str, float]]], title: str, note: str) -> str:
    corpora = list(next(iter(table.values()))) if table else []
    lines = [f"# {title}", "", note, "", "| NER | " + " | ".join(f"{c} F1" for c in corpora) + " |",
             "|---|" + "---:|" * len(corpora)]
    for model, row in table.items():
        lines.append(f"| {model} | " + " | ".join(
            f"{row[c]['mean']:.1f} ± {row[c]['std']:.1f} (n={row[c]['n']})" if c in row else ""
            for c in corpora) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["evaluate", "markdown", "pooled", "pooled_markdown"]

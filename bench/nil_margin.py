"""How many right links a tuned NIL stage answers NIL for on the test set, with
its threshold fitted on dev by two rules: at most 2% of dev's own right links
(the point estimate) and so few that a one-sided 95% Clopper-Pearson upper
bound on the rate stays within 2% (`spacy_bioel.nil.threshold.allowed_right_as_nil`,
what `tune` fits). Same pipeline, same decisions, only the threshold differs.

Per pipeline: its tuned ranker and calibration are kept; the NIL stage is fitted
again on dev by each rule (`ThresholdNIL.fit(..., confidence=...)`, as `tune`
fits it) and both are applied to the test mentions' supports.
"""
from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import typer

logger = logging.getLogger(__name__)

RULES = {"2% of dev": None, "95% bound": 0.95}


def _mentions(nlp, linker, path: Path) -> Dict[str, np.ndarray]:
    """Per mention of `path`: the support, whether the top candidate is right,
    whether it has candidates, gold NIL, and whether the encoder saw it."""
    from spacy_bioel.cli import read_docs
    from spacy_bioel.pipeline.loading import upstream_annotated
    from spacy_bioel.pipeline.tuning import gold_mentions

    docs = upstream_annotated(nlp, linker, read_docs([path]))
    gold, encoded = gold_mentions(linker, docs)
    decisions = linker.decide(linker.retrieve(docs))
    seen = np.zeros(len(gold), dtype=bool)
    seen[encoded] = True
    return {
        "support": np.array([d.support if d.support is not None else -1.0 for d in decisions]),
        "has_candidates": np.array([bool(d.candidates) for d in decisions]),
        "right": np.array([bool(d.candidates) and d.candidates[0][0] in g
                           for d, g in zip(decisions, gold)]),
        "gold_nil": np.array([not g for g in gold]),
        "encoded": seen,
    }


def _answers(stage, mentions: Dict[str, np.ndarray]) -> Dict[str, Any]:
    nil = np.array([(not seen) or stage.decide(s, c)[0] for s, c, seen in
                    zip(mentions["support"], mentions["has_candidates"], mentions["encoded"])])
    linkable = ~mentions["gold_nil"]
    thrown = int(np.sum(nil & mentions["right"] & linkable))
    n = int(linkable.sum())
    row: Dict[str, Any] = {"n_linkable": n, "right_as_nil_count": thrown,
                           "right_as_nil": thrown / n if n else None,
                           "kb_id_acc": float(np.sum(mentions["right"] & ~nil & linkable)) / n if n else None,
                           "nil_answers": int(nil.sum())}
    if mentions["gold_nil"].any():
        tp = int(np.sum(nil & mentions["gold_nil"]))
        precision = tp / nil.sum() if nil.any() else 0.0
        recall = tp / mentions["gold_nil"].sum()
        row["nil_f1"] = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return row


def probe(pipelines: Dict[str, Path], dev: Dict[str, Path], test: Dict[str, Path]) -> Dict[str, Any]:
    """pipelines: LABEL -> a tuned pipeline; dev/test: LABEL -> its DocBins.
    RETURNS (Dict[str, Any]): per label and rule, the threshold and the dev and test rows."""
    from spacy_bioel.pipeline.loading import find_linker, load_pipeline

    runs: Dict[str, Any] = {}
    for label, path in pipelines.items():
        nlp = load_pipeline(path)
        linker = find_linker(nlp, None)
        if linker.nil.nil_score_from != "probability" or linker.nil.calibration is None:
            raise typer.BadParameter(f"{path}: its NIL stage is not calibrated (CalibratedNIL.v1); "
                                     "run `python -m spacy_bioel tune` on it first", param_hint="RUNS")
        on = {"dev": _mentions(nlp, linker, dev[label]), "test": _mentions(nlp, linker, test[label])}
        fit_on = on["dev"]["encoded"]
        rules = {}
        for name, confidence in RULES.items():
            stage = copy.deepcopy(linker.nil)
            fitted = stage.fit(on["dev"]["support"][fit_on].tolist(), on["dev"]["right"][fit_on].tolist(),
                               on["dev"]["gold_nil"][fit_on].tolist(), confidence=confidence)
            rules[name] = {"threshold": fitted["threshold"],
                           **{split: _answers(stage, mentions) for split, mentions in on.items()}}
        runs[label] = {"pipeline": str(path), "dev": str(dev[label]), "test": str(test[label]), "rules": rules}
        logger.info("%s: %s", label, {n: r["test"]["right_as_nil_count"] for n, r in rules.items()})
    return {"rules": {name: confidence for name, confidence in RULES.items()}, "runs": runs}


def _pct(value: Optional[float]) -> str:
    return "" if value is None else f"{100 * value:.2f}"


def markdown(result: Dict[str, Any]) -> str:
    names = list(result["rules"])
    lines = ["| pipeline | rule | threshold | dev right as NIL (count) | test right as NIL (count) "
             "| test kb_id_ acc | test NIL answers | test NIL F1 |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, run in result["runs"].items():
        for name in names:
            rule = run["rules"][name]
            dev, test = rule["dev"], rule["test"]
            threshold = "never" if rule["threshold"] is None else f"{rule['threshold']:.4f}"
            lines.append(f"| {label} | {name} | {threshold} | {_pct(dev['right_as_nil'])} "
                         f"({dev['right_as_nil_count']}) | {_pct(test['right_as_nil'])} "
                         f"({test['right_as_nil_count']}) | {_pct(test['kb_id_acc'])} | "
                         f"{test['nil_answers']} | {_pct(test.get('nil_f1'))} |")
    over: List[str] = []
    for name in names:
        rates = [run["rules"][name]["test"]["right_as_nil"] for run in result["runs"].values()]
        rates = [r for r in rates if r is not None]
        if rates:
            over.append(f"- {name}: test right as NIL {100 * np.mean(rates):.2f} ± "
                        f"{100 * np.std(rates, ddof=1) if len(rates) > 1 else 0.0:.2f}%, over 2% in "
                        f"{sum(r > 0.02 for r in rates)} of {len(rates)} pipelines")
    return "\n".join(lines + [""] + over) + "\n"


__all__ = ["probe", "markdown", "RULES"]

"""Runs repeated over seeds -> mean +- std per system, and differences paired
by seed against a baseline system (the form of every method claim in the
the brief: 3 seeds, mean +- std, paired against the same run without it).

Input: `evaluate` reports (JSON), grouped by system; a report's seed is read
from its file name (`..._s<N>.json`, the project's convention) or, failing
that, from the label in its meta (`...-s<N>`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from spacy_bioel.errors import BioELError, Errors

METRICS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("Acc@1", ("acc@1",)), ("Acc@10", ("acc@10",)), ("R@64", ("recall@64",)),
    ("seen", ("seen", "acc@1")), ("unseen", ("unseen", "acc@1")), ("refined", ("refined", "acc@1")))
# the end-to-end reports of `python -m bench e2e` (issue 44): F1 of the NER + linker pipeline on
# raw text, and of the same linker on gold spans
E2E_METRICS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("NER F1", ("end_to_end", "ner", "f")), ("mention F1", ("end_to_end", "mentions", "f")),
    ("document F1", ("end_to_end", "documents", "f")),
    ("gold-span mention F1", ("gold_spans", "mentions", "f")),
    ("gold-span document F1", ("gold_spans", "documents", "f")))
KINDS = {"evaluate": METRICS, "e2e": E2E_METRICS}
# the columns whose per-seed differences to a baseline a table shows
PAIRED = {"evaluate": ("Acc@1", "unseen"), "e2e": ("NER F1", "mention F1", "document F1")}
_SEED = re.compile(r"(?:_s|-s|seed)(\d+)$")
# BioFEG's Table 4 (Sui et al., paper 001, Sec. 4.5): the wrong mentions by seen / unseen gold
# and prediction, from the `seen` table of each report's `error_kinds`
ERROR_KINDS = ("unseen_to_wrong_seen", "seen_to_wrong_unseen", "unseen_to_wrong_unseen",
               "seen_to_wrong_seen", "predicted_nil")


def seed_of(path: Path, report: dict) -> str:
    """The run's seed: from the file name, else from the meta label, else the
    report's own `seed` (an e2e report reads its pipeline's); E166 if none."""
    for text in (path.stem, str(report.get("meta", {}).get("linker", ""))):
        found = _SEED.search(text)
        if found:
            return found.group(1)
    if isinstance(report.get("seed"), int):
        return str(report["seed"])
    raise BioELError(Errors.E166.format(path=path, problem="no seed in the file name "
                                        "(..._s<N>.json), the meta label (...-s<N>) or the "
                                        "report's \"seed\""))


def metric(report: dict, path: Tuple[str, ...]) -> Optional[float]:
    value = report
    for key in path:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return float(value) if isinstance(value, (int, float)) else None


def _stats(values: Sequence[float]) -> dict:
    return {"mean": float(np.mean(values)) if values else None,
            "std": float(np.std(values, ddof=1)) if len(values) > 1 else None, "n": len(values)}


def summarise(systems: Dict[str, Dict[str, dict]], baseline: Optional[str] = None,
              metrics: Sequence[Tuple[str, Tuple[str, ...]]] = METRICS) -> List[dict]:
    """systems: name -> {seed: report}. RETURNS one row per system: mean, std and
    count per metric, and (with `baseline`) the mean, std and count of the
    per-seed differences to the baseline on the seeds both have."""
    if baseline is not None and baseline not in systems:
        raise BioELError(Errors.E175.format(name="--baseline", value=baseline,
                                            expected="one of the --row names: " + ", ".join(systems)))
    rows = []
    for name, runs in systems.items():
        row: dict = {"system": name, "seeds": sorted(runs, key=int)}
        for column, path in metrics:
            row[column] = _stats([v for v in (metric(r, path) for r in runs.values())
                                  if v is not None])
            if baseline is not None and name != baseline:
                base = systems[baseline]
                diffs = [metric(runs[s], path) - metric(base[s], path) for s in runs
                         if s in base and metric(runs[s], path) is not None
                         and metric(base[s], path) is not None]
                row[f"{column} diff"] = _stats(diffs)
        kinds = [r["error_kinds"]["seen"] for r in runs.values()
                 if isinstance((r.get("error_kinds") or {}).get("seen"), dict)]
        if kinds:
            row["error_kinds"] = {k: _stats([float(t.get(k, 0)) for t in kinds])
                                  for k in ERROR_KINDS}
        rows.append(row)
    return rows


def _cell(stat: dict, scale: float = 100) -> str:
    """'mean ± std' of `stat` times `scale` (100: percent; 1: counts)."""
    if not stat or stat["mean"] is None:
        return "-"
    text = f"{scale * stat['mean']:.1f}"
    return text + (f" ± {scale * stat['std']:.1f}" if stat["std"] is not None else "")


def seeds_table(rows: Sequence[dict], baseline: Optional[str] = None,
                metrics: Sequence[Tuple[str, Tuple[str, ...]]] = METRICS,
                paired: Sequence[str] = PAIRED["evaluate"]) -> str:
    """Markdown: mean ± std over seeds (percent); with a baseline, the `paired`
    columns' differences paired by seed (points; Acc@1 and unseen Acc@1 by default)."""
    columns = [c for c, _ in metrics if any(r[c]["n"] for r in rows)]
    extra = [f"{c} diff" for c in paired if c in columns] if baseline else []
    head = ["system", "seeds"] + columns + [f"Δ{c[:-5]} vs {baseline}" for c in extra]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for row in rows:
        cells = [row["system"], ", ".join(row["seeds"])] + [_cell(row[c]) for c in columns]
        cells += [_cell(row.get(c, {})) for c in extra]
        lines.append("| " + " | ".join(cells) + " |")
    if any("error_kinds" in row for row in rows):
        lines += ["", "Wrong mentions by kind (BioFEG Table 4), mean ± std count over seeds:",
                  "", "| system | " + " | ".join(k.replace("_", " ") for k in ERROR_KINDS) + " |",
                  "|---|" + "---:|" * len(ERROR_KINDS)]
        for row in rows:
            kinds = row.get("error_kinds", {})
            lines.append(f"| {row['system']} | " + " | ".join(
                _cell(kinds.get(k, {}), scale=1) for k in ERROR_KINDS) + " |")
    return "\n".join(lines) + "\n"


__all__ = ["seed_of", "summarise", "seeds_table", "METRICS", "E2E_METRICS", "KINDS", "PAIRED",
           "ERROR_KINDS"]

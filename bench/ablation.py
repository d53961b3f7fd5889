"""Summaries of an ablation: per-run results -> mean +- std over seeds, a
markdown table and NIL precision-recall plots.

A run result (written by `python -m bench ablate`) is a JSON object
with keys 'dataset', 'variant', 'seed', 'describe' (loss / negatives / FGSM
labels), and 'evaluations': {'knn_off': report, 'knn_on': report} where a
report is the harness's metrics JSON plus 'nil_pr_curve'.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from .seeds import metric as value_at

# (column label, path into a report)
COLUMNS: List[Tuple[str, Tuple[str, ...]]] = [
    ("Acc@1", ("acc@1",)), ("kb_id_ acc", ("kb_id_acc",)), ("right as NIL", ("right_as_nil",)),
    ("Acc@5", ("acc@5",)),
    ("refined Acc@1", ("refined", "acc@1")), ("refined Acc@5", ("refined", "acc@5")),
    ("seen Acc@1", ("seen", "acc@1")), ("unseen Acc@1", ("unseen", "acc@1")),
    ("NIL AP", ("nil", "average_precision")), ("NIL P", ("nil", "precision")),
    ("NIL R", ("nil", "recall")), ("NIL F1", ("nil", "f1")),
]
EVALUATIONS = (("knn_off", "off"), ("knn_on", "on"))


def nil_pr_curve(gold_nil: Sequence[bool], nil_scores: Sequence[Optional[float]],
                 max_points: int = 200) -> Optional[Dict[str, List[float]]]:
    """Precision and recall of NIL at every threshold on `nil_scores` (at most
    `max_points` of them kept), or None without gold NIL or scores."""
    from sklearn.metrics import precision_recall_curve

    if not any(gold_nil) or any(s is None for s in nil_scores):
        return None
    precision, recall, _ = precision_recall_curve(np.asarray(gold_nil, dtype=int),
                                                  np.asarray(nil_scores, dtype=np.float64))
    keep = np.unique(np.linspace(0, len(precision) - 1, min(max_points, len(precision))).astype(int))
    return {"precision": [round(float(v), 4) for v in precision[keep]],
            "recall": [round(float(v), 4) for v in recall[keep]]}


def summarise(results: Iterable[dict]) -> List[dict]:
    """One row per (dataset, variant, kNN on/off): mean, std and seed count of
    every column. Rows keep the order in which variants first appear."""
    groups: Dict[Tuple[str, str, str], List[dict]] = defaultdict(list)
    describe: Dict[Tuple[str, str], dict] = {}
    for result in results:
        describe.setdefault((result["dataset"], result["variant"]), result.get("describe", {}))
        for key, label in EVALUATIONS:
            report = result.get("evaluations", {}).get(key)
            if report is not None:
                groups[(result["dataset"], result["variant"], label)].append(report)
    rows = []
    for (dataset, variant, knn), reports in groups.items():
        row = {"dataset": dataset, "variant": variant, "knn": knn, "seeds": len(reports),
               **describe[(dataset, variant)]}
        for column, path in COLUMNS:
            values = [v for v in (value_at(r, path) for r in reports) if v is not None]
            row[column] = {"mean": float(np.mean(values)) if values else None,
                           "std": float(np.std(values, ddof=1)) if len(values) > 1 else None,
                           "n": len(values)}
        rows.append(row)
    return rows


def _cell(stat: dict) -> str:
    if stat["mean"] is None:
        return "-"
    text = f"{100 * stat['mean']:.1f}"
    return text + (f" ± {100 * stat['std']:.1f}" if stat["std"] is not None else "")


def ablation_table(rows: Sequence[dict]) -> str:
    """Markdown: one line per row of `summarise`, percentages, mean ± std over seeds."""
    head = ["dataset", "variant", "loss", "negatives", "FGSM", "kNN", "seeds"] + \
        [c for c, _ in COLUMNS]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] * 7 + ["---:"] * len(COLUMNS)) + "|"]
    for row in rows:
        cells = [row["dataset"], row["variant"], row.get("loss", ""), row.get("negatives", ""),
                 row.get("fgsm", ""), row["knn"], str(row["seeds"])]
        cells += [_cell(row[c]) for c, _ in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _side(spec, default_knn: str) -> Tuple[str, str]:
    """(variant, knn) of one side of a comparison: 'name' or {variant, knn}."""
    if isinstance(spec, str):
        return spec, default_knn
    return str(spec.get("variant", "*")), str(spec.get("knn", default_knn))


def compare(results: Sequence[dict], comparisons: Sequence[dict]) -> List[dict]:
    """Paired differences a - b for the questions of a spec's `comparisons`.

    A comparison is {'question', 'a', 'b', 'metrics', 'knn'}: each side a
    variant name (at `knn`, default 'off') or {'variant', 'knn'}, where variant
    '*' pairs every variant with itself (e.g. kNN on vs off). Runs are paired
    by (dataset, seed) (and variant for '*'); a row per (question, dataset,
    metric) holds the mean and std of the differences, the number of pairs and
    how many of them favour a.
    """
    reports: Dict[Tuple[str, str, int, str], dict] = {}
    for result in results:
        for key, label in EVALUATIONS:
            report = result.get("evaluations", {}).get(key)
            if report is not None:
                reports[(result["dataset"], result["variant"], result["seed"], label)] = report
    datasets = list(dict.fromkeys(r["dataset"] for r in results))
    paths = dict(COLUMNS)
    rows = []
    for comparison in comparisons:
        variant_a, knn_a = _side(comparison["a"], comparison.get("knn", "off"))
        variant_b, knn_b = _side(comparison["b"], comparison.get("knn", "off"))
        for dataset in datasets:
            pairs = [(report, reports[partner]) for (d, variant, seed, knn), report in reports.items()
                     if d == dataset and knn == knn_a and variant_a in ("*", variant)
                     for partner in [(d, variant if variant_b == "*" else variant_b, seed, knn_b)]
                     if partner in reports]
            for metric in comparison.get("metrics", ["Acc@1"]):
                values = [(value_at(a, paths[metric]), value_at(b, paths[metric])) for a, b in pairs]
                diffs = [a - b for a, b in values if a is not None and b is not None]
                rows.append({"question": comparison.get("question", ""), "dataset": dataset,
                             "a": f"{variant_a} (kNN {knn_a})", "b": f"{variant_b} (kNN {knn_b})",
                             "metric": metric, "pairs": len(diffs),
                             "a_better": int(sum(d > 0 for d in diffs)),
                             "mean": float(np.mean(diffs)) if diffs else None,
                             "std": float(np.std(diffs, ddof=1)) if len(diffs) > 1 else None})
    return rows


def comparison_table(rows: Sequence[dict]) -> str:
    """Markdown: one line per row of `compare` that has pairs, differences in
    points; the questions without any pair are named below the table."""
    lines = ["| question | dataset | a | b | metric | a − b | pairs | a better |",
             "|---|---|---|---|---|---:|---:|---:|"]
    answered = {row["question"] for row in rows if row["pairs"]}
    for row in rows:
        if not row["pairs"]:
            continue
        diff = f"{100 * row['mean']:+.1f}" + \
            (f" ± {100 * row['std']:.1f}" if row["std"] is not None else "")
        lines.append(f"| {row['question']} | {row['dataset']} | {row['a']} | {row['b']} | "
                     f"{row['metric']} | {diff} | {row['pairs']} | {row['a_better']} |")
    missing = list(dict.fromkeys(row["question"] for row in rows if row["question"] not in answered))
    if missing:
        lines += ["", "Not answered yet (no run pairs): " + "; ".join(missing) + "."]
    return "\n".join(lines) + "\n"


def plot_nil_curves(results: Sequence[dict], dataset: str, path: Path) -> Optional[Path]:
    """One PNG of NIL precision-recall curves (kNN off, every variant's lowest
    seed) for `dataset`; None when no run has a curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen: Dict[str, dict] = {}
    for result in sorted(results, key=lambda r: r["seed"]):
        curve = result.get("evaluations", {}).get("knn_off", {}).get("nil_pr_curve")
        if result["dataset"] == dataset and curve and result["variant"] not in chosen:
            chosen[result["variant"]] = {"curve": curve, "seed": result["seed"],
                                         "ap": result["evaluations"]["knn_off"]["nil"]
                                         ["average_precision"]}
    if not chosen:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 5))
    for variant, item in chosen.items():
        ax.step(item["curve"]["recall"], item["curve"]["precision"], where="post",
                label=f"{variant} (seed {item['seed']}, AP {100 * item['ap']:.1f})")
    ax.set_xlabel("NIL recall")
    ax.set_ylabel("NIL precision")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_title(f"NIL detection by score threshold (kNN off): {dataset} test")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


__all__ = ["nil_pr_curve", "summarise", "ablation_table", "compare", "comparison_table",
           "plot_nil_curves", "COLUMNS"]

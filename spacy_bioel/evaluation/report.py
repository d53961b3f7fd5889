"""Markdown tables of evaluation results."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence


def _pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _ci(metrics: Dict, key: str) -> str:
    interval = metrics.get("ci95", {}).get(key)
    return "" if not interval else f" [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"


def _recall_key(report: Dict) -> str:
    """The report's recall@k key (k is the candidate-list size of the run)."""
    keys = [key for key in report if key.startswith("recall@")]
    return keys[0] if keys else "recall@64"


def metrics_table(report: Dict, title: Optional[str] = None) -> str:
    """One evaluation report as a markdown table (rows: all / refined / seen /
    unseen / per type; percentages with 95% bootstrap intervals on Acc@1)."""
    rows: List[tuple] = [("all", report)]
    for subset in ("refined", "seen", "unseen"):
        if subset in report:
            rows.append((subset, report[subset]))
    for label, sub in report.get("by_type", {}).items():
        rows.append((f"type={label}", sub))
    lines = []
    if title:
        lines += [f"### {title}", ""]
    recall = _recall_key(report)
    lines += [f"| subset | n | Acc@1 [95% CI] | kb_id_ acc | right as NIL | Acc@5 | Acc@10 | "
              f"R@{recall[7:]} | MAP |",
              "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for name, m in rows:
        lines.append(f"| {name} | {m['n']} | {_pct(m.get('acc@1'))}{_ci(m, 'acc@1')} | "
                     f"{_pct(m.get('kb_id_acc'))} | {_pct(m.get('right_as_nil'))} | "
                     f"{_pct(m.get('acc@5'))} | {_pct(m.get('acc@10'))} | "
                     f"{_pct(m.get(recall))} | {_pct(m.get('map'))} |")
    stages = report.get("failure_stages")
    if stages:
        lines += ["", "Failure stages: " + ", ".join(f"{k} {v}" for k, v in stages.items())]
    for name, counts in (report.get("error_kinds") or {}).items():
        if counts:
            lines += ["", f"Errors by {name}: " + ", ".join(f"{k} {v}" for k, v in counts.items())]
    nil = report.get("nil")
    if nil:
        lines += ["", f"NIL: gold {nil['n_gold_nil']}, predicted {nil['n_pred_nil']}, "
                      f"P {_pct(nil['precision'])}, R {_pct(nil['recall'])}, "
                      f"F1 {_pct(nil['f1'])}, AP {_pct(nil['average_precision'])}"]
    return "\n".join(lines) + "\n"


SUMMARY_COLUMNS = ("dataset", "kb", "linker", "dictionary")


def summary_table(reports: Sequence[Dict]) -> str:
    """Many reports as one results table: one row per (dataset, linker, protocol)."""
    lines = ["| dataset | KB | linker | dictionary | n | Acc@1 [95% CI] | kb_id_ acc | right as NIL | "
             "Acc@5 | Acc@10 | R@k | MAP | refined n | refined Acc@1 | refined Acc@5 | seen Acc@1 | "
             "unseen Acc@1 | NIL F1 | NIL AP |",
             "|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in reports:
        meta = r.get("meta", {})
        refined = r.get("refined", {})
        nil = r.get("nil") or {}
        lines.append(
            f"| {meta.get('dataset', '?')} | {meta.get('kb_name', '?')} | {meta.get('linker', '?')} | "
            f"{meta.get('dictionary', '?')} | {r['n']} | {_pct(r['acc@1'])}{_ci(r, 'acc@1')} | "
            f"{_pct(r.get('kb_id_acc'))} | {_pct(r.get('right_as_nil'))} | "
            f"{_pct(r['acc@5'])} | {_pct(r['acc@10'])} | {_pct(r.get(_recall_key(r)))} | "
            f"{_pct(r['map'])} | {refined.get('n', '-')} | {_pct(refined.get('acc@1'))} | "
            f"{_pct(refined.get('acc@5'))} | {_pct(r.get('seen', {}).get('acc@1'))} | "
            f"{_pct(r.get('unseen', {}).get('acc@1'))} | {_pct(nil.get('f1'))} | "
            f"{_pct(nil.get('average_precision'))} |")
    return "\n".join(lines) + "\n"


__all__ = ["metrics_table", "summary_table"]

"""The zero-shot table of `pretrain-table`: the untrained vs the pre-trained
encoder per dataset, mean +- std over pre-training seeds, and the cost."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Dict, List, Optional


def _read(path: Path) -> Dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _mean_std(values: List[float]) -> str:
    if not values:
        return "-"
    mean = 100 * statistics.fmean(values)
    std = 100 * statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.1f} ± {std:.1f}" if len(values) > 1 else f"{mean:.1f}"


def pretrain_summary(untrained: Path, pretrained: Path,
                     encoders: Optional[Path] = None) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): {'data': per dataset and seed numbers,
    'markdown': the table}. A dataset with no pre-trained report is listed as
    not run; seeds are the sub-folders of `pretrained`."""
    base = {p.stem: _read(p) for p in sorted(Path(untrained).glob("*.json"))}
    seeds = sorted(p for p in Path(pretrained).iterdir() if p.is_dir()) \
        if Path(pretrained).is_dir() else []
    rows = []
    data: Dict[str, Any] = {"datasets": {}, "seeds": [p.name for p in seeds], "cost": []}
    for name, report in base.items():
        runs = {seed.name: _read(seed / f"{name}.json") for seed in seeds
                if (seed / f"{name}.json").exists()}
        accs = [r["acc@1"] for r in runs.values()]
        diffs = [a - report["acc@1"] for a in accs]
        meta = report.get("meta", {})
        data["datasets"][name] = {"dataset": meta.get("dataset", name), "kb": meta.get("kb_name"),
                                  "n": report["n"], "untrained_acc@1": report["acc@1"],
                                  "pretrained_acc@1": dict(zip(runs, accs))}
        difference = "-"
        if diffs:
            difference = ("+" if statistics.fmean(diffs) >= 0 else "") + _mean_std(diffs)
        rows.append(f"| {meta.get('dataset', name)} | {meta.get('kb_name', '?')} | {report['n']} | "
                    f"{100 * report['acc@1']:.1f} | {_mean_std(accs) if accs else 'not run'} | "
                    f"{difference} | {len(accs)} |")
    lines = ["| dataset | KB | n | untrained MiniLM Acc@1 | pre-trained Acc@1 | difference "
             "(points) | seeds |", "|---|---|---:|---:|---:|---:|---:|", *rows]
    if encoders is not None and Path(encoders).is_dir():
        lines += ["", "| seed | pairs | steps | epochs | seconds | names/s | device | loss "
                  "(first -> last 10%) |", "|---|---:|---:|---:|---:|---:|---|---|"]
        for folder in sorted(p for p in Path(encoders).iterdir() if p.is_dir()):
            record_path = folder / "pretraining.json"
            if not record_path.exists():
                continue
            record = _read(record_path)
            data["cost"].append({"seed": folder.name, **{k: record.get(k) for k in (
                "pairs", "steps", "epochs_done", "seconds", "names_per_s", "device")}})
            lines.append(f"| {folder.name} | {record['pairs']} | {record['steps']} | "
                         f"{record['epochs_done']:.2f} | {record['seconds']:.0f} | "
                         f"{record['names_per_s']:.0f} | {record['device']} | "
                         f"{record['loss_first_10pct']:.4f} -> {record['loss_last_10pct']:.4f} |")
    return {"data": data, "markdown": "\n".join(lines) + "\n"}


__all__ = ["pretrain_summary"]

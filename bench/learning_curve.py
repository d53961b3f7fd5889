"""Dev learning curves of `spacy train` runs (issue 46): dev Acc@1 at every
evaluation, read from the JSONL that spaCy's console logger writes
(`[training.logger] output_file`, one line per evaluation: epoch, step,
losses, scores in percent), against epochs.

A run whose JSONL was not saved is read from its console output (any other
file than .jsonl: spaCy's table rows); a GPU check run (`bench.gpu_check`) from
its gpu_check.json or markdown table. An evaluation's epoch position is its
step over the run's steps per epoch,
taken from the log itself (the first step logged in spaCy's epoch 1), so runs
with other batch sizes share the x axis.

    python -m bench learning-curve paper=training/ncbi/paper_s0/log.jsonl \
        cpu=training/ncbi/cpu_s0/log.jsonl --output metrics/ncbi/curves.json
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

logger = logging.getLogger(__name__)
SCORE = "bioel_acc@1"


def read_log(path: Path, score: str = SCORE) -> List[Dict[str, float]]:
    """Every evaluation of one run: step, spaCy's epoch, the dev score and the
    summed losses. A line that does not parse is named and skipped (counted)."""
    points, skipped = [], 0
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                points.append({"step": int(record["step"]), "epoch": int(record["epoch"]),
                               "score": float(record["scores"][score]),
                               "loss": float(sum((record.get("losses") or {}).values()))})
            except (ValueError, KeyError, TypeError) as err:
                skipped += 1
                logger.warning("%s line %d skipped: %s: %s", path, number, type(err).__name__, err)
    if skipped:
        logger.warning("%s: %d of its lines skipped", path, skipped)
    return points


def read_console(path: Path, score: str = SCORE) -> List[Dict[str, float]]:
    """Every evaluation of one run from its console output (spaCy's table: a
    header row 'E  #  LOSS ...  BIOEL_ACC@1 ...  SCORE', then one row per
    evaluation), for a run whose JSONL was not saved. Progress bars' carriage
    returns are lines; other lines are skipped."""
    text = Path(path).read_text(encoding="utf-8", errors="replace").replace("\r", "\n")
    columns: Optional[List[str]] = None
    points = []
    for line in text.splitlines():
        cells = [cell for cell in re.split(r"\s{2,}", line.strip()) if cell]
        if cells[:2] == ["E", "#"]:
            columns = [cell.lower() for cell in cells]
            continue
        if columns is None or len(cells) != len(columns) or not cells[0].isdigit():
            continue
        row = dict(zip(columns, cells))
        try:
            points.append({"step": int(row["#"]), "epoch": int(row["e"]), "score": float(row[score]),
                           "loss": sum(float(v) for k, v in row.items() if k.startswith("loss"))})
        except (KeyError, ValueError):
            continue
    if columns is None:
        logger.warning("%s: no table header (E  #  ...) found", path)
    return points


_GPU_ROW = re.compile(r"^\|\s*(untrained[^|]*|epoch (\d+) \((\d+) steps\))\s*\|[^|]*\|\s*([0-9.]+)\s*\|")


def read_gpu_check(path: Path) -> List[Dict[str, float]]:
    """Dev Acc@1 per epoch of a GPU check run (`bench.gpu_check`): its
    gpu_check.json, or its markdown table (`| untrained | ... |`, `| epoch N (S
    steps) | ... |`), as percent, with the untrained encoder at step 0. Steps
    add up over epochs, so `steps_per_epoch` reads the run's own."""
    path = Path(path)
    points: List[Dict[str, float]] = []
    if path.suffix == ".json":
        report = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(report, dict) or "training" not in report or "before_training" not in report:
            raise ValueError(f"{path}: not a GPU check report (gpu_check.json: 'before_training' "
                             "and 'training'); pass spaCy's log as a .jsonl file")
        points.append({"step": 0, "epoch": 0, "loss": 0.0,
                       "score": 100 * float(report["before_training"]["dev"]["acc@1"])})
        step = 0
        for record in report["training"]["epochs"]:
            step += int(record["steps"])
            points.append({"step": step, "epoch": int(record["epoch"]),
                           "score": 100 * float(record["dev"]["acc@1"]),
                           "loss": float(record.get("mean_loss") or 0.0)})
        return points
    step = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _GPU_ROW.match(line.strip())
        if not match:
            continue
        if match.group(2):
            step += int(match.group(3))
            points.append({"step": step, "epoch": int(match.group(2)), "loss": 0.0,
                           "score": 100 * float(match.group(4))})
        else:
            points.append({"step": 0, "epoch": 0, "loss": 0.0, "score": 100 * float(match.group(4))})
    if not points:
        logger.warning("%s: no GPU check table rows (| epoch N (S steps) | ...) found", path)
    return points


def read_run(path: Path, score: str = SCORE) -> List[Dict[str, float]]:
    """A run's evaluations from whichever file it left: spaCy's JSONL, a GPU
    check's JSON or markdown (Acc@1 only), or spaCy's console output."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return read_log(path, score)
    if path.suffix == ".json" or (path.suffix == ".md" and "| stage |" in path.read_text(
            encoding="utf-8", errors="replace")):
        if score != SCORE:
            logger.warning("%s: a GPU check records dev Acc@1 only, not %s", path, score)
        return read_gpu_check(path)
    return read_console(path, score)


def steps_per_epoch(points: Sequence[Dict[str, float]]) -> Optional[float]:
    """Steps per epoch as the log shows it: an evaluation at `step` after
    `epoch` whole epochs bounds it by step / epoch; the tightest bound is taken
    (exact when an evaluation falls on an epoch's end, as with eval_frequency
    = one epoch's steps). None: the run never finished an epoch."""
    bounds = [p["step"] / p["epoch"] for p in points if p["epoch"] >= 1]
    return min(bounds) if bounds else None


def curve(points: Sequence[Dict[str, float]], per_epoch: Optional[float] = None
          ) -> List[Tuple[float, float]]:
    """(epochs done, dev score) per evaluation (`per_epoch` steps an epoch, else
    read from the log); epochs are steps when unknown."""
    per_epoch = per_epoch or steps_per_epoch(points)
    return [(p["step"] / per_epoch if per_epoch else float(p["step"]), p["score"]) for p in points]


def summarize(runs: Dict[str, Path], score: str = SCORE,
              epoch_steps: Optional[Dict[str, float]] = None) -> Dict[str, object]:
    """Per run: its evaluations, steps per epoch (given in `epoch_steps`, else
    read from the log), the best dev score and where."""
    out: Dict[str, object] = {"score": score, "runs": {}}
    for label, path in runs.items():
        points = read_run(path, score)
        best = max(points, key=lambda p: p["score"]) if points else None
        per_epoch = (epoch_steps or {}).get(label) or steps_per_epoch(points)
        out["runs"][label] = {
            "log": str(path), "evaluations": points, "steps_per_epoch": per_epoch,
            "curve": curve(points, per_epoch), "best": best}
    return out


def markdown(summary: Dict[str, object]) -> str:
    """One row per run: evaluations, steps per epoch, best dev score, its step and epoch."""
    lines = [f"| run | evaluations | steps / epoch | best dev {summary['score']} | at step | at epoch |",
             "|---|---:|---:|---:|---:|---:|"]
    for label, run in summary["runs"].items():
        best = run["best"]
        per_epoch = run["steps_per_epoch"]
        score = "-" if best is None else f"{best['score']:.2f}"
        step = "-" if best is None else str(best["step"])
        epoch = "-" if best is None or not per_epoch else f"{best['step'] / per_epoch:.1f}"
        shown = "-" if not per_epoch else f"{per_epoch:g}"
        lines.append(f"| {label} | {len(run['evaluations'])} | {shown} | {score} | "
                     f"{step} | {epoch} |")
    return "\n".join(lines) + "\n"


def plot(summary: Dict[str, object], path: Path) -> None:
    """The curves as a PNG (needs matplotlib, the `plots` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for label, run in summary["runs"].items():
        if run["curve"]:
            xs, ys = zip(*run["curve"])
            axis.plot(xs, ys, marker="o", markersize=3, label=label)
    axis.set_xlabel("epochs" if any(r["steps_per_epoch"] for r in summary["runs"].values()) else "steps")
    axis.set_ylabel(f"dev {summary['score']} (%)")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


__all__ = ["read_log", "read_console", "read_gpu_check", "read_run", "steps_per_epoch", "curve", "summarize", "markdown", "plot"]

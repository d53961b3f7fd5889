"""The final fit of the anchors' protocol (issue 46): the encoder trained again
on train + dev, as long as the dev-chosen run trained, keeping the settings
`tune` chose on dev for that run.

BioSyn (Sung et al. 2020) and kNN-BioEL report test after training on train +
dev; our dev-chosen run (`model-best`, then `tune`) saw train only. How long
to train is what dev chose: the step of the run's best evaluation, scaled by
how many more documents train + dev hold, so the epochs are the same. Dev can
no longer measure the result; evaluate it on test.
"""
from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from spacy.tokens import DocBin

from ..errors import BioELError, Errors
from ..training.readers import docbin_files

logger = logging.getLogger(__name__)


def best_step(log: Path) -> int:
    """The step of the evaluation spaCy saved as model-best: the first with the
    highest score, in an evaluation log (JSONL rows with 'step' and 'score')."""
    try:
        rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as err:
        raise BioELError(Errors.E243.format(path=log, problem=f"it cannot be read ({err})")) from err
    rows = [row for row in rows if isinstance(row, dict) and isinstance(row.get("score"), (int, float))
            and isinstance(row.get("step"), int)]
    if not rows:
        raise BioELError(Errors.E243.format(path=log, problem="it holds no scored evaluation"))
    best = max(row["score"] for row in rows)
    return next(row["step"] for row in rows if row["score"] == best)


def scaled_steps(step: int, train: Sequence[Path], data: Sequence[Path]) -> int:
    """`step` on `train`'s documents, as many epochs on `data`'s (at least 1).
    Each path is a DocBin or a folder of them (E008 when there is none)."""
    sizes = {path: sum(len(DocBin().from_disk(f)) for f in docbin_files(path)) for path in {*train, *data}}
    count = lambda paths: sum(sizes[path] for path in paths)  # noqa: E731  (each path read once)
    return max(1, round(step * count(data) / max(count(train), 1)))


def copy_tuning(source: Any, target: Any, names: Dict[str, str]) -> Dict[str, Dict[str, Any]]:
    """Set `source` linker's tuned stage parameters (ranker, NIL stage,
    candidates, shortcut: `serialize.STAGES`) on `target`. RETURNS: what was set."""
    from .serialize import STAGES

    copied = {}
    for stage in STAGES:
        mine, theirs = getattr(source, stage, None), getattr(target, stage, None)
        if mine is None and theirs is None:
            continue
        if type(mine) is not type(theirs):
            raise BioELError(Errors.E244.format(source=names["source"], target=names["target"], stage=stage,
                                                found=type(theirs).__name__, expected=type(mine).__name__))
        if hasattr(mine, "get_params"):
            copied[stage] = mine.get_params()
            theirs.set_params(**copied[stage])
    target.model_changed()
    return copied


def retrain(config: Path, tuned: Path, output: Path, train: Sequence[Path], dev: Path,
            steps: int, overrides: Optional[Dict[str, Any]] = None, use_gpu: int = -1) -> Dict[str, Any]:
    """Train `config` on `train` + `dev` (DocBins or folders of them) for `steps`
    steps (spaCy's `train`, evaluated once, at the start), give the last model
    `tuned`'s settings and save it at `output`. RETURNS: the settings kept."""
    import spacy
    from spacy.cli.train import train as spacy_train

    from .loading import find_linker, load_pipeline

    source = find_linker(load_pipeline(tuned), None)  # before training: a wrong path costs no run
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"  # the reader reads a folder's DocBins in order
        data.mkdir()
        for i, path in enumerate(f for p in [*train, dev] for f in docbin_files(p)):
            shutil.copyfile(path, data / f"{i:03d}-{path.name}")
        spacy_train(config, Path(folder) / "training", use_gpu=use_gpu, overrides={
            **(overrides or {}), "paths.train": str(data), "paths.dev": str(dev),
            "training.max_steps": steps, "training.max_epochs": 0, "training.eval_frequency": steps + 1})
        nlp = spacy.load(Path(folder) / "training" / "model-last")
    copied = copy_tuning(source, find_linker(nlp, None),
                         {"source": str(tuned), "target": f"{config} trained on train + dev"})
    logger.info("Settings of %s kept: %s", tuned, copied)
    output.parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output)
    return copied


__all__ = ["best_step", "scaled_steps", "copy_tuning", "retrain"]

"""`retrain`: the final fit of the anchors' protocol, the encoder trained again on
train + dev with the settings `tune` chose on dev (issue 46)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._app import app, setup_logging


@app.command("retrain", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def retrain(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., help="The config the tuned run trained with, e.g. configs/linker_cpu.cfg"),
    tuned: Path = typer.Argument(..., help="The tuned pipeline (model-tuned): its settings are kept"),
    output: Path = typer.Argument(..., help="Where to save the retrained pipeline, e.g. training/ncbi/linker/model-retrained"),
    train: Path = typer.Option(..., "--train", help="The DocBin (or a folder of them) the tuned run trained on"),
    dev: Path = typer.Option(..., "--dev", help="The DocBin (or a folder of them) it was tuned on: now trained on too"),
    log: Optional[Path] = typer.Option(None, "--log", help="The tuned run's evaluation log (log.jsonl): "
                                       "its best step, scaled to train + dev, sets how long to train"),
    steps: Optional[int] = typer.Option(None, "--steps", min=1, help="Steps on train + dev, instead of --log"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU id, or -1 for CPU"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Train CONFIG again on TRAIN + DEV for as many epochs as the dev-chosen run
    (its best evaluation in --log), then give the last model TUNED's settings
    (kNN interpolation, NIL stage, shortcut): what BioSyn and kNN-BioEL report
    test with. Overrides as in spacy train (--paths.kb KB --system.seed N).
    Evaluate OUTPUT on test only: dev trained it."""
    from spacy.cli._util import parse_config_overrides

    from ..errors import BioELError, Errors
    from ..pipeline.retrain import best_step, retrain as run, scaled_steps

    setup_logging(verbose)
    if steps is None:
        if log is None:
            raise BioELError(Errors.E243.format(path=tuned, problem="neither --log nor --steps was given"))
        best = best_step(log)
        steps = scaled_steps(best, [train], [train, dev])
        typer.echo(f"{log}: best evaluation at step {best}; {steps} steps on train + dev")
    run(config_path, tuned, output, [train], dev, steps, parse_config_overrides(ctx.args), gpu_id)
    typer.echo(f"Saved {output}: trained on {train} + {dev} for {steps} steps, with the settings of {tuned}")

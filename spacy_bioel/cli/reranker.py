"""`tune-reranker`: choose a bioel_reranker's linker weight, margin gate, NIL
threshold and use of its learned "no concept" option on dev, exactly as it
predicts."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer

from ._app import app, load_pipeline, read_docs, save_tuning, setup_logging, split_csv

logger = logging.getLogger(__name__)


def _optional_floats(value: str):
    return [None if v.lower() in ("none", "null") else float(v) for v in split_csv(value)]


@app.command("tune-reranker")
def tune_reranker_command(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a bioel_reranker after its linker"),
    dev: Path = typer.Argument(..., help="DEV DocBin (never the test set)"),
    output: Path = typer.Option(Path("reranker_tuning.json"), "--output", help="Grid results (JSON, .md beside)"),
    weights: str = typer.Option("0,0.25,0.5,1,2", "--linker-weight", help="Weights of the linker's log-probability to try"),
    gates: str = typer.Option("none,0,0.02,0.05,0.1,0.2,0.3,0.5", "--gate", help="Margin gates to try ('none': rerank all; 0: rerank nothing)"),
    thresholds: str = typer.Option("", "--nil-threshold", help="NIL thresholds to try (default: none, plus 0.1-0.9 when dev has gold NIL)"),
    write: bool = typer.Option(True, "--write/--no-write", help="Save the tuned pipeline (nlp.to_disk)"),
    save_to: Optional[Path] = typer.Option(None, "--save-to", help="Where to save (default: in place)"),
    name: str = typer.Option("bioel_reranker", "--component", help="Reranker name"),
    limit: int = typer.Option(0, "--limit", help="Tune on the first N dev docs (0: all); every dev pair costs a cross-encoder pass"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Score every dev mention's candidates once, replay the reranker's decision
    over the grid, keep the most accurate setting (the one reranking the fewest
    mentions among ties) and save the pipeline."""
    from ..errors import BioELError, Errors
    from ..reranker.component import BioELReranker
    from ..reranker.tuning import tune_reranker

    setup_logging(verbose)
    nlp = load_pipeline(pipeline)
    if name not in nlp.pipe_names or not isinstance(nlp.get_pipe(name), BioELReranker):
        raise BioELError(Errors.E188.format(name=name, names=nlp.pipe_names))
    docs = read_docs([dev])
    if limit > 0:
        logger.info("Tuning on the first %d of %d dev docs (--limit)", min(limit, len(docs)), len(docs))
        docs = docs[:limit]
    result = tune_reranker(nlp, nlp.get_pipe(name), docs,
                           [float(v) for v in split_csv(weights)], _optional_floats(gates),
                           _optional_floats(thresholds) if thresholds else None)
    result["dev"] = str(dev)
    result["dev_docs"] = len(docs)
    lines = ["| linker_weight | gate | nil_threshold | NIL option | dev accuracy | reranked |",
             "|---:|---:|---:|---|---:|---:|"]
    for row in sorted(result["grid"], key=lambda r: (-r["accuracy"], r["reranked"]))[:15]:
        lines.append(f"| {row['linker_weight']} | {row['gate']} | {row['nil_threshold']} | "
                     f"{'used' if row['use_nil_option'] else 'ignored'} | "
                     f"{100 * row['accuracy']:.1f} | {100 * row['reranked']:.1f}% |")
    lines.append(f"\nbest: {result['best']}; best ungated: {result['best_ungated']}; "
                 f"the linker alone: {100 * result['linker_accuracy']:.1f}")
    save_tuning(nlp, pipeline, save_to, write, output, result, lines)

"""`add-ner PIPELINE OUTPUT`: a trained linker's pipeline that reads plain text."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._app import app, setup_logging

COMMAND = "add-ner"


@app.command(COMMAND)
def add_ner(
    pipeline: Path = typer.Argument(..., help="A saved pipeline whose bioel_linker links given mentions (e.g. training/ncbi/linker/model-final)"),
    output: Path = typer.Argument(..., help="Where to save the pipeline that reads plain text (a new or empty folder, or an earlier add-ner output)"),
    ner: str = typer.Option("shipped", "--ner", help="shipped (the package's disease NER, the default pipeline's) or a trained NER pipeline's folder or package"),
    name: Optional[str] = typer.Option(None, "--component", help="The linker to put it before (default: the first)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Put an NER before a trained linker, so that its pipeline finds the mentions
    in plain text and links them: the shipped disease NER by default (what the
    default pipeline reads with), or another trained NER pipeline (every component
    of it, in its order), then the document consistency of its mentions
    (abbreviations and their long forms). The linker, its KB, index and datastore
    are saved as they are; PIPELINE itself is not changed."""
    from ..outputs import Protected, claim_folder, working_directory
    from ..pipeline.embedded_default import load_ner_source, with_ner
    from ..pipeline.loading import find_linker, load_pipeline, locate_pipeline

    setup_logging(verbose)
    locate_pipeline(pipeline)
    protected = [Protected("the pipeline", pipeline, inside=True), working_directory()]
    if ner != "shipped" and Path(ner).exists():
        protected.append(Protected("the NER pipeline", Path(ner), inside=True))
    nlp = load_pipeline(pipeline)
    linker = find_linker(nlp, name).name
    nlp = with_ner(nlp, load_ner_source(ner, nlp.vocab), linker)  # E259, E260 before any write
    claim_folder(output, COMMAND, protected)
    nlp.to_disk(output)
    typer.echo(f"{' -> '.join(nlp.pipe_names)}: the {'shipped NER' if ner == 'shipped' else ner} "
               f"before {linker} of {pipeline}; saved to {output}")

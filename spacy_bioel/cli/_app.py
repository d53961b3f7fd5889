"""The Typer application and shared CLI helpers."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, List

import srsly
import typer


app = typer.Typer(name="spacy_bioel", add_completion=False, no_args_is_help=True,
                  help="spacy-bioel: knowledge bases, corpora, baselines and evaluation.")
kb_app = typer.Typer(no_args_is_help=True, help="Build and inspect knowledge bases.")
app.add_typer(kb_app, name="kb")


class _CurrentStderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record is emitted (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):  # type: ignore[override]
        import sys
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def setup_logging(verbose: bool = False) -> None:
    """Log spacy-bioel's own messages (INFO, or DEBUG with --verbose) to stderr;
    other libraries keep their own settings."""
    package = logging.getLogger("spacy_bioel")
    package.setLevel(logging.DEBUG if verbose else logging.INFO)
    if not package.handlers:
        handler = _CurrentStderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        package.addHandler(handler)


def split_csv(value: str) -> List[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    srsly.write_json(path, data)


def load_pipeline(path: Path):
    """A saved pipeline (E174 for one saved before linking stages; see pipeline.loading)."""
    from ..pipeline.loading import load_pipeline as load

    return load(path)


def read_docs(paths: List[Path]):
    """Docs of one or more .spacy files (a shared blank vocab)."""
    import spacy
    from spacy.tokens import DocBin

    from ..errors import BioELError, Errors

    nlp = spacy.blank("en")
    docs = []
    for path in paths:
        if not Path(path).exists():
            raise BioELError(Errors.E008.format(path=path))
        docs.extend(DocBin().from_disk(path).get_docs(nlp.vocab))
    return docs

"""The Typer application and shared CLI helpers."""
from __future__ import annotations

import logging
import zlib
from pathlib import Path
from typing import Any, List, Optional

import srsly
import typer


app = typer.Typer(name="spacy_bioel", add_completion=False, no_args_is_help=True,
                  rich_markup_mode=None,  # help texts hold [brackets]: print them as written
                  help="spacy-bioel: biomedical entity linking for spaCy. Link mentions to a "
                       "knowledge base (link, link-corpus, visualize), build KBs (kb) and corpora "
                       "(convert, prepare), tune, evaluate, package and maintain trained pipelines. "
                       "Training itself is 'python -m spacy train CONFIG' or 'spacy project run "
                       "train'; the lab's measurements are 'python -m bench' in a checkout.")
kb_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Build and inspect knowledge bases.")
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


# the name that stands for the default pipeline (the shipped NER and the untrained linker)
# where a command takes a pipeline: `link --linker`, `link-corpus PIPELINE`, `visualize PIPELINE`
DEFAULT_PIPELINE = "bioel"


def resolve_pipeline(name: str, kb: Optional[str], command: str) -> str:
    """PIPELINE as `command` takes it: DEFAULT_PIPELINE is the default pipeline's
    cache entry (over `kb`, else the embedded DOID; built on its first use:
    `embedded_default.default_pipeline_folder`); any other name a saved pipeline
    or an installed package (E247), for which `kb` is E262."""
    from ..errors import BioELError, Errors

    if name == DEFAULT_PIPELINE:
        from ..pipeline.embedded_default import default_pipeline_folder

        return str(default_pipeline_folder(**({"kb": kb} if kb else {}), command=command))
    if kb is not None:
        raise BioELError(Errors.E262.format(option="--kb", pipeline=name))
    from ..pipeline.loading import locate_pipeline

    return locate_pipeline(name)


def setup_logging(verbose: bool = False) -> None:
    """Log spacy-bioel's own messages (INFO, or DEBUG with --verbose) to stderr;
    other libraries keep their own settings."""
    package = logging.getLogger("spacy_bioel")
    package.setLevel(logging.DEBUG if verbose else logging.INFO)
    if not package.handlers:
        handler = _CurrentStderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        package.addHandler(handler)


def main(argv: Optional[List[str]] = None) -> None:
    """Run the CLI (`python -m spacy_bioel`, the `spacy-bioel` script). A coded
    error, or an OS error on a file the user named (E253), prints as one coded
    line on stderr with exit code 1; `--verbose` / `-V` shows the traceback as well.
    Anything else is a bug and keeps its traceback."""
    run_app(app, argv, "python -m spacy_bioel")


def run_app(typer_app: typer.Typer, argv: Optional[List[str]], prog_name: str) -> None:
    """Run `typer_app` with `main`'s error handling (the lab's CLI shares it)."""
    import sys

    from confection import ConfigValidationError

    from ..errors import BioELError, Errors

    args = sys.argv[1:] if argv is None else list(argv)
    try:
        typer_app(args=args, prog_name=prog_name)
    except (BioELError, OSError, ConfigValidationError) as err:
        if "--verbose" in args or "-V" in args:
            raise
        message = (str(err) if isinstance(err, BioELError) else
                   Errors.E239.format(problem=config_problem(err))
                   if isinstance(err, ConfigValidationError) else
                   Errors.E253.format(problem=f"{type(err).__name__}: {err}"))
        typer.echo(f"Error: {message}\n(run with --verbose for the traceback)", err=True)
        sys.exit(1)


def config_problem(err) -> str:
    """A config validation error's findings on one line ('block.setting: message; ...')."""
    found = ["{}: {}".format(".".join(str(p) for p in e.get("loc", ())), e.get("msg", ""))
             for e in (getattr(err, "errors", None) or [])]
    title = getattr(err, "title", None) or ""
    return "; ".join(found)[:600] or " ".join(str(title or err).split())[:600]


def split_csv(value: str) -> List[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    srsly.write_json(path, data)


def save_tuning(nlp, pipeline: Path, save_to: Optional[Path], write: bool, output: Path,
                result: Any, lines: List[str]) -> None:
    """The end of a tuning command: save the tuned pipeline (in place unless
    `save_to`) when `write`, the result as JSON and `lines` as the .md beside it."""
    if write:
        nlp.to_disk(save_to or pipeline)
    write_json(output, result)
    output.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    typer.echo("\n".join(lines))


def load_pipeline(path: Path):
    """A saved pipeline (see pipeline.loading)."""
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
        if not Path(path).is_file():
            raise BioELError(Errors.E008.format(path=path))
        try:
            docs.extend(DocBin().from_disk(path).get_docs(nlp.vocab))
        except (ValueError, KeyError, TypeError, IndexError, zlib.error) as err:
            raise BioELError(Errors.E059.format(path=path, problem=f"{type(err).__name__}: "
                                                                   f"{str(err)[:200]}"))
    return docs

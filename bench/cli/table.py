"""`table METRICS... --output RESULTS.md`: one results table from many reports;
`learning-curve LABEL=LOG.jsonl...`: dev curves of training runs."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import srsly
import typer

from ._app import app, labelled, setup_logging, write_report


@app.command("table")
def table(
    reports: List[Path] = typer.Argument(..., help="Metrics JSON files written by `evaluate`"),
    output: Optional[Path] = typer.Option(None, "--output", help="Markdown file to write"),
    title: str = typer.Option("", "--title"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Collect evaluation reports into one markdown table."""
    setup_logging(verbose)
    from spacy_bioel.evaluation.report import summary_table

    loaded = [srsly.read_json(p) for p in reports if p.exists()]
    missing = [str(p) for p in reports if not p.exists()]
    text = (f"## {title}\n\n" if title else "") + summary_table(loaded)
    if missing:
        text += f"\nMissing reports (not run): {', '.join(missing)}\n"
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    typer.echo(text)


@app.command("seeds-table")
def seeds_table_command(
    rows: List[str] = typer.Option(..., "--row", help="NAME=GLOB: one system's evaluate reports, one per seed (seed from the file name ..._s<N>.json), repeatable"),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="A --row NAME: differences paired by seed against it"),
    output: Path = typer.Option(..., "--output", help="Markdown table (JSON beside it)"),
    title: str = typer.Option("", "--title"),
    kind: str = typer.Option("evaluate", "--kind", help="evaluate: `spacy_bioel evaluate` reports (Acc@k); e2e: `bench e2e` reports (NER, mention and document F1)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Mean +- std over seeds per system (Acc@1, Acc@10, R@64, seen, unseen,
    refined; or with --kind e2e the end-to-end F1s) and, with --baseline,
    per-seed paired differences."""
    import glob

    from spacy_bioel.errors import BioELError, Errors
    from ..seeds import KINDS, PAIRED, seed_of, seeds_table, summarise
    from ._app import write_json

    setup_logging(verbose)
    if kind not in KINDS:
        raise BioELError(Errors.E175.format(name="--kind", value=kind, expected=" or ".join(KINDS)))
    systems = {}
    for spec in rows:
        name, _, pattern = spec.partition("=")
        paths = sorted(Path(p) for p in glob.glob(pattern)) if name and pattern else []
        if not paths:
            raise BioELError(Errors.E175.format(name="--row", value=spec,
                                                expected="NAME=GLOB matching evaluate reports"))
        systems[name] = {seed_of(p, report): report
                         for p, report in ((p, srsly.read_json(p)) for p in paths)}
    summary = summarise(systems, baseline, KINDS[kind])
    text = (f"## {title}\n\n" if title else "") + seeds_table(summary, baseline, KINDS[kind], PAIRED[kind])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    write_json(output.with_suffix(".json"), {"rows": summary, "baseline": baseline})
    typer.echo(text)


@app.command("learning-curve")
def learning_curve(
    runs: List[str] = typer.Argument(..., help="LABEL=LOG per run: the JSONL of spaCy's console logger ([training.logger] output_file), or a saved console output of `spacy train` (its table)"),
    output: Path = typer.Option(Path("metrics/learning_curve.json"), "--output", help="JSON (a .md table and a .png figure are written beside it)"),
    score: str = typer.Option("bioel_acc@1", "--score", help="The dev score drawn"),
    epoch_steps: List[str] = typer.Option([], "--epoch-steps", help="LABEL=N: that run's steps per epoch (default: read from its log)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Dev score per epoch of `spacy train` runs, on one figure (issue 46)."""
    setup_logging(verbose)
    from ..learning_curve import markdown, plot, summarize

    pairs = {label: Path(path) for label, path in labelled(runs, "LOG.jsonl", "RUNS").items()}
    for path in pairs.values():
        if not path.is_file():
            raise typer.BadParameter(f"{path}: no such log (train with [training.logger] output_file, "
                                     "or save the console)", param_hint="RUNS")
    try:
        steps = {label: float(n) for label, n in labelled(epoch_steps, "N", "--epoch-steps").items()}
    except ValueError as err:
        raise typer.BadParameter(f"{epoch_steps}: give LABEL=N, N a number ({err})",
                                 param_hint="--epoch-steps")
    summary = summarize(pairs, score, steps)
    plot(summary, output.with_suffix(".png"))
    write_report(output, summary, markdown(summary))


@app.command("expect-table")
def expect_table_command(
    readme: Path = typer.Option(Path("README.md"), "--readme", help="The README whose What to expect block is written"),
    check: bool = typer.Option(False, "--check", help="Only check that the block is the one the files give (exit 1 if not)"),
) -> None:
    """The README's "What to expect" table (issue 75), from the result files of
    the benchmark and accuracy commands (`bench.expect.SOURCES`)."""
    from ..expect import readme_block, table, write_readme

    root = readme.resolve().parent
    if check:
        if readme_block(readme.read_text(encoding="utf-8")) != table(root):
            typer.echo(f"{readme}: the What to expect table is not the one the result files give; "
                       "run python -m bench expect-table")
            raise typer.Exit(1)
        typer.echo(f"{readme}: up to date")
        return
    typer.echo(f"{readme}: {'written' if write_readme(readme, root) else 'already up to date'}")

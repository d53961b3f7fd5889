"""`table METRICS... --output RESULTS.md`: one results table from many reports."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import srsly
import typer

from ._app import app, setup_logging


@app.command("table")
def table(
    reports: List[Path] = typer.Argument(..., help="Metrics JSON files written by `evaluate`"),
    output: Optional[Path] = typer.Option(None, "--output", help="Markdown file to write"),
    title: str = typer.Option("", "--title"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Collect evaluation reports into one markdown table."""
    setup_logging(verbose)
    from ..evaluation.report import summary_table

    loaded = [srsly.read_json(p) for p in reports if p.exists()]
    missing = [str(p) for p in reports if not p.exists()]
    text = (f"## {title}\n\n" if title else "") + summary_table(loaded)
    if missing:
        text += f"\nMissing reports (not run): {', '.join(missing)}\n"
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    typer.echo(text)

"""`stats`: dataset statistics per split."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ._app import app, setup_logging, read_docs, write_json


@app.command("stats")
def stats(
    splits: List[Path] = typer.Argument(..., help="Split files NAME.spacy (train first; names from file stems)"),
    kb_path: Optional[Path] = typer.Option(None, "--kb", help="KB for the coverage column"),
    title: str = typer.Option("", "--title", help="Dataset name for the table"),
    output: Optional[Path] = typer.Option(None, "--output", help="JSON output (a .md table is written beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Print documents, mentions, unique concepts, unseen-in-train shares and KB coverage."""
    setup_logging(verbose)
    from spacy_bioel.corpora.stats import corpus_statistics, statistics_table
    from spacy_bioel.kb.knowledge_base import KnowledgeBase

    kb = KnowledgeBase.from_disk(kb_path) if kb_path else None
    by_split = {p.name.split(".")[0]: read_docs([p]) for p in splits}
    result = corpus_statistics(by_split, kb)
    table = statistics_table(result, title)
    typer.echo(table)
    if output:
        write_json(output, {"title": title, "kb": kb.name if kb else None, "splits": result})
        output.with_suffix(".md").write_text(table, encoding="utf-8")


@app.command("code-size")
def code_size_command(
    roots: List[str] = typer.Argument(..., help="LABEL=CHECKOUT of each checkout to measure (e.g. before=/tmp/base now=.)"),
    output: Optional[Path] = typer.Option(None, "--output", help="JSON output (a .md table is written beside it)"),
) -> None:
    """What a newcomer reads (issue 75): library lines, factory arguments, settings,
    project.yml, private lab imports, the longest results summary row, per checkout."""
    from ..code_size import code_size, code_size_table

    reports = {}
    for item in roots:
        label, _, root = item.rpartition("=")
        reports[label or root] = code_size(Path(root))
    table = code_size_table(reports)
    typer.echo(table)
    if output:
        write_json(output, reports)
        output.with_suffix(".md").write_text(table, encoding="utf-8")

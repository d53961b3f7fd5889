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

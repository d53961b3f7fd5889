"""`benchmark PIPELINE DATA.spacy`: pipeline load time, linking throughput and
peak memory, written as JSON and a markdown table (never a timed test)."""
from __future__ import annotations

import resource
import time
from pathlib import Path

import typer

from ._app import app, setup_logging, load_pipeline, read_docs, write_json


@app.command("benchmark")
def benchmark(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a linker"),
    data: Path = typer.Argument(..., help="DocBin with gold spans"),
    output: Path = typer.Option(Path("benchmark.json"), "--output", help="JSON (a .md beside it)"),
    batch_size: int = typer.Option(64, "--batch-size"),
    repeats: int = typer.Option(1, "--repeats", help="Linking passes over the data"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Measure load time, mentions per second (gold spans given) and peak RSS."""
    setup_logging(verbose)
    from ..training.readers import gold_spans_doc

    start = time.perf_counter()
    nlp = load_pipeline(pipeline)
    load_seconds = time.perf_counter() - start
    references = read_docs([data])
    inputs = [gold_spans_doc(nlp, d) for d in references]
    n_mentions = sum(len(d.ents) for d in inputs)
    list(nlp.pipe([d.copy() for d in inputs[:2]]))  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        for _doc in nlp.pipe([d.copy() for d in inputs], batch_size=batch_size):
            pass
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"pipeline": str(pipeline), "data": str(data), "docs": len(inputs),
              "mentions": n_mentions, "repeats": repeats, "load_seconds": round(load_seconds, 2),
              "link_seconds": round(seconds, 2),
              "mentions_per_second": round(n_mentions * repeats / seconds, 1),
              "peak_rss_mb": round(peak_mb, 1)}
    write_json(output, result)
    table = ("| pipeline | mentions | load (s) | mentions/s | peak RSS (MB) |\n|---|---:|---:|---:|---:|\n"
             f"| {pipeline} | {n_mentions} | {result['load_seconds']} | "
             f"{result['mentions_per_second']} | {result['peak_rss_mb']} |\n")
    output.with_suffix(".md").write_text(table, encoding="utf-8")
    typer.echo(table)

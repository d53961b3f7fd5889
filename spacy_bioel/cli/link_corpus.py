"""`link-corpus PIPELINE INPUT OUTPUT`: link a sharded corpus, here or on Ray."""
from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import List, Optional

import typer

from ._app import app, setup_logging, write_json

logger = logging.getLogger(__name__)


@app.command("link-corpus")
def link_corpus(
    pipeline: str = typer.Argument(..., help="A saved pipeline with a bioel_linker (or an installed package name)"),
    input_path: str = typer.Argument(..., help="A shard file, a folder of shards or a glob: JSONL, PubTator, DocBin"),
    output_dir: Path = typer.Argument(..., help="An empty folder for the part-*.jsonl files"),
    engine: str = typer.Option("local", "--engine", help="local (this process) | ray (an actor pool on Ray Data)"),
    num_workers: int = typer.Option(2, "--num-workers", help="ray: actors, each loading the pipeline once"),
    threads: int = typer.Option(1, "--threads", help="Threads per worker (torch, BLAS, FAISS); 0: leave as is"),
    batch_docs: int = typer.Option(256, "--batch-docs", help="Documents per batch and part file"),
    top: int = typer.Option(5, "--top", help="Candidates kept per mention"),
    chunk_mb: float = typer.Option(8.0, "--chunk-mb", help="ray: read tasks of this many MB per uncompressed JSONL shard (0: one per shard)"),
    address: Optional[str] = typer.Option(None, "--address", help="ray: a running cluster ('auto', HOST:PORT); default: a local one"),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Count input and output documents by id (a second read of the input)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Remove part files already in OUTPUT first"),
    report: Optional[Path] = typer.Option(None, "--report", help="Counts and timing as JSON"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Link every document of INPUT's shards with PIPELINE and write OUTPUT/part-*.jsonl
    (per document: id, text and each mention's concept id or NIL, probability, NIL
    score and top candidates). Mentions come from the shards (JSONL "entities",
    PubTator annotations, DocBin ents) or, where a JSONL line has no "entities", from
    the pipeline's own NER. --engine ray runs an actor pool that survives killed
    workers; with --verify the output is checked to hold every input document once."""
    from ..corpus_linking.records import compare_ids, iter_shard, list_shards, read_outputs
    from ..errors import BioELError, Errors

    setup_logging(verbose)
    if engine not in ("local", "ray"):
        raise BioELError(Errors.E175.format(name="--engine", value=repr(engine),
                                            expected="'local' or 'ray'"))
    shards = list_shards([input_path])
    old = sorted(output_dir.glob("part-*.jsonl")) if output_dir.is_dir() else []
    if old and not overwrite:
        raise BioELError(Errors.E205.format(output=output_dir, n=len(old)))
    for part in old:
        part.unlink()
    logger.info("Linking %d shard(s) with %s on the %s engine", len(shards), pipeline, engine)
    if engine == "local":
        from ..corpus_linking.local import link_local

        result = link_local(shards, pipeline, output_dir, batch_docs=batch_docs, top=top,
                            threads=threads)
    else:
        from ..corpus_linking.ray_engine import link_ray

        result = link_ray(shards, pipeline, output_dir, num_workers=num_workers,
                          batch_docs=batch_docs, top=top, threads_per_worker=max(1, threads),
                          address=address, chunk_bytes=int(chunk_mb * 2 ** 20))
    result.update(shards=len(shards), pipeline=pipeline, output=str(output_dir))
    result["docs_per_second"] = round(result["documents"] / max(result["seconds"], 1e-9), 1)
    if verify:
        inputs = Counter(r["id"] for shard in shards for r in iter_shard(shard))
        outputs = Counter(r["id"] for r in read_outputs(output_dir))
        result["verify"] = compare_ids(inputs, outputs)
    if report:
        write_json(report, result)
    typer.echo(f"{result['documents']:,} documents, {result['mentions']:,} mentions in "
               f"{result['parts']} part file(s), {result['seconds']} s "
               f"({result['docs_per_second']} docs/s, {engine}, {result['workers']} worker(s))")
    if verify:
        check = result["verify"]
        typer.echo(f"verified: {check['input_documents']:,} in, {check['output_documents']:,} "
                   f"out, {check['lost']} lost, {check['duplicated']} duplicated")
        if check["lost"] or check["duplicated"]:
            raise BioELError(Errors.E203.format(counts=check, output=output_dir))


@app.command("link-corpus-bench")
def link_corpus_bench(
    pipeline: str = typer.Argument(..., help="A saved pipeline with a bioel_linker"),
    sources: List[Path] = typer.Argument(..., help="Corpora whose documents are repeated (PubTator, JSONL, DocBin)"),
    output_dir: Path = typer.Option(Path("metrics/link_corpus"), "--output", help="Folder for the corpus, the outputs, JSON and .md"),
    min_docs: int = typer.Option(10000, "--min-docs", help="Documents in the corpus, at least"),
    shards: int = typer.Option(8, "--shards", help="JSONL shards the corpus is written as"),
    workers: str = typer.Option("1,2", "--workers", help="Ray worker counts to run, comma-separated"),
    batch_docs: int = typer.Option(256, "--batch-docs", help="Documents per batch"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Link a corpus of at least --min-docs documents (SOURCES repeated) with the
    local engine and with Ray at each --workers count (one thread per worker),
    check every Ray output equals the local one, and write docs/s per run as
    JSON and a markdown table."""
    import shutil

    from ..corpus_linking.bench import build_corpus, same_output
    from ..corpus_linking.local import link_local
    from ..corpus_linking.ray_engine import link_ray
    from ..corpus_linking.records import list_shards
    from ..errors import BioELError, Errors
    from ._app import split_csv

    setup_logging(verbose)
    corpus = build_corpus(sources, output_dir / "corpus", min_docs, shards)
    shard_files = list_shards([output_dir / "corpus"])
    local_dir = output_dir / "out-local"
    shutil.rmtree(local_dir, ignore_errors=True)
    runs = [link_local(shard_files, pipeline, local_dir, batch_docs=batch_docs, threads=1)]
    folders = [local_dir]
    try:
        import ray
    except ImportError:
        raise BioELError(Errors.E204)
    for n in [int(w) for w in split_csv(workers)]:
        out = output_dir / f"out-ray-{n}"
        shutil.rmtree(out, ignore_errors=True)
        run = link_ray(shard_files, pipeline, out, num_workers=n, batch_docs=batch_docs,
                       threads_per_worker=1)
        run["same_as_local"] = same_output(local_dir, out)
        runs.append(run)
        folders.append(out)
    ray.shutdown()
    from ..corpus_linking.records import compare_ids, iter_shard, read_outputs

    inputs = Counter(r["id"] for shard in shard_files for r in iter_shard(shard))
    for run, folder in zip(runs, folders):
        run["verify"] = compare_ids(inputs, Counter(r["id"] for r in read_outputs(folder)))
    for run in runs:
        run["docs_per_second"] = round(run["documents"] / max(run["seconds"], 1e-9), 1)
        run["mentions_per_second"] = round(run["mentions"] / max(run["seconds"], 1e-9), 1)
    result = {"pipeline": pipeline, "corpus": corpus, "batch_docs": batch_docs, "runs": runs}
    lines = [f"Corpus: {corpus['documents']:,} documents ({corpus['source_documents']:,} source "
             f"documents x {corpus['copies']}), {corpus['mentions']:,} mentions, {shards} JSONL "
             f"shards; pipeline {pipeline}; one thread per worker.", "",
             "| engine | workers | documents in / out (lost, duplicated) | seconds (load included) | docs/s | mentions/s | output equals local |",
             "|---|---:|---|---:|---:|---:|---|"]
    for run in runs:
        same, check = run.get("same_as_local"), run["verify"]
        lines.append(f"| {run['engine']} | {run['workers']} | {check['input_documents']:,} / "
                     f"{check['output_documents']:,} ({check['lost']}, {check['duplicated']}) | {run['seconds']} | "
                     f"{run['docs_per_second']} | {run['mentions_per_second']} | "
                     f"{'(reference)' if same is None else ('yes' if same['identical'] else 'NO: ' + json.dumps(same))} |")
    write_json(output_dir / "link_corpus_bench.json", result)
    try:
        from ..corpus_linking.bench import bench_figure

        lines += ["", f"![docs/s]({bench_figure(runs, output_dir / 'link_corpus_bench.png').name})"]
    except ImportError:  # matplotlib is the `plots` extra: the table stands alone
        logger.info("No figure: matplotlib is not installed (the plots extra)")
    (output_dir / "link_corpus_bench.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    typer.echo("\n".join(lines))

"""Lab commands about data: a synthetic KB at UMLS scale, NIL splits, and the
corpus-linking benchmark."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import List

import typer

from spacy_bioel.cli.link_corpus import verify_output

from ._app import app, kb_app, setup_logging, split_csv, write_json

logger = logging.getLogger(__name__)


@kb_app.command("synth")
def kb_synth(
    inputs: List[Path] = typer.Argument(..., help="Real KB files (.bioelkb) whose names seed the synthetic KB"),
    output: Path = typer.Argument(..., help="The synthetic KB file (.bioelkb)"),
    names: int = typer.Option(3_000_000, "--names", help="Distinct (concept, name) pairs to generate"),
    seed: int = typer.Option(0, "--seed"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Grow a KB of real names to UMLS scale (qualified concepts and surface
    variants of every name) for index scale tests; see spacy_bioel.kb.synthetic."""
    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from ..synthetic import synthetic_kb
    from spacy_bioel.validation import as_int

    setup_logging(verbose)
    kb = synthetic_kb([KnowledgeBase.from_disk(p) for p in inputs], as_int("--names", names, 1),
                      seed=seed)
    kb.to_disk(output)
    stats = kb.stats()
    write_json(output.with_suffix(".stats.json"), {"name": kb.name, **stats, "meta": kb.meta})
    typer.echo(f"Saved {kb!r} to {output} ({output.stat().st_size / 1e6:.1f} MB): "
               f"{stats['names']:,} names")


@app.command("nil-split")
def nil_split(
    kb_path: Path = typer.Argument(..., help="The full KB"),
    splits: List[Path] = typer.Argument(..., help="Split DocBins (train.spacy dev.spacy test.spacy)"),
    output_dir: Path = typer.Argument(..., help="Where to write the NIL splits and kb.bioelkb"),
    fraction: float = typer.Option(0.1, "--fraction", help="Share of the corpus' concepts held out"),
    seed: int = typer.Option(0, "--seed"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Make NIL test sets: hold out a seeded share of the concepts, drop them from
    the KB, and relabel their mentions NIL (in every split given)."""
    setup_logging(verbose)
    from spacy.tokens import DocBin

    from spacy_bioel.corpora.nil_split import make_nil_splits
    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from ._app import read_docs

    kb = KnowledgeBase.from_disk(kb_path)
    by_split = {p.name.split(".")[0]: read_docs([p]) for p in splits}
    reduced, relabelled, report = make_nil_splits(kb, by_split, fraction=fraction, seed=seed)
    output_dir.mkdir(parents=True, exist_ok=True)
    reduced.to_disk(output_dir / "kb.bioelkb")
    for name, docs in relabelled.items():
        DocBin(docs=docs, store_user_data=True).to_disk(output_dir / f"{name}.spacy")
    write_json(output_dir / "nil_report.json", report.to_dict())
    heldout = sorted(set(kb.concept_ids) - set(reduced.concept_ids))
    # the ids a pre-training run must not see (pretrain-encoder --exclude-concepts)
    (output_dir / "heldout_concepts.txt").write_text("".join(f"{c}\n" for c in heldout),
                                                     encoding="utf-8")
    typer.echo(f"{len(heldout)} concepts held out (heldout_concepts.txt); "
               f"{dict(report.counts)}")


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
    check every Ray output equals the local one, and write docs/s and each
    worker's peak RSS (the local engine's is this process) per run as JSON and
    a markdown table."""
    import shutil

    from ..corpus_bench import build_corpus, same_output
    from spacy_bioel.corpus_linking.local import link_local
    from spacy_bioel.corpus_linking.ray_engine import link_ray
    from spacy_bioel.corpus_linking.records import list_shards
    from spacy_bioel.errors import BioELError, Errors

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
    for run, folder in zip(runs, folders):
        run["verify"] = verify_output(shard_files, folder, run["skipped_mentions"])
    for run in runs:
        run["docs_per_second"] = round(run["documents"] / max(run["seconds"], 1e-9), 1)
        run["mentions_per_second"] = round(run["mentions"] / max(run["seconds"], 1e-9), 1)
    result = {"pipeline": pipeline, "corpus": corpus, "batch_docs": batch_docs, "runs": runs}
    lines = [f"Corpus: {corpus['documents']:,} documents ({corpus['source_documents']:,} source "
             f"documents x {corpus['copies']}), {corpus['mentions']:,} mentions, {shards} JSONL "
             f"shards; pipeline {pipeline}; one thread per worker.", "",
             "| engine | workers | documents in / out (lost, duplicated) | seconds (load included) | docs/s | mentions/s | peak RSS MB per worker | output equals local |",
             "|---|---:|---|---:|---:|---:|---|---|"]
    for run in runs:
        same, check = run.get("same_as_local"), run["verify"]
        lines.append(f"| {run['engine']} | {run['workers']} | {check['input_documents']:,} / "
                     f"{check['output_documents']:,} ({check['lost']}, {check['duplicated']}) | {run['seconds']} | "
                     f"{run['docs_per_second']} | {run['mentions_per_second']} | "
                     f"{', '.join(f'{mb:,.0f}' for mb in run.get('peak_rss_mb_per_worker', [])) or '-'} | "
                     f"{'(reference)' if same is None else ('yes' if same['identical'] else 'NO: ' + json.dumps(same))} |")
    write_json(output_dir / "link_corpus_bench.json", result)
    try:
        from ..corpus_bench import bench_figure

        lines += ["", f"![docs/s]({bench_figure(runs, output_dir / 'link_corpus_bench.png').name})"]
    except ImportError:  # matplotlib is the `plots` extra: the table stands alone
        logger.info("No figure: matplotlib is not installed (the plots extra)")
    (output_dir / "link_corpus_bench.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    typer.echo("\n".join(lines))


@app.command("natural-corpus")
def natural_corpus(
    inputs: List[Path] = typer.Argument(..., help="DocBins (.spacy from convert), e.g. every split of NCBI and BC5CDR"),
    output: Path = typer.Option(..., "--output", help="The DocBin of distinct documents (a .json report beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Every distinct document of INPUTS, once, with its gold mentions and the
    DocBin it came from (user_data "bioel_source", e.g. "ncbi/test"): the
    natural corpus of the speed benchmark, where documents do not repeat.
    Repeated texts are skipped and counted in the report."""
    from spacy.tokens import DocBin

    from ..natural import distinct_documents
    from ._app import read_docs

    setup_logging(verbose)
    sources = [(f"{path.parent.name}/{path.stem}", read_docs([path])) for path in inputs]
    docs, report = distinct_documents(sources)
    output.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=True).to_disk(output)
    write_json(output.with_suffix(".json"), {"inputs": [str(p) for p in inputs], **report})
    typer.echo(f"{report['kept']} distinct documents ({report['mentions']} mentions) of "
               f"{report['read']} read; {report['duplicates']} repeated and {report['empty']} "
               f"empty skipped -> {output}")


@app.command("default-ner-data")
def default_ner_data(
    output: Path = typer.Argument(..., help="The merged training DocBin to write"),
    inputs: List[Path] = typer.Argument(..., help="DocBins to merge, in order (NCBI and BC5CDR train and dev; never test)"),
    fingerprint: Path = typer.Option(..., "--fingerprint", help="Where to write the data fingerprint (JSON)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """The shipped NER's training data (issue 72): the documents of every input
    DocBin in one file, and the fingerprint of each input (SHA-256, documents,
    mentions) that `default-ner-ship` records in the package."""
    from ..default_ner import merge_corpora

    setup_logging(verbose)
    if any("test" in p.stem for p in inputs):
        raise typer.BadParameter(f"{[str(p) for p in inputs]}: the shipped NER never trains on a "
                                 "test split", param_hint="INPUTS")
    data = merge_corpora(inputs, output)
    write_json(fingerprint, data)
    typer.echo(f"Wrote {output}: {data['output']['documents']} documents, "
               f"{data['output']['mentions']} mentions")


@app.command("default-ner-ship")
def default_ner_ship(
    model: Path = typer.Argument(..., help="The trained NER pipeline (spacy train's model-last)"),
    target: Path = typer.Argument(..., help="Where the package keeps it (spacy_bioel/assets/ner)"),
    fingerprint: Path = typer.Option(..., "--fingerprint", help="default-ner-data's fingerprint"),
    seed: int = typer.Option(0, "--seed", help="The seed it was trained with"),
    command: str = typer.Option("spacy project run build-default-ner", "--command",
                                help="The command that rebuilds it"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Copy the trained NER into the package with its manifest (each file's
    SHA-256, the data fingerprint, the seed, the command)."""
    from ..default_ner import ship

    setup_logging(verbose)
    data = json.loads(fingerprint.read_text(encoding="utf-8"))
    shipped = ship(model, target, data, seed, command)
    size = sum((target / name).stat().st_size for name in shipped["files"])
    typer.echo(f"Shipped {model} to {target}: {len(shipped['files'])} files, {size / 1e6:.1f} MB")


@app.command("default-tower")
def default_tower(
    target: Path = typer.Argument(Path("spacy_bioel/assets/tower"), help="Where the package keeps it"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Export the embedded MiniLM's mention tower as the one default does (ONNX,
    int8 weights and embedding table) into the package, with its tokenizer, a
    reference to the base model and a manifest of checksums (issue 72: the base
    install serves the default without PyTorch)."""
    from ..default_tower import build_tower

    setup_logging(verbose)
    shipped = build_tower(target)
    size = sum((target / name).stat().st_size for name in shipped["files"])
    typer.echo(f"Shipped the mention tower to {target}: {len(shipped['files'])} files, "
               f"{size / 1e6:.1f} MB")

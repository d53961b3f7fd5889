"""`link-corpus PIPELINE INPUT OUTPUT`: link a sharded corpus, here or on Ray."""
from __future__ import annotations

import logging
import os
import re
from collections import Counter
from pathlib import Path
from typing import List, Optional, Tuple

import typer

from ._app import app, resolve_pipeline, setup_logging, write_json

logger = logging.getLogger(__name__)


@app.command("link-corpus")
def link_corpus(
    pipeline: str = typer.Argument(..., help="A saved pipeline with a bioel_linker, an installed package name, or bioel: the default pipeline (the shipped disease NER and the untrained linker over --kb), built into the cache on first use"),
    input_path: str = typer.Argument(..., help="A shard file, a folder of shards or a glob: JSONL, PubTator, DocBin, plain .txt"),
    output_dir: Path = typer.Argument(..., help="A new or empty folder for the part-*.jsonl files (or an earlier run's, with --overwrite)"),
    engine: str = typer.Option("local", "--engine", help="local (this process) | ray (an actor pool on Ray Data)"),
    num_workers: int = typer.Option(2, "--num-workers", help="ray: actors, each loading the pipeline once"),
    threads: Optional[int] = typer.Option(None, "--threads", help="Threads per worker (ONNX Runtime, torch, BLAS, FAISS); 0: leave as is. Default: 0 on the local engine (its one worker uses the machine's cores), 1 per Ray actor"),
    batch_docs: int = typer.Option(256, "--batch-docs", help="Documents per batch and part file"),
    top: int = typer.Option(5, "--top", help="Candidates kept per mention"),
    chunk_mb: float = typer.Option(8.0, "--chunk-mb", help="ray: read tasks of this many MB per uncompressed JSONL shard (0: one per shard)"),
    address: Optional[str] = typer.Option(None, "--address", help="ray: a running cluster ('auto', HOST:PORT); default: a local one"),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Count input and output documents and mentions by id (a second read of the input)"),
    strict: bool = typer.Option(False, "--strict", help="Stop at a mention that cannot be placed in its text (outside it, empty, overlapping another) instead of skipping and counting it"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the part files of an earlier run in OUTPUT, once this run has finished and verified (nothing else in OUTPUT is touched)"),
    kb_path: Optional[str] = typer.Option(None, "--kb", help="bioel: the KB file, or embedded:doid (the Disease Ontology KB shipped in the package; the default)"),
    id_space: str = typer.Option("", "--id-space", help="Write ids in this vocabulary of the KB's cross-references (UMLS, MESH, OMIM, ICD10CM, NCI, ...): NIL for a concept without one; candidates keep the KB's ids"),
    report: Optional[Path] = typer.Option(None, "--report", help="Counts and timing as JSON (outside OUTPUT; never an input or the pipeline)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Link every document of INPUT's shards with PIPELINE and write OUTPUT/part-*.jsonl
    (per document: id, text and each mention's concept id or NIL, probability, NIL
    score and top candidates, and the input mentions that could not be placed). Mentions
    come from the shards (JSONL "entities", PubTator annotations, DocBin ents) or from the
    pipeline's own NER: where a JSONL line has no "entities", in a PubTator file without
    mention lines, in a DocBin Doc whose entities were never set, and in a plain .txt
    file (one document, its id the file's name).
    PIPELINE bioel is the default pipeline, as `link` runs it. --engine ray runs an actor
    pool that survives killed workers; with --verify the output is checked to hold every
    input document and mention once. OUTPUT must be new, empty or an earlier run's
    (link-corpus marks the folders it writes); with --overwrite the new parts are
    written beside the old ones (in OUTPUT/.staging) and replace them only after the
    run succeeded. Nothing else is ever deleted or overwritten: not a file link-corpus
    did not write, an input, the pipeline or the working directory."""
    from ..errors import BioELError, Errors, Warnings, warn
    from ..outputs import remove_owned
    from ..validation import as_float, as_int

    setup_logging(verbose)
    if engine not in ("local", "ray"):
        raise BioELError(Errors.E175.format(name="--engine", value=repr(engine),
                                            expected="'local' or 'ray'"))
    num_workers = as_int("--num-workers", num_workers, 1, 1024)
    # the local engine's one worker uses the cores; Ray's actors one each (--num-workers of them)
    threads = (0 if engine == "local" else 1) if threads is None else as_int("--threads", threads, 0, 1024)
    batch_docs = as_int("--batch-docs", batch_docs, 1, 10 ** 6)
    top = as_int("--top", top, 0, 10 ** 4)
    chunk_mb = as_float("--chunk-mb", chunk_mb, 0.0, 10.0 ** 6)
    from ..corpus_linking.records import list_shards

    shards = list_shards([input_path])
    pipeline = resolve_pipeline(pipeline, kb_path, COMMAND)
    old, target = claim_output(shards, input_path, pipeline, output_dir, report, overwrite,
                               kb=kb_path)
    logger.info("Linking %d shard(s) with %s on the %s engine", len(shards), pipeline, engine)
    if engine == "local":
        from ..corpus_linking.local import link_local

        result = link_local(shards, pipeline, target, batch_docs=batch_docs, top=top,
                            threads=threads, strict=strict, id_space=id_space)
    else:
        from ..corpus_linking.ray_engine import link_ray

        result = link_ray(shards, pipeline, target, num_workers=num_workers,
                          batch_docs=batch_docs, top=top, threads_per_worker=max(1, threads),
                          address=address, chunk_bytes=int(chunk_mb * 2 ** 20), strict=strict,
                          id_space=id_space)
    result.update(shards=len(shards), pipeline=pipeline, output=str(output_dir))
    result["docs_per_second"] = round(result["documents"] / max(result["seconds"], 1e-9), 1)
    if result["skipped_mentions"]:
        warn(Warnings.W012.format(count=result["skipped_mentions"], by_shard=", ".join(
            f"{Path(k).name}: {v}" for k, v in sorted(result["skipped_by_shard"].items()))))
    if result.get("skipped_documents"):
        warn(Warnings.W017.format(count=result["skipped_documents"], output=output_dir))
    if verify:
        result["verify"] = verify_output(shards, target, result["skipped_mentions"],
                                         result.get("spans_key"))
    if report:
        write_json(report, result)
    unread = result.get("skipped_documents", 0)
    typer.echo(f"{result['documents']:,} documents" + (f" ({unread:,} too long for the NER)"
                                                       if unread else "") +
               f", {result['mentions']:,} mentions "
               f"({result['skipped_mentions']:,} skipped) in {result['parts']} part file(s), "
               f"{result['seconds']} s ({result['docs_per_second']} docs/s, {engine}, "
               f"{result['workers']} worker(s))")
    if verify:
        check = result["verify"]
        typer.echo(f"verified: {check['input_documents']:,} in, {check['output_documents']:,} "
                   f"out, {check['lost']} lost, {check['duplicated']} duplicated; "
                   f"{check['input_mentions']:,} mentions in, {check['output_mentions']:,} out "
                   f"+ {check['skipped_mentions']:,} skipped")
        if check["lost"] or check["duplicated"] or check["mentions_unaccounted"]:
            raise BioELError(Errors.E203.format(counts=check, output=target))
    if target != output_dir:  # the run succeeded: only now replace the old parts
        for part in old:
            part.unlink()
        for part in sorted(target.glob("part-*.jsonl")):
            os.replace(part, output_dir / part.name)
        remove_owned(target, is_own_file)


COMMAND = "link-corpus"
# where --overwrite writes a run before it replaces the old parts (a claimed folder of its own)
STAGING = ".staging"


def claim_output(shards: List[Path], input_path: str, pipeline: str, output_dir: Path,
                 report: Optional[Path], overwrite: bool, kb: Optional[str] = None
                 ) -> Tuple[List[Path], Path]:
    """Check every path the run writes before any work (`outputs`): the output folder
    is new, empty or an earlier run's (E246), and neither it nor the report is an
    input, the pipeline, the KB file `kb` (the default pipeline's) or the working
    directory (E245); E205 when it holds an earlier
    run's parts and not `overwrite`. Claims the folder (and, to overwrite, a staging
    folder inside it, an abandoned one removed first).
    RETURNS (Tuple[List[Path], Path]): the earlier run's part files and the folder
    this run writes its parts to."""
    from ..errors import BioELError, Errors
    from ..outputs import Protected, check_target, claim_folder, remove_owned, working_directory

    protected = [Protected("an input shard", shard) for shard in shards]
    if Path(input_path).is_dir():
        protected.append(Protected("the input folder", Path(input_path)))
    if Path(pipeline).exists():
        protected.append(Protected("the pipeline", Path(pipeline), inside=True))
    if kb is not None and Path(kb).exists():
        protected.append(Protected("the KB", Path(kb)))
    protected.append(working_directory())
    if report is not None:
        check_target(f"{COMMAND} --report", report, protected + [
            Protected("the output folder", output_dir, inside=True)])
        if report.is_dir():
            raise BioELError(Errors.E245.format(command=f"{COMMAND} --report", path=report,
                                                relation="is", what="a folder", target=report))
    earlier = claim_folder(output_dir, COMMAND, protected, own=is_own_file)
    old = sorted(p for p in output_dir.iterdir() if PART_FILE.match(p.name)) if earlier else []
    if old and not overwrite:
        raise BioELError(Errors.E205.format(output=output_dir, n=len(old)))
    staging = output_dir / STAGING
    if staging.is_dir():  # an earlier --overwrite run's, never finished
        remove_owned(staging, is_own_file)
    if not old:
        return old, output_dir
    claim_folder(staging, COMMAND)
    return old, staging


# the files link-corpus writes into a folder it claimed: part files (named by their
# documents' origins, `records.part_name`) and their partial copies (`files.replace_file`)
PART_FILE = re.compile(r"^part-[0-9a-f]{24}\.jsonl$")
PARTIAL_PART = re.compile(r"^\.part-[0-9a-f]{24}\.jsonl\.\d+\.[0-9a-f]{8}\.tmp$")


def is_own_file(name: str) -> bool:
    """Whether `name`, in a folder link-corpus claimed, is one of its own files."""
    return bool(PART_FILE.match(name) or PARTIAL_PART.match(name))


def verify_output(shards: List[Path], output_dir: Path, skipped: int,
                  spans_key: Optional[str] = None) -> dict:
    """Documents by id (a multiset) and mentions, input against output: every
    input mention (read as the linker with `spans_key` read it) is either in the
    output or counted as skipped (mentions the pipeline's NER found, in documents
    without input entities, count apart)."""
    from ..corpus_linking.records import compare_ids, input_mention_count, iter_shard, read_outputs

    inputs: Counter = Counter()
    input_mentions = 0
    for shard in shards:
        for record in iter_shard(shard):
            inputs[record["id"]] += 1
            input_mentions += input_mention_count(record, spans_key)
    outputs: Counter = Counter()
    linked = {"input": 0, "ner": 0}
    for record in read_outputs(output_dir):
        outputs[record["id"]] += 1
        linked[record.get("mentions_from", "input")] += len(record["entities"])
    check = compare_ids(inputs, outputs)
    check.update(input_mentions=input_mentions, output_mentions=linked["input"],
                 found_by_ner=linked["ner"], skipped_mentions=skipped,
                 mentions_unaccounted=input_mentions - linked["input"] - skipped)
    return check

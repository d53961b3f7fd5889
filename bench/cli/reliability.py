"""`reliability OUTPUT_DIR`: the hostile-user runs (malformed input files,
random documents, n_process=2, byte flips in a saved pipeline, and the edges:
crafted payloads and weights, saved folders with links, FIFOs and changed
files, the embedding cache, extreme settings, corpus-linking shards) as counts
in OUTPUT_DIR/reliability.json and a markdown table beside it."""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Optional

import typer

from ._app import app, setup_logging, split_csv, write_json

logger = logging.getLogger(__name__)


@app.command("reliability")
def reliability(
    output_dir: Path = typer.Argument(..., help="Where to write reliability.json/.md and malformed_inputs.json"),
    pipeline: Optional[Path] = typer.Option(None, "--pipeline", help="A saved pipeline with a bioel_linker (default: the embedded encoder, untrained, on --kb)"),
    kb_path: Optional[Path] = typer.Option(None, "--kb", help="KB for the default pipeline (default: the embedded DOID KB)"),
    n_docs: int = typer.Option(2000, "--docs", help="Random documents to link"),
    flips: int = typer.Option(5, "--flips", help="Bit flips per saved file"),
    seed: int = typer.Option(0, "--seed"),
    edges_encoder: Optional[str] = typer.Option(None, "--edges-encoder", help="Encoder of the small pipeline the edge cases attack (default: the embedded MiniLM)"),
    only: Optional[str] = typer.Option(None, "--only", help="Run only the edge cases (comma-separated parts of their names; 'all' for every one)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Run every reliability check and write the counts."""
    import spacy

    from ..fuzz import flip_saved_files, fuzz_documents, random_docs
    from ..malformed import run_table
    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from spacy_bioel.pipeline.loading import find_linker, load_pipeline

    from spacy_bioel.encoders.common import DEFAULT_ENCODER, resolve_model_path
    from ..hostile import run_cases, summarize
    from ..hostile import table as edges_table

    setup_logging(verbose)
    with tempfile.TemporaryDirectory() as tmp:
        from spacy_bioel.cli import main as user_cli  # the cases run the user's commands

        edges = run_cases(Path(tmp), resolve_model_path(edges_encoder or DEFAULT_ENCODER), user_cli,
                          None if only in (None, "all") else split_csv(only))
    write_json(output_dir / "edges.json", edges)
    typer.echo(edges_table(edges))
    if only is not None:
        (output_dir / "edges.md").write_text(edges_table(edges), encoding="utf-8")
        return
    with tempfile.TemporaryDirectory() as tmp:
        rows, inputs = run_table(Path(tmp))
    write_json(output_dir / "malformed_inputs.json", rows)
    typer.echo(f"malformed inputs: {inputs}")
    if pipeline is not None:
        nlp = load_pipeline(pipeline)
    else:
        from spacy_bioel.cli.link import DEFAULT_KB
        nlp = spacy.blank("en")
        linker = nlp.add_pipe("bioel_linker")
        linker.set_kb(KnowledgeBase.from_disk(kb_path or DEFAULT_KB))
        nlp.initialize()
    linker = find_linker(nlp)
    documents = fuzz_documents(nlp, n_docs, seed, kb_ids=[c.concept_id for c in linker.kb])
    documents["nil_without_alnum"] = linker.counts["nil_without_alnum"]
    typer.echo(f"documents: { {k: v for k, v in documents.items() if k != 'errors'} }")
    probe = list(random_docs(nlp, 20, seed + 1, long_every=0))
    artefacts = flip_saved_files(nlp, probe, flips, seed)
    typer.echo(f"saved files: { {k: v for k, v in artefacts.items() if k != 'by_file'} }")
    report = {"malformed_inputs": inputs, "documents": documents, "saved_files": artefacts,
              "edges": summarize(edges),
              "pipeline": str(pipeline) if pipeline else "embedded encoder (untrained)",
              "seed": seed}
    write_json(output_dir / "reliability.json", report)
    (output_dir / "reliability.md").write_text(table(report) + "\n" + edges_table(edges),
                                               encoding="utf-8")
    typer.echo((output_dir / "reliability.md").read_text(encoding="utf-8"))


def table(report: dict) -> str:
    inputs, docs, files = report["malformed_inputs"], report["documents"], report["saved_files"]
    lines = ["| check | tried | coded errors | clean / identical | silent wrong | crashes |",
             "|---|---:|---:|---:|---:|---:|",
             f"| malformed input files (8 loaders + binary KB) | {inputs['files']} | "
             f"{inputs.get('coded_error', 0)} (+{inputs.get('reported_skip', 0)} loaded, the damage "
             f"reported) | {inputs.get('clean_load', 0)} | "
             f"{inputs.get('silent_wrong', 0) + inputs.get('refused_valid', 0)} | {inputs.get('crash', 0)} |",
             f"| random documents ({docs['entities']} entities; longest {docs['max_doc_chars']} chars, "
             f"{docs['max_doc_entities']} entities) | {docs['documents']} | - | "
             f"{docs['documents'] - docs['nondeterministic_docs']} | "
             f"{docs['dropped_entities']} dropped, {docs['unknown_ids']} unknown ids, "
             f"{docs['nondeterministic_docs']} nondeterministic, {docs['n_process_mismatches']} "
             f"n_process=2 mismatches, {docs['batching_changed_links']} with other links when "
             f"linked alone | {docs['crashes']} |",
             f"| bit flips in saved linker files | {files['flips']} | {files['coded_error']} | "
             f"{files['same_links']} | {files['silent_change']} | {files['crash']} |"]
    return "\n".join(lines) + "\n"

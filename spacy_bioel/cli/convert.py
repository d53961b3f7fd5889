"""`convert FORMAT INPUT... OUTPUT_DIR`: corpora -> .spacy DocBins + a report."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import typer

from ._app import app, setup_logging, split_csv, write_json

logger = logging.getLogger(__name__)
FORMATS = ("pubtator", "askapatient", "obo-syn")


@app.command("convert")
def convert(
    fmt: str = typer.Argument(..., help="pubtator | askapatient | obo-syn"),
    inputs: List[Path] = typer.Argument(..., help="Input files (obo-syn: one KB built from OBO)"),
    output_dir: Path = typer.Argument(..., help="Directory for <name>.spacy files"),
    names: str = typer.Option("", "--names", help="Output names per input, comma-separated (default: input stems)"),
    kb_path: Optional[Path] = typer.Option(None, "--kb", help="KB to resolve and check ids against"),
    types: str = typer.Option("", "--types", help="pubtator: entity types to keep (comma-separated)"),
    missing: str = typer.Option("keep", "--missing", help="ids missing from the KB: keep | nil | error"),
    misaligned: str = typer.Option("error", "--misaligned", help="unrepairable offsets: error | skip"),
    setting: str = typer.Option("zero-shot", "--setting", help="obo-syn: zero-shot | few-shot"),
    seed: int = typer.Option(0, "--seed", help="obo-syn: split seed"),
    dev_fraction: float = typer.Option(0.0, "--dev-fraction", help="obo-syn zero-shot: share of train terms held out as dev"),
    encoding: Optional[str] = typer.Option(None, "--encoding", help="Text encoding of inputs without a byte-order mark (default UTF-8)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Convert a corpus to spaCy DocBins whose ents carry type and gold concept id."""
    from ..errors import BioELError, Errors
    from ..kb.knowledge_base import KnowledgeBase

    setup_logging(verbose)
    if fmt not in FORMATS:
        raise BioELError(Errors.E054.format(fmt=fmt, options=", ".join(FORMATS)))
    kb = KnowledgeBase.from_disk(kb_path) if kb_path else None
    if fmt == "obo-syn":
        outputs, reports, names_kb = convert_obo_synonyms(
            KnowledgeBase.from_disk(inputs[0]), setting=setting, seed=seed, dev_fraction=dev_fraction)
        output_dir.mkdir(parents=True, exist_ok=True)
        names_kb.to_disk(output_dir / "kb.bioelkb")
    else:
        out_names = split_csv(names) or [p.name.split(".")[0] for p in inputs]
        if len(out_names) != len(inputs):
            raise typer.BadParameter(f"--names has {len(out_names)} names for {len(inputs)} inputs")
        outputs, reports = convert_files(fmt, inputs, out_names, kb=kb, types=split_csv(types),
                                         missing=missing, misaligned=misaligned, encoding=encoding)
    write_corpus(output_dir, outputs, reports)


def convert_obo_synonyms(source_kb, *, setting: str = "zero-shot", seed: int = 0,
                         dev_fraction: float = 0.0) -> Tuple[Dict[str, list], Dict[str, dict], Any]:
    """The OBO synonym splits of a KB built from OBO (GraphPrompt's settings).
    RETURNS (docs by split, {"splits": report}, the names-only KB)."""
    import spacy

    from ..corpora.obo_syn import obo_synonym_splits

    docs_by_split, names_kb, report = obo_synonym_splits(
        spacy.blank("en"), source_kb, setting=setting, seed=seed, zero_shot_dev_fraction=dev_fraction)
    return docs_by_split, {"splits": report.to_dict()}, names_kb


def convert_files(fmt: str, inputs: Sequence[Path], out_names: Sequence[str], *, kb=None,
                  types: Sequence[str] = (), missing: str = "keep", misaligned: str = "error",
                  encoding: Optional[str] = None) -> Tuple[Dict[str, list], Dict[str, dict]]:
    """Convert each input file (pubtator | askapatient) into Docs.
    RETURNS (docs by output name, conversion report by output name)."""
    import spacy

    nlp = spacy.blank("en")
    outputs: Dict[str, list] = {}
    reports: Dict[str, dict] = {}
    for path, out_name in zip(inputs, out_names):
        if fmt == "pubtator":
            from ..corpora.pubtator import convert_pubtator
            docs, report = convert_pubtator(nlp, path, types=list(types) or None, kb=kb,
                                            missing=missing, misaligned=misaligned,
                                            encoding=encoding)
        else:
            from ..corpora.askapatient import convert_askapatient
            docs, report = convert_askapatient(nlp, path, encoding=encoding)
            if kb is not None:
                missing_ids = {e.kb_id_ for d in docs for e in d.ents
                               if kb.resolve(e.kb_id_) is None}
                report.add("ids_missing_from_kb", n=len(missing_ids))
        outputs[out_name] = docs
        reports[out_name] = report.to_dict()
    return outputs, reports


def write_corpus(output_dir: Path, outputs: Dict[str, list], reports: Dict[str, dict]) -> None:
    """Write OUTPUT_DIR/<name>.spacy per split and conversion_report.json, and
    print what each split holds and what was skipped or repaired."""
    from spacy.tokens import DocBin

    output_dir.mkdir(parents=True, exist_ok=True)
    for out_name, docs in outputs.items():
        docbin = DocBin(store_user_data=True, docs=docs)
        docbin.to_disk(output_dir / f"{out_name}.spacy")
        n_mentions = sum(len(d.ents) for d in docs)
        typer.echo(f"{output_dir / (out_name + '.spacy')}: {len(docs)} docs, {n_mentions} mentions")
    write_json(output_dir / "conversion_report.json", reports)
    for out_name, report in reports.items():
        skipped = {k: v for k, v in report["counts"].items()
                   if k.startswith(("skipped", "overlapping", "misaligned", "ids_missing",
                                    "offsets_repaired", "relation", "duplicate", "trivial",
                                    "train_synonyms", "latin1", "mention_whitespace",
                                    "composite_individual"))}
        if skipped:
            typer.echo(f"  {out_name}: reported {skipped}")


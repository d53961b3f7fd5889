"""`kb build`, `kb merge`, `kb stats` and `kb xrefs`."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import List, Optional

import typer

from ._app import kb_app, setup_logging, split_csv, write_json

logger = logging.getLogger(__name__)


@kb_app.command("build")
def kb_build(
    fmt: str = typer.Argument(..., help="medic | ctd | obo | scispacy | umls | askapatient"),
    inputs: List[Path] = typer.Argument(..., help="Input file(s) or the UMLS META directory"),
    output: Path = typer.Argument(..., help="Output KB file (.bioelkb)"),
    prefixes: str = typer.Option("", "--prefixes", help="obo: keep ids with these prefixes (comma-separated, e.g. HP:)"),
    scopes: str = typer.Option("EXACT,RELATED,BROAD,NARROW", "--scopes", help="obo: synonym scopes to keep"),
    include_obsolete: bool = typer.Option(False, "--include-obsolete", help="obo: keep terms marked is_obsolete"),
    languages: str = typer.Option("ENG", "--languages", help="umls: MRCONSO LAT values"),
    sources: str = typer.Option("", "--sources", help="umls: SAB values (default all)"),
    include_suppressed: bool = typer.Option(False, "--include-suppressed", help="umls: keep suppressible names"),
    name: Optional[str] = typer.Option(None, "--name", help="KB label for reports"),
    encoding: Optional[str] = typer.Option(None, "--encoding", help="Text encoding of files without a byte-order mark (default UTF-8)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Load a vocabulary in any supported format and save it as a binary KB."""
    from ..kb.loaders import load_kb
    from ..outputs import protect_inputs

    setup_logging(verbose)
    protect_inputs("kb build", [output, output.with_suffix(".stats.json")], inputs)
    kwargs = {}
    if fmt == "obo":
        kwargs = {"prefixes": split_csv(prefixes) or None, "synonym_scopes": split_csv(scopes),
                  "include_obsolete": include_obsolete}
    elif fmt == "umls":
        kwargs = {"languages": tuple(split_csv(languages)), "sources": split_csv(sources) or None,
                  "include_suppressed": include_suppressed}
    if name:
        kwargs["name"] = name
    if encoding and fmt != "bioel":
        kwargs["encoding"] = encoding
    start = time.perf_counter()
    kb = load_kb(fmt, inputs, **kwargs)
    seconds = time.perf_counter() - start
    kb.to_disk(output)
    stats = kb.stats()
    stats["load_seconds"] = round(seconds, 2)
    write_json(output.with_suffix(".stats.json"), {"name": kb.name, "format": fmt, **stats,
                                                   "meta": kb.meta})
    typer.echo(f"Saved {kb!r} to {output} ({output.stat().st_size / 1e6:.1f} MB, "
               f"loaded in {seconds:.1f}s)")
    typer.echo(json.dumps(stats, indent=2))
    report = {k: v for k, v in kb.meta.get("load_report", {}).items() if k != "rejected_clauses"}
    if report:  # what was read, repaired and skipped (lines in the .stats.json)
        typer.echo("Load report: " + json.dumps(report))


@kb_app.command("merge")
def kb_merge(
    inputs: List[Path] = typer.Argument(..., help="KB files (.bioelkb) with disjoint ids"),
    output: Path = typer.Argument(..., help="The merged KB file"),
    name: str = typer.Option("", "--name", help="Label of the merged KB"),
    label_untyped: bool = typer.Option(True, "--label-untyped/--keep-untyped", help="Give concepts without types their source KB's name as type"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Merge KBs with disjoint ids into one, such as DOID and HP, keeping each
    concept's types (OBO namespace, UMLS TUI, ...) so that a semantic-type filter
    can restrict candidates."""
    from collections import Counter

    from ..kb.knowledge_base import KnowledgeBase
    from ..outputs import protect_inputs

    setup_logging(verbose)
    protect_inputs("kb merge", [output], inputs)
    kb = KnowledgeBase.merge([KnowledgeBase.from_disk(p) for p in inputs], name=name,
                             label_untyped=label_untyped)
    kb.to_disk(output)
    types = Counter(t for concept in kb for t in concept.types)
    typer.echo(f"Saved {kb!r} to {output}; types: {dict(types.most_common(10))}")


@kb_app.command("stats")
def kb_stats(
    path: Path = typer.Argument(..., help="A KB file written by `kb build`"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Print a KB's counts."""
    setup_logging(verbose)
    from ..kb.knowledge_base import KnowledgeBase

    kb = KnowledgeBase.from_disk(path)
    typer.echo(f"{kb!r}")
    typer.echo(json.dumps(kb.stats(), indent=2))



@kb_app.command("xrefs")
def kb_xrefs(
    path: str = typer.Argument(..., help="A KB file written by `kb build`, or embedded:doid"),
    spaces: List[str] = typer.Option([], "--space", help="Vocabularies to report (repeat; default: every one the KB's cross-references name)"),
    gold: List[Path] = typer.Option([], "--gold", help="Corpora (.spacy) whose gold concepts' coverage to report too (repeat)"),
    output: Optional[Path] = typer.Option(None, "--output", help="Also write the report as JSON"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """The coverage of a KB's cross-references: per vocabulary (UMLS, MESH, OMIM,
    ...), the share of the KB's concepts with an id there (what `--id-space` can
    write), and with --gold the share of a corpus' gold concepts."""
    setup_logging(verbose)
    from ..kb.ids import split_gold_ids
    from ..kb.knowledge_base import KnowledgeBase
    from ..kb.xrefs import coverage, gold_coverage, space_of
    from ..kb.xrefs import spaces as kb_spaces
    from ._app import read_docs

    kb = KnowledgeBase.from_disk(path)
    found = kb_spaces(kb)
    chosen = [space_of(s) for s in spaces] or [s for s, _ in found.most_common()]
    gold_ids = {str(p): sorted({i for doc in read_docs([p]) for ent in doc.ents
                                for i in split_gold_ids(ent.kb_id_)}) for p in gold}
    report = {"kb": kb.name, "concepts": len(kb), "spaces": {}}
    typer.echo(f"{kb!r}: cross-references in {len(found)} vocabularies\n")
    header = f"{'space':14} {'concepts':>9} {'share':>7} {'several':>8}"
    typer.echo(header + "".join(f"  {Path(p).parent.name + '/' + Path(p).stem:>22}" for p in gold))
    for space in chosen:
        entry = {"kb": coverage(kb, space),
                 "gold": {p: gold_coverage(kb, space, ids) for p, ids in gold_ids.items()}}
        report["spaces"][space] = entry
        row = entry["kb"]
        line = f"{space:14} {row['mapped']:>9} {100 * row['share']:>6.1f}% {row['several']:>8}"
        for p in gold_ids:
            g = entry["gold"][p]
            line += f"  {g['mapped']:>6}/{g['gold_ids']:<6} {100 * g['share']:>6.1f}%"
        typer.echo(line)
    if gold:
        typer.echo("\ngold: distinct gold ids of the corpus the linker can write in the vocabulary "
                   "(a KB concept with an id there, or an id there a KB concept maps to)")
    if output is not None:
        write_json(output, report)

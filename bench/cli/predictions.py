"""`predictions PIPELINE DATA`: every gold mention's link as the pipeline makes
it, written as JSON lines, or compared with such a file (`--against`): the
recorded check that a change of code leaves a trained linker's predictions as
they were (issue 43: a refactor of the component keeps the same NCBI dev links)."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer

from ._app import app, setup_logging, write_json

logger = logging.getLogger(__name__)


def link_rows(pipeline: Path, data: Path, top: int) -> List[Dict[str, Any]]:
    """Per gold mention, in document order: where it is, the concept id (or NIL),
    the NIL flag and score, and the top candidates with their scores."""
    from spacy_bioel.pipeline.loading import find_linker, load_pipeline, upstream_annotated
    from spacy_bioel.training.readers import gold_spans_doc

    from ._app import read_docs

    nlp = load_pipeline(pipeline)
    linker = find_linker(nlp)
    cfg = linker.cfg
    docs = [gold_spans_doc(nlp, doc) for doc in read_docs([data])]
    docs = upstream_annotated(nlp, linker, docs)
    rows = []
    for number, doc in enumerate(linker.pipe(docs)):
        for ent in doc.ents:
            rows.append({"doc": number, "start": ent.start_char, "end": ent.end_char,
                         "kb_id": ent.kb_id_, "is_nil": bool(ent._.get(cfg["is_nil_attr"])),
                         "nil_score": _round(ent._.get(cfg["nil_score_attr"])),
                         "candidates": [[cid, _round(score)] for cid, score in
                                        (ent._.get(cfg["kb_ents_attr"]) or [])[:top]]})
    return rows


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(float(value), 6)


def diff(before: List[Dict[str, Any]], after: List[Dict[str, Any]], tolerance: float) -> Dict[str, Any]:
    """Counts of mentions whose link, NIL flag or candidate list changed, and the
    largest score change (scores within `tolerance` count as equal)."""
    if [(r["doc"], r["start"], r["end"]) for r in before] != \
            [(r["doc"], r["start"], r["end"]) for r in after]:
        return {"same_mentions": False}
    changed = {"kb_id": 0, "is_nil": 0, "candidate_order": 0}
    largest = 0.0
    for a, b in zip(before, after):
        changed["kb_id"] += a["kb_id"] != b["kb_id"]
        changed["is_nil"] += a["is_nil"] != b["is_nil"]
        changed["candidate_order"] += [c for c, _ in a["candidates"]] != [c for c, _ in b["candidates"]]
        for (_, x), (_, y) in zip(a["candidates"], b["candidates"]):
            largest = max(largest, abs(x - y))
    return {"same_mentions": True, "mentions": len(before), "changed": changed,
            "largest_score_change": largest,
            "identical": not any(changed.values()) and largest <= tolerance}


@app.command("predictions")
def predictions(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a bioel_linker"),
    data: Path = typer.Argument(..., help="A DocBin with gold mentions (e.g. corpus/ncbi/dev.spacy)"),
    output: Path = typer.Option(Path("predictions.jsonl"), "--output", help="Where to write the links (JSON lines)"),
    against: Optional[Path] = typer.Option(None, "--against", help="Links written before (by this command): report what changed"),
    top: int = typer.Option(5, "--top", help="Candidates kept per mention"),
    tolerance: float = typer.Option(1e-5, "--tolerance", help="Score changes up to this count as none"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Write every gold mention's link (concept id or NIL, NIL score, top candidates)
    as JSON lines; with --against, compare them with an earlier file and write the
    differences beside the output (.diff.json). Exits 1 when any link differs."""
    setup_logging(verbose)
    rows = link_rows(pipeline, data, top)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    typer.echo(f"{len(rows):,} mentions linked -> {output}")
    if against is None:
        return
    before = [json.loads(line) for line in against.read_text(encoding="utf-8").splitlines() if line]
    result = diff(before, rows, tolerance)
    write_json(output.with_suffix(".diff.json"), result)
    typer.echo(json.dumps(result))
    if not result.get("identical"):
        raise typer.Exit(1)

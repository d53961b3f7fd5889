"""`compare A B DATA.spacy --kb KB`: two linkers paired mention by mention."""
from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from ._app import app, read_docs, setup_logging, write_json


@app.command("compare")
def compare(
    linker_a: str = typer.Argument(..., help="The reference: a saved pipeline directory or a baseline (exact | tfidf)"),
    linker_b: str = typer.Argument(..., help="The system compared with it (same forms)"),
    data: Path = typer.Argument(..., help="DocBin (.spacy) with gold kb_id_ on doc.ents"),
    kb_path: Path = typer.Option(..., "--kb", help="The KB (.bioelkb): concept names in the report, and the baselines' dictionary"),
    train: List[Path] = typer.Option([], "--train", help="DocBins whose gold concepts count as seen (the seen / unseen rows)"),
    output: Path = typer.Option(Path("compare.json"), "--output", help="JSON report (a .md is written beside it)"),
    n_bootstrap: int = typer.Option(2000, "--bootstrap", help="Document resamples for the 95% interval of b − a (0: none)"),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap"),
    top: int = typer.Option(10, "--top", help="Gold concepts listed among the mentions won and lost"),
    label_a: str = typer.Option("a", "--label-a", help="Name of linker_a in the report"),
    label_b: str = typer.Option("b", "--label-b", help="Name of linker_b in the report"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Link DATA with both linkers and report, mention by mention, what b gets right that
    a misses and the reverse (by gold concept and document), Acc@1 of both overall and on
    seen / unseen concepts, and a 95% interval of b − a from a paired bootstrap over
    documents. Acc@1 counts as in `evaluate` (the top candidate)."""
    from spacy_bioel.evaluation.linkers import link_linker
    from ..paired import compare_records, comparison_markdown
    from spacy_bioel.evaluation.records import annotate_subsets
    from spacy_bioel.kb.knowledge_base import KnowledgeBase

    setup_logging(verbose)
    kb = KnowledgeBase.from_disk(kb_path)
    docs = read_docs([data])
    train_docs = read_docs(list(train)) if train else []
    records = [link_linker(linker, docs, kb)[0] for linker in (linker_a, linker_b)]
    if train_docs:  # seen / unseen is a property of the gold: compare_records reads a's
        annotate_subsets(records[0], kb, train_docs)

    def concept_name(concept_id: str) -> str:
        concept = kb.get(kb.resolve(concept_id) or concept_id)
        return concept.canonical_name if concept is not None else ""

    result = compare_records(records[0], records[1], n_bootstrap=n_bootstrap, seed=seed,
                             top=top, concept_name=concept_name)
    result["meta"] = {"a": label_a, "linker_a": linker_a, "b": label_b, "linker_b": linker_b,
                      "data": str(data), "kb": str(kb_path), "train": [str(p) for p in train]}
    write_json(output, result)
    markdown = comparison_markdown(result, label_a, label_b)
    output.with_suffix(".md").write_text(markdown, encoding="utf8")
    typer.echo(markdown)

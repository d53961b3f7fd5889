"""`compare A B DATA.spacy --kb KB`: two linkers paired mention by mention; `cross-corpus`:
linkers on the test sets of other corpora against one KB; `biosyn-protocol`: our protocol and BioSyn's;
`nil-margin`: right links answered NIL on test by NIL thresholds fitted on dev by two rules;
`final-fit`: dev's annotated mentions added to the kNN datastore after tuning."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ._app import app, fields, labelled, load_pipeline, read_docs, setup_logging, write_json, write_report


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


@app.command("cross-corpus")
def cross_corpus(
    pipelines: List[str] = typer.Argument(..., help="LABEL=PIPELINE per linker; PIPELINE 'untrained' is the base encoder as add_pipe gives it"),
    kb_path: Path = typer.Option(..., "--kb", help="The one KB every linker links against (.bioelkb)"),
    tests: List[str] = typer.Option(..., "--test", help="LABEL=TEST.spacy, repeatable"),
    cache: Optional[Path] = typer.Option(None, "--cache", help="Embedding cache folder (a frozen base concept tower encodes the KB once for all)"),
    output: Path = typer.Option(Path("metrics/cross_corpus.json"), "--output", help="JSON (a .md beside it)"),
    ablations: List[str] = typer.Option([], "--ablate", help="Also each trained linker with this part off: knn (its datastore), defer (the shortcut's deference to training mentions), nil (the NIL stage), memory (the shortcut's training-mention memory, ExactShortcut.v2); repeatable"),
    retune: List[str] = typer.Option([], "--retune", help="TEST_LABEL=DEV.spacy: also each trained linker tuned on that corpus' dev set first (kNN interpolation and NIL stage), then linking that test set; repeatable"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Each linker on each test set against one KB, restaged in memory (issue 46: across corpora)."""
    from ..cross_corpus import cross_corpus as run, markdown

    setup_logging(verbose)
    tested = {label: Path(path) for label, path in labelled(tests, "TEST.spacy", "--test").items()}
    devs = {label: Path(path) for label, path in labelled(retune, "DEV.spacy", "--retune").items()}
    result = run(labelled(pipelines, "PIPELINE", "PIPELINES"), tested, kb_path, cache,
                 ablations=ablations, retune=devs)
    write_report(output, result, markdown(result))


@app.command("biosyn-protocol")
def biosyn_protocol(
    runs: List[str] = typer.Argument(..., help="LABEL=PIPELINE=TEST.spacy per row"),
    output: Path = typer.Option(Path("metrics/biosyn_protocol.json"), "--output", help="JSON (a .md beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Each pipeline on its test set under our protocol and BioSyn's (issue 46: rows
    comparable with the anchors'; the differences in bench/biosyn_protocol.py)."""
    from ..biosyn_protocol import both_protocols

    setup_logging(verbose)
    rows = []
    for run in runs:
        label, pipeline, test = fields(run, "LABEL=PIPELINE=TEST.spacy")
        nlp = load_pipeline(Path(pipeline))
        rows.append({"label": label, "pipeline": pipeline, "test": test,
                     **both_protocols(nlp, read_docs([Path(test)]))})
    lines = ["| run | ours: mentions | ours: Acc@1 | ours: kb_id_ acc | BioSyn: queries | BioSyn: Acc@1 | "
             "BioSyn: Acc@5 | expanded | composites (unsplit) | duplicate queries (kept) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for row in rows:
        ours, theirs, counts = row["ours"], row["biosyn"], row["counts"]
        lines.append(f"| {row['label']} | {ours['n']} | {100 * ours['acc@1']:.2f} | "
                     f"{100 * ours['kb_id_acc']:.2f} | {theirs['n']} | {100 * theirs['acc@1']:.2f} | "
                     f"{100 * theirs['acc@5']:.2f} | {counts['expanded']} | "
                     f"{counts['composites']} ({counts['unsplit_composites']}) | {counts['duplicates']} |")
    write_report(output, {"rows": rows}, "\n".join(lines) + "\n")


@app.command("nil-margin")
def nil_margin(
    runs: List[str] = typer.Argument(..., help="LABEL=PIPELINE=DEV.spacy=TEST.spacy per tuned pipeline"),
    output: Path = typer.Option(Path("metrics/nil_margin.json"), "--output", help="JSON (a .md beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Each tuned pipeline's NIL threshold fitted on dev by 2% of dev's right links
    and by a 95% upper bound on the rate (what `tune` fits): right links answered
    NIL on dev and test, same decisions otherwise (issue 46)."""
    from ..nil_margin import markdown, probe

    setup_logging(verbose)
    pipelines, devs, tests = {}, {}, {}
    for run in runs:
        label, pipeline, dev, test = fields(run, "LABEL=PIPELINE=DEV.spacy=TEST.spacy", "RUNS")
        pipelines[label], devs[label], tests[label] = Path(pipeline), Path(dev), Path(test)
    result = probe(pipelines, devs, tests)
    write_report(output, result, markdown(result))


@app.command("final-fit")
def final_fit(
    runs: List[str] = typer.Argument(..., help="LABEL=PIPELINE=TRAIN.spacy=DEV.spacy=TEST.spacy per tuned pipeline"),
    seed: int = typer.Option(0, "--seed", help="Seed of the training documents left out on dev"),
    output: Path = typer.Option(Path("metrics/final_fit.json"), "--output", help="JSON (a .md beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Each tuned pipeline with dev's annotated mentions added to its kNN datastore
    (`rebuild-datastore PIPELINE TRAIN DEV`, the anchors' train + dev protocol) on
    test, beside the dev check the dev rule allows: a datastore of part of train
    against all of it, leaving out the share dev's mentions would add (issue 46)."""
    from ..final_fit import markdown, probe

    setup_logging(verbose)
    parsed = {}
    for run in runs:
        label, *paths = fields(run, "LABEL=PIPELINE=TRAIN.spacy=DEV.spacy=TEST.spacy", "RUNS")
        parsed[label] = tuple(Path(p) for p in paths)
    result = probe(parsed, seed)
    write_report(output, result, markdown(result))

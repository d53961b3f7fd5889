"""`e2e PIPELINE DATA`: a pipeline with an NER reads the test documents' raw text;
NER, mention-level linking and document-level concept P/R/F1 with bootstrap
intervals over documents, the same linker on the gold spans beside them, and
the time spent end to end and in each component (`bench.e2e`)."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer

from ._app import app, setup_logging, write_json

logger = logging.getLogger(__name__)


def run_pipeline(nlp, texts: List[str], batch_size: int = 32):
    """The docs of `texts` through every component, and the seconds each took
    (the tokenizer included)."""
    started = time.perf_counter()
    docs = [nlp.make_doc(text) for text in texts]
    seconds: Dict[str, float] = {"tokenizer": time.perf_counter() - started}
    for name, proc in nlp.pipeline:
        started = time.perf_counter()
        docs = list(proc.pipe(docs, batch_size=batch_size)) if hasattr(proc, "pipe") else \
            [proc(doc) for doc in docs]
        seconds[name] = time.perf_counter() - started
    return docs, seconds


def one_label(nlp, finders: List[str]) -> Optional[str]:
    """The label of the pipeline's mention finders when they have exactly one
    between them (an NER trained with `spacy-bioel.one_label.v1`), else None."""
    labels = {label for name in finders for label in getattr(nlp.get_pipe(name), "labels", ())}
    return labels.pop() if len(labels) == 1 else None


def evaluate_e2e(pipeline: Path, data: Path, n_bootstrap: int = 1000, limit: int = 0,
                 label: Optional[str] = None, ner: Optional[str] = None) -> Dict[str, Any]:
    """The report of `e2e`; with `ner` ('shipped' or a trained NER pipeline), that
    NER is put before the pipeline's linker in memory, as `add-ner` saves it, and
    the report's seed is the NER's."""
    from spacy_bioel.errors import BioELError, Errors
    from spacy_bioel.pipeline.embedded_default import load_ner_source, with_ner
    from spacy_bioel.pipeline.loading import find_linker, load_pipeline, mention_finders, \
        upstream_annotated
    from spacy_bioel.training.readers import gold_spans_doc

    from .. import e2e
    from ..bioel_worker import peak_rss_mb
    from ._app import read_docs

    nlp = load_pipeline(pipeline)
    linker = find_linker(nlp)
    seed = nlp.config.interpolate()["training"].get("seed")
    if ner:
        source = load_ner_source(ner, nlp.vocab)
        seed = source.config.interpolate()["training"].get("seed")
        nlp = with_ner(nlp, source, linker.name)
    finders = mention_finders(nlp, linker)
    if not finders:
        raise BioELError(Errors.E198.format(text=str(pipeline), why=(
            "the pipeline has no NER before its linker, so it cannot read raw text")))
    gold_docs = read_docs([data])
    gold_docs = gold_docs[:limit] if limit else gold_docs
    docs, seconds = run_pipeline(nlp, [d.text for d in gold_docs])
    key = linker.cfg["spans_key"]
    label = label or one_label(nlp, finders)
    end_to_end = [e2e.gold_result(g, e2e.predicted_mentions(d, key, label), label)
                  for g, d in zip(gold_docs, docs)]
    # the same linker on the gold spans (no NER): what the NER costs
    spans = upstream_annotated(nlp, linker, [gold_spans_doc(nlp, g) for g in gold_docs])
    started = time.perf_counter()
    on_gold = list(linker.pipe(spans))
    gold_seconds = time.perf_counter() - started
    gold_spans = [e2e.gold_result(g, e2e.predicted_mentions(d, label=label), label)
                  for g, d in zip(gold_docs, on_gold)]
    total = sum(seconds.values())
    ner_seconds = sum(seconds[n] for n in nlp.pipe_names[:nlp.pipe_names.index(linker.name)])
    return {
        "pipeline": str(pipeline), "ner": ner, "data": str(data), "documents": len(gold_docs),
        "label": label, "seed": seed,
        "end_to_end": e2e.scores(end_to_end, n_bootstrap),
        "document_errors": e2e.total_document_errors(end_to_end),
        "gold_spans": e2e.scores(gold_spans, n_bootstrap),
        "unrepresentable": e2e.unrepresentable(gold_docs, nlp.make_doc),
        "peak_rss_mb": round(peak_rss_mb(), 1),  # the process: loading, the pipeline, the gold spans
        "speed": {"docs_per_s": len(gold_docs) / total if total else None,
                  "seconds": {k: round(v, 3) for k, v in seconds.items()},
                  "share_ner": ner_seconds / total if total else None,
                  "share_linker": seconds[linker.name] / total if total else None,
                  "linker_on_gold_spans_s": round(gold_seconds, 3)},
        "bootstrap": n_bootstrap}


def markdown(report: Dict[str, Any], title: str) -> str:
    lines = [f"# {title}", "", f"{report['documents']} documents of {report['data']}; pipeline "
             f"{report['pipeline']}" + (f" with the NER {report['ner']} before its linker"
                                        if report.get("ner") else "")
             + f"; 95% intervals from {report['bootstrap']} bootstrap resamples "
             "of the documents." + (f" Every mention, gold and predicted, is scored as one label "
                                    f"({report['label']})." if report.get("label") else ""), "",
             "| spans | measure | P | R | F1 | F1 95% CI |", "|---|---|---:|---:|---:|---|"]
    for spans in ("end_to_end", "gold_spans"):
        for measure, name in (("ner", "NER strict"), ("mentions", "mention-level linking"),
                              ("documents", "document-level concepts")):
            if spans == "gold_spans" and measure == "ner":
                continue
            row = report[spans][measure]
            ci = row["ci95"].get("f", [None, None])
            interval = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci[0] is not None else ""
            lines.append(f"| {'NER' if spans == 'end_to_end' else 'gold'} | {name} | "
                         f"{100 * row['p']:.1f} | {100 * row['r']:.1f} | {100 * row['f']:.1f} | {interval} |")
    unrep, speed = report["unrepresentable"], report["speed"]
    lines += ["", f"Gold mentions a flat NER cannot produce: {unrep['overlapping']} overlapping and "
                  f"{unrep['not_token_aligned']} not on token edges, of {unrep['gold_mentions']}.",
              f"End to end: {speed['docs_per_s']:.1f} docs/s; NER {100 * speed['share_ner']:.0f}% "
              f"of the time, linker {100 * speed['share_linker']:.0f}%"
              + (f"; peak RSS {report['peak_rss_mb']:.0f} MB." if report.get("peak_rss_mb") else ".")]
    if report.get("document_errors"):
        lines += ["", "Document-level errors end to end (NER: no span, other edges, spurious; "
                      "linker: an exact span):", "", "| error | concepts |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in report["document_errors"].items()]
    return "\n".join(lines) + "\n"


@app.command("e2e")
def e2e_command(
    pipeline: Path = typer.Argument(..., help="A trained pipeline with an NER before its linker"),
    data: Path = typer.Argument(..., help="Gold documents (.spacy from convert): their raw text is read"),
    output: Path = typer.Option(..., "--output", help="JSON report (a .md table beside it)"),
    title: str = typer.Option("End-to-end evaluation", "--title"),
    n_bootstrap: int = typer.Option(1000, "--bootstrap", min=0, help="Resamples of the documents"),
    limit: int = typer.Option(0, "--limit", min=0, help="First N documents only (0: all)"),
    label: Optional[str] = typer.Option(None, "--label", help=(
        "Score every mention, gold and predicted, as this one label (strict NER then matches "
        "spans only); default: the NER's label when it has exactly one, else the corpus's labels")),
    ner: Optional[str] = typer.Option(None, "--ner", help=(
        "Put this NER before PIPELINE's linker first, as `add-ner` does: 'shipped' or a trained "
        "NER pipeline (PIPELINE may then be a linker without an NER)")),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Raw text in, linked concepts out: NER strict P/R/F1, mention-level linking
    P/R/F1 (exact span, right id), document-level concept P/R/F1 (BioCreative V
    CDR protocol), each with bootstrap intervals over documents; the same linker
    on the gold spans beside them; docs/s and the share of time in the NER and
    the linker."""
    setup_logging(verbose)
    report = evaluate_e2e(pipeline, data, n_bootstrap, limit, label, ner)
    write_json(output, report)
    output.with_suffix(".md").write_text(markdown(report, title), encoding="utf-8")
    for spans in ("end_to_end", "gold_spans"):
        typer.echo(f"{spans}: " + ", ".join(f"{m} F1 {100 * report[spans][m]['f']:.1f}"
                                             for m in report[spans]))


_STREAM_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
from bioel_worker import peak_rss_mb
start = time.perf_counter()
import spacy
from spacy.tokens import DocBin
nlp = spacy.load(sys.argv[1])
loaded = time.perf_counter()
texts = [d.text for d in DocBin().from_disk(sys.argv[2]).get_docs(nlp.vocab)]
mentions = 0
begin = time.perf_counter()
for doc in nlp.pipe(texts):
    mentions += len(doc.ents)
seconds = time.perf_counter() - begin
print(json.dumps({"documents": len(texts), "mentions": mentions, "docs_per_s": len(texts) / seconds,
                  "load_s": loaded - start, "peak_rss_mb": peak_rss_mb(),
                  "torch_imported": sys.modules.get("torch") is not None}))
"""


@app.command("e2e-memory")
def e2e_memory_command(
    pipeline: Path = typer.Argument(..., help="A pipeline that reads plain text (e.g. from add-ner)"),
    data: Path = typer.Argument(..., help="Documents (.spacy): their raw text is streamed through nlp.pipe"),
    output: Path = typer.Option(..., "--output", help="JSON report"),
    python: List[str] = typer.Option([], "--python", help="The interpreter of each install to run it in (default: this one); repeatable"),
) -> None:
    """What a user's process holds: a fresh process of each install loads PIPELINE
    and streams DATA's raw texts through `nlp.pipe` (nothing kept); its peak RSS,
    docs/s, load seconds and whether PyTorch was imported."""
    import json
    import subprocess
    import sys

    from spacy_bioel.errors import BioELError, Errors

    from ..machine import where

    rows = {}
    for interpreter in python or [sys.executable]:
        done = subprocess.run([interpreter, "-c", _STREAM_CHILD, str(pipeline), str(data),
                               str(Path(__file__).resolve().parents[1])],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise BioELError(Errors.E181.format(command=f"{interpreter} (e2e-memory)",
                                                problem=done.stderr[-1500:]))
        rows[interpreter] = json.loads(done.stdout.strip().splitlines()[-1])
        typer.echo(f"{interpreter}: {rows[interpreter]}")
    write_json(output, {"pipeline": str(pipeline), "data": str(data), "installs": rows,
                        "where": where()})


@app.command("e2e-threshold")
def e2e_threshold_command(
    pipeline: Path = typer.Argument(..., help="A tuned linker's pipeline (with --ner: one without an NER)"),
    data: Path = typer.Argument(..., help="Dev documents (.spacy): their raw text is read"),
    ner: List[str] = typer.Option([], "--ner", help="An NER put before the linker, as `add-ner` does; repeatable (one row each)"),
    thresholds: List[float] = typer.Option([0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95], "--threshold"),
    output: Path = typer.Option(..., "--output", help="JSON report"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Issue 73, the linker's score in the document's concepts, on dev: the pipeline
    reads the raw text once; a mention linked with a calibrated probability under t
    counts as NIL; document-level P/R/F1 for each t (the pipeline's own NIL rule
    still applies below it)."""
    from spacy_bioel.pipeline.embedded_default import load_ner_source, with_ner
    from spacy_bioel.pipeline.loading import find_linker, load_pipeline
    from spacy_bioel.pipeline.mentions import mention_spans

    from .. import e2e
    from ._app import read_docs

    setup_logging(verbose)
    report: Dict[str, Any] = {"pipeline": str(pipeline), "data": str(data), "rows": {}}
    gold = read_docs([data])
    for source in ner or [None]:
        nlp = load_pipeline(pipeline)  # afresh for each NER: with_ner changes it
        linker = find_linker(nlp)
        if source:
            nlp = with_ner(nlp, load_ner_source(source, nlp.vocab), linker.name)
        docs = list(nlp.pipe(d.text for d in gold))
        label = one_label(nlp, nlp.pipe_names[:nlp.pipe_names.index(linker.name)])
        row = {}
        for t in thresholds:
            results = [e2e.gold_result(g, {(s.start_char, s.end_char, label or s.label_): (
                s.kb_id_ if s.kb_id_ and (s._.kb_prob or 0.0) >= t else e2e.NIL)
                for s in mention_spans(d, linker.cfg["spans_key"])}, label) for g, d in zip(gold, docs)]
            row[str(t)] = {k: round(v, 4) for k, v in e2e.scores(results, 0)["documents"].items()
                           if k in ("p", "r", "f")}
        report["rows"][source or str(pipeline)] = row
        typer.echo(f"{source or pipeline}: " + ", ".join(f"t={t}: F1 {100 * v['f']:.2f}" for t, v in row.items()))
    write_json(output, report)


@app.command("out-of-the-box")
def out_of_the_box_command(
    corpora: List[str] = typer.Argument(..., help="NAME=TEST.spacy, e.g. ncbi=corpus/ncbi/test.spacy (raw text read; the shipped NER never trained on test)"),
    output: Path = typer.Option(..., "--output", help="JSON report (a .md table beside it)"),
    id_space: str = typer.Option("MESH", "--id-space", help="The corpora's vocabulary, reached through the KB's cross-references"),
    n_bootstrap: int = typer.Option(1000, "--bootstrap", min=0, help="Resamples of the documents"),
    limit: int = typer.Option(0, "--limit", min=0, help="First N documents of each corpus (0: all)"),
    link_calls: int = typer.Option(3, "--calls", min=0, help="Fresh-process `link` calls timed (0: none; the first builds the pipeline)"),
    pythons: List[str] = typer.Option([], "--python", help="Also time the `link` calls with this interpreter (e.g. the base install's, .venv-deploy/bin/python); repeatable"),
    ner: Optional[Path] = typer.Option(None, "--ner", help="A trained NER pipeline in place of the shipped one (read on dev sets to choose it; the `link` calls keep the shipped one)"),
    settings: List[str] = typer.Option([], "--set", help="A linker setting KEY=VALUE changed from the default (e.g. nil_undefined_abbreviations=false, to measure it on dev), repeatable; the `link` calls keep the default"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """The default pipeline a user gets (shipped NER + untrained linker on the
    embedded KB) on raw test text: NER strict F1, document-level concept F1 in
    --id-space with the cross-references' ceiling, a dictionary matcher as the
    floor, docs/s, and `link` in a fresh process (first call, later calls, peak
    RSS)."""
    from ..out_of_the_box import calls, evaluate, markdown
    from ._app import labelled

    setup_logging(verbose)
    paths = {name: Path(path) for name, path in labelled(corpora, "TEST.spacy", "CORPORA").items()}
    timed = calls(link_calls, pythons) if link_calls else None  # first: on idle cores, before the rest
    from spacy_bioel.cli.evaluate import parse_settings

    report = evaluate(paths, id_space, n_bootstrap, limit, ner, parse_settings(settings))
    if timed:
        report["link_calls"] = timed
    write_json(output, report)
    output.with_suffix(".md").write_text(markdown(report, timed), encoding="utf-8")
    typer.echo(markdown(report, timed))


def report_to(output: Path, report: Dict[str, Any], markdown, title: str) -> None:
    """Write `report` as JSON to `output` and its markdown table beside it, and print
    the table."""
    write_json(output, report)
    text = markdown(report, title)
    output.with_suffix(".md").write_text(text, encoding="utf-8")
    typer.echo(text)


@app.command("ner-dev")
def ner_dev_command(
    model: Path = typer.Argument(..., help="A pipeline with an `ner` trained without the dev sets"),
    corpora: List[str] = typer.Argument(..., help="NAME=DEV.spacy, e.g. ncbi=corpus/ncbi/dev.spacy (raw text read)"),
    output: Path = typer.Option(..., "--output", help="JSON report (a .md table beside it)"),
    title: str = typer.Option("NER on dev, with document consistency", "--title"),
    n_bootstrap: int = typer.Option(1000, "--bootstrap", min=0, help="Resamples of the documents"),
    id_space: Optional[str] = typer.Option(None, "--id-space", help="Also link with the default pipeline's linker and score document-level concepts in this vocabulary (e.g. MESH)"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """An NER's strict F1 on each dev set as it finds mentions and after each
    variant of `bioel_mention_consistency` (abbreviations, repeats, both): the
    variant the shipped pipeline keeps is chosen here."""
    from ..ner_dev import evaluate, markdown
    from ._app import labelled

    setup_logging(verbose)
    paths = {name: Path(path) for name, path in labelled(corpora, "DEV.spacy", "CORPORA").items()}
    report_to(output, evaluate(model, paths, n_bootstrap, id_space), markdown, title)


@app.command("ner-across")
def ner_across_command(
    models: List[str] = typer.Argument(..., help="NAME=PIPELINE with an `ner`, e.g. joint=training/default_ner_dev/model-best"),
    corpora: List[str] = typer.Option(..., "--corpus", help="NAME=TEST.spacy (raw text read); repeatable"),
    output: Path = typer.Option(..., "--output", help="JSON report (a .md table beside it)"),
    title: str = typer.Option("NERs across corpora", "--title"),
    n_bootstrap: int = typer.Option(1000, "--bootstrap", min=0, help="Resamples of the documents"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Each NER on each corpus' raw test text (with the shipped pipeline's
    document consistency): strict F1 with bootstrap intervals, a per-corpus NER
    on its own corpus and on the other, a joint one on both."""
    from ..ner_across import evaluate, markdown
    from ._app import labelled

    setup_logging(verbose)
    report = evaluate({n: Path(p) for n, p in labelled(models, "PIPELINE", "MODELS").items()},
                      {n: Path(p) for n, p in labelled(corpora, "TEST.spacy", "--corpus").items()},
                      n_bootstrap)
    report_to(output, report, markdown, title)


@app.command("ner-across-seeds")
def ner_across_seeds_command(
    reports: List[Path] = typer.Argument(..., help="ner-across JSON reports, one per seed"),
    output: Path = typer.Option(..., "--output", help="Markdown table (a .json beside it)"),
    title: str = typer.Option("NERs across corpora, over seeds", "--title"),
) -> None:
    """Strict F1 of each NER on each corpus pooled over the seeds' ner-across
    reports: mean ± sample std."""
    import srsly

    from ..ner_across import pooled, pooled_markdown

    table = pooled([srsly.read_json(path) for path in reports])
    note = "Pooled from " + ", ".join(f"`{path}`" for path in reports) + "."
    write_json(output.with_suffix(".json"), table)
    output.write_text(pooled_markdown(table, title, note), encoding="utf-8")
    typer.echo(pooled_markdown(table, title, note))


__all__ = ["evaluate_e2e", "run_pipeline", "markdown"]

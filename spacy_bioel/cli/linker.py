"""Commands around a bioel_linker pipeline: build an untrained one, tune the kNN
interpolation and NIL threshold on dev, rebuild the datastore."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Dict, List, Optional

import typer

from ._app import app, read_docs, setup_logging, split_csv, write_json

logger = logging.getLogger(__name__)


@app.command("init-pipeline", context_settings={"allow_extra_args": True,
                                                 "ignore_unknown_options": True})
def init_pipeline(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., help="Training config, e.g. configs/linker.cfg"),
    output: Path = typer.Argument(..., help="Directory for the initialized (untrained) pipeline"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Initialize a pipeline from a config without training (the 'untrained
    encoder' baseline): encodes the KB and builds the datastore.
    Overrides as in spacy train: --paths.kb KB --paths.train T ..."""
    from spacy.cli._util import parse_config_overrides
    from spacy.training.initialize import init_nlp
    from spacy.util import load_config

    setup_logging(verbose)
    config = load_config(config_path, overrides=parse_config_overrides(ctx.args), interpolate=False)
    nlp = init_nlp(config)
    nlp.to_disk(output)
    typer.echo(f"Saved initialized pipeline to {output}")


def _linker(nlp, name: Optional[str]):
    names = [n for n, p in nlp.pipeline if type(p).__name__ == "BioELLinker"]
    if not names:
        from ..errors import BioELError, Errors
        raise BioELError(Errors.E163.format(names=nlp.pipe_names))
    return nlp.get_pipe(name or names[0])


@app.command("tune")
def tune(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a bioel_linker"),
    dev: Path = typer.Argument(..., help="DEV DocBin (never the test set)"),
    output: Path = typer.Option(Path("tuning.json"), "--output", help="Grid results (JSON, .md beside)"),
    ks: str = typer.Option("1,4,8,16,32", "--k", help="Neighbour counts"),
    lambdas: str = typer.Option("0,0.1,0.2,0.3,0.5,0.7", "--lambda", help="Interpolation weights"),
    beta1s: str = typer.Option("0.01,0.05,0.1,0.2", "--beta1", help="Model temperatures"),
    beta2s: str = typer.Option("0.1,0.5,1,5", "--beta2", help="kNN temperatures"),
    write: bool = typer.Option(True, "--write/--no-write", help="Write the best values into the pipeline"),
    name: Optional[str] = typer.Option(None, "--component", help="Linker name (default: the first)"),
) -> None:
    """Grid-search k, lambda, beta1, beta2 (kNN-BioEL eqs. 4-6) for dev Acc@1 and,
    where dev has gold NIL, the NIL threshold for NIL F1; write them back."""
    import spacy
    import srsly

    from ..corpora.documents import split_gold_ids
    from ..datastore.knn import grid_accuracy
    from ..nil.threshold import calibrate_nil_threshold

    setup_logging()
    nlp = spacy.load(pipeline)
    linker = _linker(nlp, name)
    docs = read_docs([dev])
    spans = [ent for doc in docs for ent in doc.ents if ent.kb_id_]
    gold = [set(split_gold_ids(e.kb_id_)) for e in spans]
    embeddings = linker.embed([linker._mention_input(e) for e in spans], "mention", progress=True)
    top_k = linker.cfg["top_k"]
    candidates = linker.store.search(embeddings, k=min(top_k, len(linker.names.concept_ids)))
    k_values = [int(v) for v in split_csv(ks)]
    neighbours = linker.datastore.search(embeddings, max(k_values))
    linkable = [i for i, g in enumerate(gold) if g]
    rows: List[Dict[str, float]] = grid_accuracy(
        [candidates[i] for i in linkable], [neighbours[i] for i in linkable],
        [gold[i] for i in linkable], k_values, [float(v) for v in split_csv(lambdas)],
        [float(v) for v in split_csv(beta1s)], [float(v) for v in split_csv(beta2s)])
    best = max(rows, key=lambda r: (r["acc@1"], -r["lambda"]))
    result: Dict[str, object] = {"dev": str(dev), "n": len(linkable), "best": best, "grid": rows}
    gold_nil = [not g for g in gold]
    if any(gold_nil):
        # calibrate on the very nil_score the component writes (tuned kNN values,
        # abbreviation expansion included), not on a re-derivation of it
        linker.cfg.update({"knn_k": best["k"], "knn_lambda": best["lambda"],
                           "knn_beta1": best["beta1"], "knn_beta2": best["beta2"],
                           "use_knn": best["lambda"] > 0})
        predicted = linker.predict(docs)
        nil_scores = [pred["nil_score"] for doc, doc_predictions in zip(docs, predicted)
                      for ent, pred in zip(doc.ents, doc_predictions) if ent.kb_id_]
        result["nil"] = calibrate_nil_threshold(nil_scores, gold_nil)
    if write:
        cfg_path = pipeline / linker.name / "cfg"
        cfg = srsly.read_json(cfg_path)
        cfg.update({"knn_k": best["k"], "knn_lambda": best["lambda"], "knn_beta1": best["beta1"],
                    "knn_beta2": best["beta2"], "use_knn": best["lambda"] > 0})
        if "nil" in result:
            cfg["nil_threshold"] = result["nil"]["threshold"]
        srsly.write_json(cfg_path, cfg)
    write_json(output, result)
    lines = ["| k | lambda | beta1 | beta2 | dev Acc@1 |", "|---:|---:|---:|---:|---:|"]
    for row in sorted(rows, key=lambda r: -r["acc@1"])[:10]:
        lines.append(f"| {row['k']} | {row['lambda']} | {row['beta1']} | {row['beta2']} | "
                     f"{100 * row['acc@1']:.1f} |")
    output.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    typer.echo("\n".join(lines))
    typer.echo(f"best: {best}" + (f"; NIL: {result['nil']}" if "nil" in result else ""))


@app.command("rebuild-datastore")
def rebuild_datastore(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a bioel_linker"),
    data: List[Path] = typer.Argument(..., help="DocBins whose gold mentions become the datastore"),
    output: Optional[Path] = typer.Option(None, "--output", help="Where to save (default: in place)"),
    name: Optional[str] = typer.Option(None, "--component"),
) -> None:
    """Re-encode a trained pipeline's kNN datastore from any DocBin(s)."""
    import spacy

    nlp = spacy.load(pipeline)
    linker = _linker(nlp, name)
    n = linker.build_datastore(read_docs(list(data)))
    nlp.to_disk(output or pipeline)
    typer.echo(f"Datastore rebuilt with {n} mentions; saved to {output or pipeline}")

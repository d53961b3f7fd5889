"""Commands around a bioel_linker pipeline: build an untrained one, tune it on
dev, rebuild its datastore, repair or seal it, swap a stage."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import typer

from ._app import app, load_pipeline, read_docs, save_tuning, setup_logging, split_csv

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
    if "training" not in config:  # a partial config: spaCy's defaults for what it leaves out
        from spacy.util import load_model_from_config

        config = load_model_from_config(config, auto_fill=True, validate=True).config
    nlp = init_nlp(config)
    output.parent.mkdir(parents=True, exist_ok=True)  # spaCy creates the last folder only
    nlp.to_disk(output)
    typer.echo(f"Saved initialized pipeline to {output}")


@app.command("tune")
def tune(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a bioel_linker"),
    dev: Path = typer.Argument(..., help="DEV DocBin (never the test set)"),
    output: Path = typer.Option(Path("tuning.json"), "--output", help="Grid results (JSON, .md beside)"),
    ks: str = typer.Option("1,4,8,16,32", "--k", help="Neighbour counts"),
    lambdas: str = typer.Option("0,0.1,0.2,0.3,0.5,0.7", "--lambda", help="Interpolation weights"),
    beta1s: str = typer.Option("0.01,0.05,0.1,0.2", "--beta1", help="Model temperatures"),
    beta2s: str = typer.Option("0.1,0.5,1,5", "--beta2", help="kNN temperatures"),
    sparse_weights: str = typer.Option("0,0.1,0.2,0.3,0.5", "--sparse-weight", help="Hybrid candidates: weights of the TF-IDF side to try"),
    write: bool = typer.Option(True, "--write/--no-write", help="Save the tuned pipeline (nlp.to_disk)"),
    save_to: Optional[Path] = typer.Option(None, "--save-to", help="Where to save (default: in place)"),
    name: Optional[str] = typer.Option(None, "--component", help="Linker name (default: the first)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Tune on dev, scoring exactly as the linker predicts: k, lambda, beta1, beta2
    (kNN-BioEL eqs. 4-6), a hybrid generator's sparse weight and whether the
    exact shortcut defers to the training mentions, for dev Acc@1, then the NIL
    stage's calibration (and, where dev has gold NIL, its
    threshold for NIL F1). Saves the pipeline with nlp.to_disk."""
    from ..pipeline.loading import find_linker, upstream_annotated
    from ..pipeline.tuning import tune_linker

    setup_logging(verbose)
    nlp = load_pipeline(pipeline)
    linker = find_linker(nlp, name)
    grid = {"k": [int(v) for v in split_csv(ks)], "lambda": [float(v) for v in split_csv(lambdas)],
            "beta1": [float(v) for v in split_csv(beta1s)], "beta2": [float(v) for v in split_csv(beta2s)]}
    result = tune_linker(linker, upstream_annotated(nlp, linker, read_docs([dev])), grid,
                         [float(v) for v in split_csv(sparse_weights)])
    result["dev"] = str(dev)
    lines = ["| k | lambda | beta1 | beta2 | dev Acc@1 |", "|---:|---:|---:|---:|---:|"]
    for row in sorted(result["grid"], key=lambda r: -r["acc@1"])[:10]:
        lines.append(f"| {row['k']} | {row['lambda']} | {row['beta1']} | {row['beta2']} | "
                     f"{100 * row['acc@1']:.1f} |")
    for row in result["sparse_weights"]:
        lines.append(f"\nsparse_weight {row['sparse_weight']}: dev Acc@1 {100 * row['acc@1']:.1f}")
    for row in result["deference"]:
        lines.append(f"\nthe shortcut deferring to training mentions {row['defer_to_training']}"
                     f"{'' if row['sparse_weight'] is None else ', sparse_weight ' + str(row['sparse_weight'])}: "
                     f"dev Acc@1 {100 * row['acc@1']:.2f}")
    save_tuning(nlp, pipeline, save_to, write, output, result, lines)
    typer.echo(f"best: {result['best']}; NIL: {result['nil']}")


@app.command("rebuild-datastore")
def rebuild_datastore(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a bioel_linker"),
    data: List[Path] = typer.Argument(..., help="DocBins whose gold mentions become the datastore"),
    output: Optional[Path] = typer.Option(None, "--output", help="Where to save (default: in place)"),
    add: bool = typer.Option(False, "--add", help="Add the DocBins' mentions to the datastore instead of replacing it, "
                             "e.g. dev's after `tune` (the final fit)"),
    name: Optional[str] = typer.Option(None, "--component"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Re-encode a trained pipeline's kNN datastore from any DocBin(s), or with
    --add add their gold mentions to it. After `tune`, adding dev's annotated
    mentions is the final fit of the anchors' protocol, train + dev
    (docs/results/accuracy.md). Evaluate the result on test only: dev's
    mentions are then their own neighbours."""
    setup_logging(verbose)
    from ..pipeline.loading import find_linker

    nlp = load_pipeline(pipeline)
    linker = find_linker(nlp, name)
    before = len(linker.datastore) if add and linker.datastore is not None else 0
    n = linker.build_datastore(read_docs(list(data)), add=add)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output or pipeline)
    typer.echo(f"Datastore {'of ' + str(before) + ' mentions grown to' if add else 'rebuilt with'} "
               f"{n} mentions; saved to {output or pipeline}")


@app.command("repair-pipeline")
def repair_pipeline(
    pipeline: Path = typer.Argument(..., help="A saved pipeline whose index or datastore is damaged"),
    output: Path = typer.Argument(..., help="Where to save the repaired pipeline"),
    kb_path: Optional[Path] = typer.Option(None, "--kb", help="A KB file replacing the saved one"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Re-create the derived parts of each bioel_linker (the name index and the
    kNN datastore; with --kb also the KB) from its weights, KB and training
    mentions, and save the pipeline (with a fresh manifest)."""
    from ..kb.knowledge_base import KnowledgeBase
    from ..pipeline.loading import repair_pipeline as repair

    setup_logging(verbose)
    kb = KnowledgeBase.from_disk(kb_path) if kb_path else None
    output.parent.mkdir(parents=True, exist_ok=True)
    repair(pipeline, kb).to_disk(output)
    typer.echo(f"Repaired {pipeline} -> {output}")


@app.command("seal-pipeline")
def seal_pipeline(
    pipeline: Path = typer.Argument(..., help="A saved pipeline whose files you have checked"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Record the files of PIPELINE as they are now in each bioel component's
    manifest.json: the settings edited in its config.cfg become the component's
    own (no W018 after), a changed tokenizer or meta is accepted (no E233). Loading
    checks the files against it (E176, E233): run this only on files you trust."""
    from ..errors import BioELError, Errors
    from ..files import check_tree
    from ..pipeline.integrity import MANIFEST, seal

    setup_logging(verbose)
    check_tree(pipeline)
    sealed = [p for p in sorted(pipeline.iterdir()) if p.is_dir() and (p / "cfg").is_file()
              and (p / MANIFEST).is_file()]
    if not sealed:
        raise BioELError(Errors.E163.format(names=[p.name for p in pipeline.iterdir() if p.is_dir()]))
    for component in sealed:
        edits = seal(component)
        for key, (before, now) in edits.items():
            typer.echo(f"{component.name}: {key}: {before!r} -> {now!r}")
    typer.echo(f"Sealed {', '.join(p.name for p in sealed)} of {pipeline}")


STAGES = ("candidates", "shortcut", "type_filter", "ranker", "nil", "runtime", "index")


@app.command("set-stage")
def set_stage(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a bioel_linker"),
    output: Path = typer.Argument(..., help="Where to save the changed pipeline"),
    stage: str = typer.Argument(..., help="candidates | shortcut | type_filter | ranker | nil | runtime | index"),
    function: str = typer.Argument(..., help="A registered name, e.g. spacy-bioel.HybridCandidates.v1, or null"),
    params: List[str] = typer.Option([], "--param", help="KEY=VALUE argument of the function (JSON values), repeatable"),
    settings: List[str] = typer.Option([], "--setting", help="KEY=VALUE linker setting to change too (e.g. retrieve_k=16), repeatable"),
    name: Optional[str] = typer.Option(None, "--component"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Swap one stage of a trained linker (its encoder, index and datastore are
    kept, nothing is re-encoded): e.g. hybrid candidates, a type filter
    (--param 'allowed={"HP": ["human_phenotype"]}'), the exact-name shortcut,
    the ONNX runtime (--param quantize='"int8"': the mention tower is exported
    when saving), or another index type over the same embeddings; `--setting`
    changes a linker setting as well (e.g. retrieve_k=16). The config is
    updated too."""
    from .evaluate import parse_settings

    setup_logging(verbose)
    block = None if function == "null" else {"@misc": function, **parse_settings(params)}
    nlp, linker_name = swap_stage(pipeline, stage, lambda _: block, name, parse_settings(settings))
    output.parent.mkdir(parents=True, exist_ok=True)  # spaCy creates the last folder only
    nlp.to_disk(output)
    changed = f"; settings {settings}" if settings else ""
    typer.echo(f"{linker_name}.{stage} = {function} {params or ''}{changed}; saved to {output}")


def swap_stage(pipeline: Path, stage: str, new_block: Callable[[Optional[dict]], Optional[dict]],
               name: Optional[str] = None, settings: Optional[Dict[str, Any]] = None):
    """Load a saved pipeline with one stage of its linker replaced: `new_block`
    maps the stage's config block (None: no stage) to the new one; `settings`
    (e.g. {"retrieve_k": 16}) change the linker's settings (E172, E175). The
    encoder, index and datastore are kept; the config is updated too.
    RETURNS (Tuple[Language, str]): the pipeline and the linker's name."""
    from spacy.util import load_config, registry

    from ..errors import BioELError, Errors
    from ..pipeline.loading import find_linker, load_with_config
    from ..pipeline.settings import CHECKS

    if stage not in STAGES:
        raise BioELError(Errors.E172.format(key=stage, options=list(STAGES)))
    config = load_config(pipeline / "config.cfg", interpolate=False)
    linker_name = name or next((n for n, block in config["components"].items()
                                if block.get("factory") == "bioel_linker"), None)
    if linker_name not in config["components"]:
        raise BioELError(Errors.E163.format(names=list(config["components"])))
    old = config["components"][linker_name].get(stage)
    block = new_block(dict(old) if old is not None else None)
    config["components"][linker_name][stage] = block
    for key in settings or {}:
        if key not in CHECKS:
            raise BioELError(Errors.E172.format(key=key, options=sorted(CHECKS)))
    config["components"][linker_name].update(settings or {})  # the factory checks values (E175)
    nlp = load_with_config(pipeline, config)
    linker = find_linker(nlp, linker_name)
    fresh = registry.resolve({"stage": block})["stage"] if block is not None else None
    linker.set_stage(stage, fresh)  # not the saved parameters of the stage it replaces
    return nlp, linker_name

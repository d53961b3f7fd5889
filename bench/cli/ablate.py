"""`ablate SPEC`: train every variant of a loss x negatives grid with several
seeds (the same epochs each; the last checkpoint is evaluated), tune kNN on
dev, evaluate on test with the kNN datastore off and on (each with a NIL
threshold calibrated on dev for that setting); `ablate-table`: mean +- std
over seeds, one markdown table, NIL PR plots.

Runs are resumable: each (variant, seed) writes one small JSON under
RESULTS/<dataset>/ and is skipped when that file exists, so a long grid can
be spread over several sessions (or machines) and the table made from what is
there (it states the seed count of every row).
"""
from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer

from ._app import app, load_pipeline, read_docs, setup_logging, split_csv, write_json

logger = logging.getLogger(__name__)


def load_spec(path: Path) -> dict:
    """The grid: {'seeds': [...], 'overrides': {...}, 'variants': {name: {'config',
    'overrides', 'describe'}}}; the top-level overrides (the training budget)
    apply to every variant, a variant's own override wins."""
    import srsly

    from spacy_bioel.errors import BioELError, Errors

    spec = srsly.read_yaml(path)
    variants = spec.get("variants") if isinstance(spec, dict) else None
    if not variants or not isinstance(variants, dict):
        raise BioELError(Errors.E166.format(path=path, problem="no 'variants' mapping"))
    shared = spec.get("overrides") or {}
    if not isinstance(shared, dict):
        raise BioELError(Errors.E166.format(path=path, problem="'overrides' is not a mapping"))
    for name, variant in variants.items():
        if not isinstance(variant, dict) or "config" not in variant:
            raise BioELError(Errors.E166.format(path=path, problem=f"variant '{name}' has no config"))
        variant["overrides"] = {**shared, **(variant.get("overrides") or {})}
        check_overrides(path, name, variant)
    return spec


def check_overrides(path: Path, name: str, variant: dict) -> None:
    """Each override must be a dotted key whose block exists in the variant's
    config ('training.max_epochs', 'components.bioel_linker.model.frozen_layers':
    a block's parameter may be a default not written in the file), with a scalar
    value: the overrides become `spacy train` flags, and a key such as 'code'
    would make it import a Python file."""
    from spacy.util import load_config

    from spacy_bioel.errors import BioELError, Errors

    config_path = Path(variant["config"])
    if not config_path.is_file():
        raise BioELError(Errors.E166.format(path=path, problem=f"variant '{name}': config "
                                            f"{config_path} not found"))
    config = load_config(config_path, interpolate=False)
    for key, value in variant["overrides"].items():
        node: Any = config
        parts = str(key).split(".")
        for part in parts[:-1]:
            node = node.get(part, _MISSING) if isinstance(node, dict) else _MISSING
        if len(parts) < 2 or not isinstance(node, dict) or not _PARAM.match(parts[-1]) or \
                isinstance(node.get(parts[-1]), dict):
            raise BioELError(Errors.E166.format(path=path, problem=(
                f"variant '{name}': override '{key}' is not a setting of {config_path} "
                "(use a dotted key that exists there, e.g. training.max_epochs)")))
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise BioELError(Errors.E166.format(path=path, problem=(
                f"variant '{name}': override '{key}' has a {type(value).__name__} value; "
                "give a string, number or boolean")))


_MISSING = object()
_PARAM = re.compile(r"^@?[A-Za-z_][A-Za-z0-9_]*$")


def train_command(variant: dict, seed: int, output: Path, paths: Dict[str, Path],
                  extra: Dict[str, str]) -> List[str]:
    """`python -m spacy train` for one (variant, seed). A '{seed}' in a string
    override becomes the run's seed, so each seed can start from its own
    weights (`paths.encoder: training/encoders/minilm-kb/s{seed}`)."""
    command = [sys.executable, "-m", "spacy", "train", str(variant["config"]),
               "--output", str(output), "--paths.train", str(paths["train"]),
               "--paths.dev", str(paths["dev"]), "--paths.kb", str(paths["kb"]),
               "--system.seed", str(seed), "--training.seed", str(seed)]
    for key, value in {**(variant.get("overrides") or {}), **extra}.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        command += [f"--{key}", text.replace("{seed}", str(seed))]
    return command


def dev_nil_threshold(nlp, dev_docs, overrides: dict) -> Optional[float]:
    """The NIL threshold that maximises dev NIL F1 for these settings (None
    without gold NIL on dev): nil_score depends on whether kNN is on, so each
    evaluated setting gets its own."""
    import math

    from spacy_bioel.evaluation.linkers import run_pipeline
    from spacy_bioel.nil.threshold import calibrate_nil_threshold

    records = run_pipeline(nlp, dev_docs, overrides=overrides)
    threshold = calibrate_nil_threshold([r.nil_score for r in records],
                                        [r.is_nil for r in records])["threshold"]
    return None if math.isinf(threshold) else float(threshold)


def evaluate_run(nlp, test_docs, dev_docs, kb, train_docs, use_knn: bool) -> dict:
    """The harness's report for one pipeline (gold spans) with kNN on or off and
    a NIL threshold calibrated on dev for that setting, plus the NIL PR curve."""
    from ..ablation import nil_pr_curve
    from spacy_bioel.evaluation.linkers import run_pipeline
    from spacy_bioel.evaluation.metrics import evaluate_records
    from spacy_bioel.evaluation.records import annotate_subsets

    overrides: Dict[str, object] = {"ranker.use_knn": use_knn}
    overrides["nil.threshold"] = dev_nil_threshold(nlp, dev_docs, overrides)
    records = run_pipeline(nlp, test_docs, overrides=overrides)
    annotate_subsets(records, kb, train_docs)
    report = evaluate_records(records, n_bootstrap=0)
    report["nil_threshold"] = overrides["nil.threshold"]
    report["nil_pr_curve"] = nil_pr_curve([r.is_nil for r in records],
                                          [r.nil_score for r in records])
    return report


@app.command("ablate")
def ablate(
    spec_path: Path = typer.Argument(..., help="The grid, e.g. configs/ablations.yml"),
    dataset: str = typer.Option(..., "--dataset", help="Dataset label (results go to RESULTS/DATASET/)"),
    train: Path = typer.Option(..., "--train"),
    dev: Path = typer.Option(..., "--dev", help="Dev DocBin: model selection, kNN and NIL tuning"),
    test: Path = typer.Option(..., "--test"),
    kb_path: Path = typer.Option(..., "--kb"),
    results: Path = typer.Option(Path("results/ablations"), "--results"),
    work: Path = typer.Option(Path("training/ablations"), "--work", help="Training output folders"),
    variants: str = typer.Option("", "--variants", help="Comma-separated subset of the spec's variants"),
    seeds: str = typer.Option("", "--seeds", help="Comma-separated seeds (default: the spec's)"),
    embedding_cache: Optional[Path] = typer.Option(None, "--embedding-cache", help="Folder caching a frozen concept tower's name embeddings across runs"),
    max_minutes: float = typer.Option(0.0, "--max-minutes", help="Start no new run after this many minutes (0: no limit)"),
    keep_models: bool = typer.Option(False, "--keep-models/--drop-models", help="Keep each run's trained pipelines"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Train, tune on dev and evaluate on test every (variant, seed) not done yet."""
    import srsly

    from spacy_bioel.kb.knowledge_base import KnowledgeBase

    setup_logging(verbose)
    spec = load_spec(spec_path)
    chosen = split_csv(variants) or list(spec["variants"])
    unknown = [v for v in chosen if v not in spec["variants"]]
    if unknown:
        from spacy_bioel.errors import BioELError, Errors
        raise BioELError(Errors.E166.format(path=spec_path, problem=f"unknown variants {unknown}"))
    seed_list = [int(s) for s in split_csv(seeds)] or [int(s) for s in spec.get("seeds", [0])]
    kb = KnowledgeBase.from_disk(kb_path)
    test_docs, dev_docs, train_docs = read_docs([test]), read_docs([dev]), read_docs([train, dev])
    paths = {"train": train, "dev": dev, "kb": kb_path}
    extra = {"components.bioel_linker.index.embedding_cache": str(embedding_cache)} if embedding_cache else {}
    start = time.perf_counter()
    todo = [(seed, name) for seed in seed_list for name in chosen  # every variant's first seed first
            if not (results / dataset / f"{name}__seed{seed}.json").exists()]
    typer.echo(f"{dataset}: {len(todo)} of {len(seed_list) * len(chosen)} runs to do")
    for done, (seed, name) in enumerate(todo):
        if max_minutes and (time.perf_counter() - start) / 60 > max_minutes:
            typer.echo(f"Stopping after {done} runs: --max-minutes {max_minutes} reached")
            break
        variant = spec["variants"][name]
        output = work / dataset / f"{name}__seed{seed}"
        typer.echo(f"[{done + 1}/{len(todo)}] {dataset} {name} seed {seed}")
        run_start = time.perf_counter()
        command = train_command(variant, seed, output, paths, extra)
        subprocess.run(command, check=True)
        train_seconds = time.perf_counter() - run_start
        # every variant is compared after the same training budget: model-best could be
        # spaCy's step-0 checkpoint (the untrained encoder) when a loss first lowers dev accuracy
        final = output / "model-last"
        subprocess.run([sys.executable, "-m", "spacy_bioel", "tune", str(final), str(dev),
                        "--output", str(output / "tuning.json")], check=True)
        tuning = srsly.read_json(output / "tuning.json")
        nlp = load_pipeline(final)  # loaded once: each evaluation sets every option it needs
        evaluations = {f"knn_{'on' if knn else 'off'}":
                       evaluate_run(nlp, test_docs, dev_docs, kb, train_docs, knn)
                       for knn in (False, True)}
        write_json(results / dataset / f"{name}__seed{seed}.json", {
            "dataset": dataset, "variant": name, "seed": seed,
            "describe": variant.get("describe", {}), "config": str(variant["config"]),
            "overrides": variant.get("overrides") or {}, "command": command[1:],
            "checkpoint": "model-last", "train_seconds": round(train_seconds, 1),
            "tuned": {"knn": tuning.get("best"), "nil": tuning.get("nil")},
            "evaluations": evaluations,
        })
        if not keep_models:
            shutil.rmtree(output, ignore_errors=True)
    typer.echo(f"Results in {results / dataset}")


@app.command("ablate-table")
def ablate_table(
    results: Path = typer.Argument(Path("results/ablations"), help="Folder of run results"),
    output: Path = typer.Option(Path("results/ablations/ablations.md"), "--output", help="Markdown table (JSON beside it, PNG plots in the same folder)"),
    spec_path: Optional[Path] = typer.Option(None, "--spec", help="The grid (configs/ablations.yml): its 'comparisons' add a table of paired differences"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Mean +- std over seeds for every (dataset, variant, kNN), the spec's
    comparisons (paired by seed), and NIL PR plots."""
    setup_logging(verbose)
    import srsly

    from ..ablation import (ablation_table, compare, comparison_table,
                                       plot_nil_curves, summarise)

    runs = [srsly.read_json(p) for p in sorted(results.glob("*/*__seed*.json"))]
    if not runs:
        from spacy_bioel.errors import BioELError, Errors
        raise BioELError(Errors.E166.format(path=results, problem="no run results (*/*__seed*.json)"))
    rows = summarise(runs)
    table = ablation_table(rows)
    comparisons = compare(runs, load_spec(spec_path).get("comparisons") or []) if spec_path else []
    if comparisons:
        table += "\nPaired differences (a − b, points, mean ± std over seeds):\n\n" + \
            comparison_table(comparisons)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(table, encoding="utf-8")
    write_json(output.with_suffix(".json"), {"rows": rows, "comparisons": comparisons})
    plots = [plot_nil_curves(runs, d, output.parent / f"nil_pr_{d}.png")
             for d in dict.fromkeys(r["dataset"] for r in runs)]
    typer.echo(table)
    typer.echo(f"{len(runs)} runs; plots: {[str(p) for p in plots if p]}")

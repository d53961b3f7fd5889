"""`prepare DATASET OUTPUT_DIR`: a benchmark dataset's KB and train/dev/test
DocBins in one layout (`corpus/<dataset>/kb.bioelkb`, `train.spacy`, ...)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer

from ._app import app, setup_logging, write_json
from .convert import convert_files, convert_obo_synonyms, write_corpus

logger = logging.getLogger(__name__)


@app.command("prepare")
def prepare(
    dataset: str = typer.Argument(..., help="ncbi | bc5cdr | askapatient | hp | doid"),
    output_dir: Path = typer.Argument(..., help="Directory for kb.bioelkb and train/dev/test.spacy"),
    data_root: Path = typer.Option(Path("assets/data"), "--data-root", help="Folder holding the source files: ctd_medic/, ncbi_disease/, bc5cdr/, askapatient_fold0/, obo_ontologies/ (the layout `spacy project assets` downloads)"),
    medic_file: Optional[str] = typer.Option(None, "--medic-file", help="ncbi: MEDIC dictionary under ctd_medic/"),
    ctd_file: Optional[str] = typer.Option(None, "--ctd-file", help="bc5cdr: CTD diseases report under ctd_medic/"),
    hp_file: Optional[str] = typer.Option(None, "--hp-file", help="hp: HP release (.obo or .obo.gz) under obo_ontologies/"),
    doid_file: Optional[str] = typer.Option(None, "--doid-file", help="doid: DOID release under obo_ontologies/"),
    seed: int = typer.Option(0, "--seed", help="hp, doid: split seed"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Build DATASET's KB and convert its corpus into OUTPUT_DIR: kb.bioelkb
    (hp, doid: names only, held-out synonyms removed) and train / dev / test
    .spacy, with conversion_report.json. The same loaders and settings as `kb
    build` and `convert` in project.yml's per-dataset commands."""
    from ..corpora.datasets import SPLITS, get_recipe, recipe_files
    from ..errors import BioELError, Errors
    from ..kb.loaders import load_kb

    setup_logging(verbose)
    recipe = get_recipe(dataset)
    options = {"medic_file": medic_file, "ctd_file": ctd_file, "hp_file": hp_file,
               "doid_file": doid_file}
    kb_files = [data_root / f for f in recipe_files(recipe, {k: v for k, v in options.items() if v})]
    corpus_files = [data_root / f for f in recipe.corpus_files]
    release_options = [f"--{t[t.index('{') + 1:-1].replace('_', '-')}" if "{" in t else "--data-root"
                       for t in recipe.kb_files] + ["--data-root"] * len(corpus_files)
    for path, option in zip(kb_files + corpus_files, release_options):
        if not path.is_file():
            raise BioELError(Errors.E061.format(dataset=dataset, path=path, option=option))
    kwargs = {"name": recipe.kb_name}
    if recipe.kb_format == "obo":
        kwargs.update(prefixes=list(recipe.prefixes),
                      name=f"{recipe.kb_name} ({kb_files[0].name.split('.')[0]})")
    kb = load_kb(recipe.kb_format, kb_files, **kwargs)
    logger.info("Loaded %r from %s", kb, ", ".join(map(str, kb_files)))
    if recipe.corpus_format == "obo-syn":
        from ..corpora.datasets import OBO_DEV_FRACTION

        outputs, reports, linked_kb = convert_obo_synonyms(
            kb, setting="zero-shot", seed=seed, dev_fraction=OBO_DEV_FRACTION)
    else:
        outputs, reports = convert_files(recipe.corpus_format, corpus_files, SPLITS, kb=kb,
                                         types=recipe.types)
        linked_kb = kb
    output_dir.mkdir(parents=True, exist_ok=True)
    linked_kb.to_disk(output_dir / "kb.bioelkb")
    write_corpus(output_dir, outputs, reports)
    write_json(output_dir / "dataset.json", {
        "dataset": dataset, "description": recipe.description, "kb": kb.name,
        "kb_concepts": len(linked_kb), "sources": [str(p) for p in kb_files + corpus_files],
        "evaluate_as": recipe.evaluate_as, "splits": {s: sum(len(d.ents) for d in outputs[s])
                                                       for s in SPLITS}})
    typer.echo(f"{output_dir / 'kb.bioelkb'}: {linked_kb!r}")

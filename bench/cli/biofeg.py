"""`biofeg`: BioFEG's generated features for a trained pipeline's unseen concepts
(Sui et al., paper 001, Secs. 3.4-3.5), with the GAN's settings chosen on
held-out seen concepts first."""
from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

import typer

from ._app import app, load_pipeline, setup_logging, write_json

logger = logging.getLogger(__name__)
# the record's columns in the .md of the tries
COLUMNS = ("gan_wasserstein_last", "generated_top1_seen", "generated_top1_heldout",
           "generated_top10_heldout", "real_top1_heldout", "gan_seconds")


def parse_settings(items: List[str], option: str) -> Dict[str, Any]:
    """KEY=VALUE items (comma-separated in one item too) -> BioFEG.v1 parameters,
    values read as JSON where they parse (numbers, true/false), else strings."""
    import json

    from spacy_bioel.errors import BioELError, Errors
    from spacy_bioel.research.registry import create_biofeg

    keys = sorted(inspect.signature(create_biofeg).parameters)
    settings: Dict[str, Any] = {}
    for item in (part.strip() for value in items for part in value.split(",") if part.strip()):
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in keys:
            raise BioELError(Errors.E196.format(item=item, option=option, keys=", ".join(keys)))
        try:
            settings[key.strip()] = json.loads(value.strip())
        except ValueError:
            settings[key.strip()] = value.strip()
    return settings


def _row(name: str, record: Dict[str, Any]) -> str:
    nan = float("nan")  # a held-out column without held-out concepts (--heldout 0)
    cells = [f"{100 * record.get(c, nan):.2f}" if "top" in c else f"{record.get(c, nan):.2f}"
             for c in COLUMNS]
    return f"| {name} | " + " | ".join(cells) + " |"


@app.command("biofeg")
def biofeg_command(
    pipeline: Path = typer.Argument(..., help="A trained pipeline with a bioel_linker (separate towers, saved training mentions)"),
    output: Optional[Path] = typer.Option(None, "--output", help="Where to save the fine-tuned pipeline (default: in place; nothing is saved with --no-finetune)"),
    settings: List[str] = typer.Option([], "--set", help="KEY=VALUE of [components.bioel_linker.biofeg] (spacy-bioel.BioFEG.v1), over the pipeline's own block; repeatable"),
    tries: List[str] = typer.Option([], "--try", help="GAN settings to compare first, comma-separated KEY=VALUE; repeatable or ';'-separated. Each trains the GAN without the held-out seen concepts; the best on them (generated top-10, then top-1) is used. A single one is used as given"),
    heldout: float = typer.Option(0.1, "--heldout", help="Share of the seen concepts held out of the GAN while comparing --try settings"),
    iterations: int = typer.Option(1, "--iterations", help="GAN + fine-tuning rounds (the retriever is not retrained in between)"),
    finetune: bool = typer.Option(True, "--finetune/--no-finetune", help="Fine-tune the concept tower and save (else: measure the GAN only)"),
    report: Path = typer.Option(Path("biofeg.json"), "--report", help="JSON of the tries and the iteration records (.md beside)"),
    name: Optional[str] = typer.Option(None, "--component"),
    seed: int = typer.Option(0, "--seed", help="Seeds torch, numpy and the linker's sampler"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Run BioFEG's steps 2-3 on a trained linker: train the WGAN-GP on its
    training mentions, generate features for the concepts without one,
    fine-tune the concept tower on them, re-encode the KB and save. The
    saved pipeline links like any bioel_linker; compare it with PIPELINE."""
    import numpy as np
    from spacy.util import fix_random_seed

    from spacy_bioel.pipeline.loading import find_linker
    from spacy_bioel.research.registry import create_biofeg

    setup_logging(verbose)
    nlp = load_pipeline(pipeline)
    linker = find_linker(nlp, name)
    block = dict(nlp.config["components"][linker.name].get("biofeg") or {})
    block.pop("@misc", None)
    base = {**block, **parse_settings(settings, "--set"), "report": None}
    grid = [parse_settings([t], "--try") for value in tries for t in value.split(";") if t.strip()]
    if len(grid) == 1:  # nothing to compare
        base.update(grid.pop())
    result: Dict[str, Any] = {"pipeline": str(pipeline), "settings": base, "tries": []}
    lines: List[str] = []
    first: Optional[Any] = None  # the BioFEG whose descriptions every later one shares
    real = None  # the mention tower and the index stay put while settings are compared
    for params in grid:
        fix_random_seed(seed)
        feg = create_biofeg(**{**base, **params, "heldout_seen": heldout})
        first = feg if first is None else feg.share_descriptions(first)
        real = real or feg.real_features(linker)
        _, record = feg.fit_gan(linker, real)
        result["tries"].append({"settings": params, **record})
        lines.append(_row(",".join(f"{k}={v}" for k, v in params.items()), record))
        logger.info("BioFEG try %s: %s", params, record)
    if grid:
        best = max(result["tries"], key=lambda r: (r.get("generated_top10_heldout", 0),
                                                   r.get("generated_top1_heldout", 0)))
        base.update(best["settings"])
        result["chosen"] = best["settings"]
        lines = [f"| try | {' | '.join(COLUMNS)} |", "|---|" + "---:|" * len(COLUMNS), *lines,
                 "", f"chosen on {result['tries'][0].get('heldout_concepts')} held-out seen "
                 f"concepts: {best['settings']}", ""]
    fix_random_seed(seed)
    linker.rng = np.random.default_rng(seed)
    # the pipeline's own block fills what --set / --try leave out (say, the GAN's learning rate of
    # the config it was trained with): shown before the minutes of training
    logger.info("BioFEG settings: %s", base)
    feg = create_biofeg(**base)
    if first is not None:
        feg.share_descriptions(first)
    for i in range(max(1, iterations)):
        feg.run(linker, finetune=finetune, real=real if i == 0 else None)
        result["history"] = feg.history
        write_json(report, result)
    lines.append(f"| {' | '.join(feg.history[0])} |")
    lines.append("|" + "---:|" * len(feg.history[0]))
    for record in feg.history:
        lines.append("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v)
                                       for v in record.values()) + " |")
    report.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    typer.echo("\n".join(lines))
    if finetune:
        (output or pipeline).parent.mkdir(parents=True, exist_ok=True)
        nlp.to_disk(output or pipeline)
        typer.echo(f"Saved to {output or pipeline}")

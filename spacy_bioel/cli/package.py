"""`package PIPELINE OUTPUT_DIR`: an installable wheel of a trained linker
(spaCy's `spacy package`), with what its size is made of and a smaller option."""
from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

import typer

from ..outputs import MARKER
from ._app import app, resolve_pipeline, setup_logging, write_json

logger = logging.getLogger(__name__)
# the parts of a saved bioel_linker, by file or folder name (everything else: "other")
PARTS = {"model": "encoder weights", "index": "name index vectors", "datastore": "kNN datastore",
         "kb": "knowledge base", "train_mentions": "training mentions", "encoder": "tokenizer files",
         "runtime": "ONNX mention tower"}


def check_earlier_build(folder: Path, package: str) -> None:
    """E246 when the package folder that spaCy's `package --force` replaces exists and
    is not an earlier build of `package` (spaCy's layout: its setup.py and a meta.json)."""
    import srsly

    from ..errors import BioELError, Errors

    if not folder.exists() or (folder.is_dir() and not any(folder.iterdir())):
        return
    try:
        meta = srsly.read_json(folder / "meta.json")
        ours = (folder / "setup.py").is_file() and f"{meta['lang']}_{meta['name']}" in (
            package, meta["name"])
    except (OSError, ValueError, KeyError, TypeError):
        ours = False
    if not ours:
        entries = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else [folder.name]
        raise BioELError(Errors.E246.format(command="package", path=folder, examples=", ".join(
            entries[:3]) + (" ..." if len(entries) > 3 else "")))


def part_sizes(pipeline: Path) -> Dict[str, int]:
    """Bytes per part of a saved pipeline (PARTS; the rest summed as 'other')."""
    from ..files import tree_files

    sizes: Dict[str, int] = {}
    for path in tree_files(pipeline):
        rel = path.relative_to(pipeline).parts
        part = next((PARTS[p] for p in rel[:-1] + (rel[-1],) if p in PARTS), "other")
        sizes[part] = sizes.get(part, 0) + path.stat().st_size
    return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))


def stored_vectors_dtype(pipeline: Path) -> str:
    """The dtype of the name vectors a saved pipeline's linker stores ('float32'
    when it records none)."""
    import srsly

    for meta in sorted(pipeline.glob("*/index/store.json")):
        return str(srsly.read_json(meta).get("dtype", "float32"))
    return "float32"


@app.command("package")
def package(
    pipeline: str = typer.Argument(..., help="A saved pipeline with a bioel_linker (e.g. model-best), or bioel: the default pipeline (the shipped disease NER and the untrained linker over --kb), built into the cache on first use"),
    output_dir: Path = typer.Argument(..., help="Parent folder of the package (spaCy's layout)"),
    name: str = typer.Option("bioel_linker", "--name", help="Package name (spaCy prefixes the language: en_NAME)"),
    version: str = typer.Option("0.1.0", "--version", help="Package version"),
    vectors_dtype: Optional[str] = typer.Option(None, "--vectors-dtype", help="float16 or float32 name vectors (default: as the pipeline stores them; the linker configs store float16, which halves the index; scores stay float32)"),
    sdist: bool = typer.Option(False, "--sdist", help="Also build a source archive"),
    report: Optional[Path] = typer.Option(None, "--report", help="Sizes as JSON (and .md beside)"),
    check_venv: Optional[Path] = typer.Option(None, "--check-venv", help="Install the wheel into a fresh virtual environment here and link offline with it"),
    pre_install: List[str] = typer.Option([], "--pre-install", help="--check-venv: requirements installed first (e.g. torch==2.13.0 for a CPU build), repeatable"),
    bioel_wheel: Optional[Path] = typer.Option(None, "--bioel-wheel", help="--check-venv: a spacy-bioel wheel (default: built from this checkout)"),
    kb_path: Optional[str] = typer.Option(None, "--kb", help="bioel: the KB file, or embedded:doid (the Disease Ontology KB shipped in the package; the default)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Build an installable wheel of PIPELINE with spaCy's `package`: the KB,
    the name index, the kNN datastore, the encoder's weights and tokenizer are
    inside, so `pip install` then `spacy.load("en_NAME")` links offline. The
    wheel requires spacy-bioel, which is not on the package index: install it
    first (`pip install spacy-bioel-*.whl` or from a clone). Prints the wheel's
    size and which part dominates it; `--vectors-dtype float16` halves the
    index (the linker configs already store float16)."""
    from spacy.cli.package import package as spacy_package

    from ..errors import BioELError, Errors
    from ..files import copy_tree
    from ..outputs import Protected, check_target, protect_inputs
    from .linker import swap_stage

    setup_logging(verbose)
    if vectors_dtype not in (None, "float32", "float16"):
        raise BioELError(Errors.E175.format(name="--vectors-dtype", value=repr(vectors_dtype),
                                            expected="'float32' or 'float16'"))
    pipeline = Path(resolve_pipeline(pipeline, kb_path, "package"))  # `bioel`: the default, as `link` builds it
    check_target("package", output_dir, [Protected("the pipeline", pipeline, inside=True)])
    protect_inputs("package --report", [report, report and report.with_suffix(".md")], [], [pipeline])
    stored = stored_vectors_dtype(pipeline)
    with tempfile.TemporaryDirectory(prefix="bioel_package_") as tmp:
        # the wheel holds what loading reads, and nothing else: the pipeline's regular files,
        # no link out of it, no FIFO (E231, the walker of `load_pipeline`)
        source = Path(tmp) / "source"
        copy_tree(pipeline, source, skip=[MARKER])  # a cache entry's marker (`bioel`): not the wheel's
        if vectors_dtype is not None and vectors_dtype != stored:
            def to_dtype(block: Optional[dict]) -> dict:
                block = dict(block or {"@misc": "spacy-bioel.NameIndex.v2"})
                if block["@misc"].endswith(".v1"):  # v1 has no vectors_dtype
                    block["@misc"] = "spacy-bioel.NameIndex.v2"
                return {**block, "vectors_dtype": vectors_dtype}

            nlp, _ = swap_stage(source, "index", to_dtype)
            source = Path(tmp) / "pipeline"
            nlp.to_disk(source)
        vectors_dtype = vectors_dtype or stored
        sizes = part_sizes(source)
        import srsly

        meta = srsly.read_json(source / "meta.json")
        check_earlier_build(output_dir / f"{meta['lang']}_{name}-{version}", f"{meta['lang']}_{name}")
        output_dir.mkdir(parents=True, exist_ok=True)
        spacy_package(source, output_dir, name=name, version=version, create_sdist=sdist,
                      create_wheel=True, force=True, require_parent=True, silent=not verbose)
    full_name = f"{meta['lang']}_{name}"
    wheels: List[Path] = sorted((output_dir / f"{full_name}-{version}" / "dist").glob("*.whl"))
    if not wheels:
        raise BioELError(Errors.E008.format(path=output_dir / f"{full_name}-{version}" / "dist"))
    wheel = wheels[-1]
    total = sum(sizes.values())
    rows = [{"part": part, "mb": round(size / 1e6, 1), "share": round(size / max(total, 1), 3)}
            for part, size in sizes.items()]
    result = {"pipeline": str(pipeline), "package": full_name, "version": version,
              "wheel": str(wheel), "wheel_mb": round(wheel.stat().st_size / 1e6, 1),
              "pipeline_mb": round(total / 1e6, 1), "vectors_dtype": vectors_dtype,
              "parts": rows, "dominated_by": rows[0]["part"] if rows else None}
    lines = [f"Wheel {wheel} ({result['wheel_mb']} MB compressed; pipeline "
             f"{result['pipeline_mb']} MB on disk, index vectors {vectors_dtype})", "",
             "| part | MB | share |", "|---|---:|---:|"]
    lines += [f"| {r['part']} | {r['mb']} | {r['share']:.0%} |" for r in rows]
    lines += ["", f"Install: pip install spacy-bioel (a wheel or clone: it is not on the package "
                  f"index), then pip install {wheel.name}; spacy.load(\"{full_name}\")."]
    if rows and rows[0]["part"] == "encoder weights":
        lines.append("The encoder's weights dominate: a smaller encoder is the way to a much "
                     "smaller package" + ("; --vectors-dtype float16 halves the name index."
                                          if vectors_dtype == "float32" else "."))
    if check_venv is not None:
        from ..pipeline.packaging import check_in_fresh_venv

        result["venv_check"] = check_in_fresh_venv(wheel, full_name, pipeline, check_venv,
                                                   pre_install, bioel_wheel)
        check = result["venv_check"]
        lines += ["", f"Fresh virtual environment {check_venv}: installed in {check['install_seconds']} s; "
                      f"offline linking {'matches' if check['same_links'] else 'DIFFERS from'} the "
                      f"source pipeline on {check['mentions']} mentions."]
    typer.echo("\n".join(lines))
    if report:
        write_json(report, result)
        report.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.rmtree(output_dir / f"{full_name}-{version}" / "build", ignore_errors=True)

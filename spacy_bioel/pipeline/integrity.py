"""Integrity of a saved linker directory: `manifest.json` lists the size and
SHA-256 of every file the component wrote, and loading checks it first. A
missing file is E156; a changed one E176, which names the file and says how to
re-create that part (re-save or retrain; copy the tokenizer files;
`repair-pipeline` for the derived index and datastore)."""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Iterable

import srsly

from ..errors import BioELError, Errors

logger = logging.getLogger(__name__)
MANIFEST = "manifest.json"

# How to re-create each saved part, for E176.
RESAVE = ("Re-save the pipeline from its training output (model-last or model-best) "
          "with nlp.to_disk, or retrain.")
REBUILD = ("It is derived data: `python -m spacy_bioel repair-pipeline {pipeline} NEW_DIR` "
           "re-encodes it from the weights, the KB and the training mentions.")
REMEDIES = {
    "cfg": RESAVE, "model": RESAVE, "train_mentions": RESAVE, MANIFEST: RESAVE,
    "kb": ("Rebuild the KB from its source (`python -m spacy_bioel kb build`), then "
           "`python -m spacy_bioel repair-pipeline {pipeline} NEW_DIR --kb KB` (it re-encodes "
           "the index)."),
    "index": REBUILD, "datastore": REBUILD,
    "runtime": ("It is derived from the weights: `python -m spacy_bioel repair-pipeline "
                "{pipeline} NEW_DIR` exports the ONNX mention encoder again."),
    "encoder": ("Copy the tokenizer files and config.json of the encoder the pipeline was "
                "trained from (paths.encoder) into {component}/encoder, or re-save the "
                "pipeline from its training output, or retrain.")}


def damaged(path: Path, part: str, problem: str) -> BioELError:
    """E176 for `path`, a file of the component directory's `part` (its first path
    component: 'encoder' for encoder/tokenizer.json), with that part's remedy."""
    component = path.parent.parent if path.parent.name == part else path.parent
    remedy = REMEDIES.get(part, RESAVE).format(component=component, pipeline=component.parent)
    return BioELError(Errors.E176.format(path=path, problem=problem, remedy=remedy))


def write_manifest(path: Path) -> None:
    """`manifest.json`: size and SHA-256 of every file the component saved."""
    files = {p.relative_to(path).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)}
             for p in sorted(path.rglob("*")) if p.is_file() and p.name != MANIFEST}
    srsly.write_json(path / MANIFEST, {"version": 1, "files": files})


def verify_manifest(path: Path, skip: Iterable[str] = ()) -> None:
    """Check every file listed in `manifest.json` (E156 missing, E176 changed);
    a directory saved before manifests is not checked (logged)."""
    if not (path / MANIFEST).exists():
        logger.info("%s has no %s (saved by an older version): files not verified", path, MANIFEST)
        return
    try:
        files = srsly.read_json(path / MANIFEST)["files"]
        entries = [(name, int(entry["size"]), str(entry["sha256"])) for name, entry in files.items()]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise damaged(path / MANIFEST, MANIFEST, f"unreadable: {type(err).__name__}: {err}")
    skip = set(skip)
    for name, size, digest in entries:
        part = name.split("/")[0]
        if part in skip:
            continue
        target = path / name
        if not target.is_file():
            raise BioELError(Errors.E156.format(path=target))
        if target.stat().st_size != size:
            raise damaged(target, part, f"{target.stat().st_size} bytes, the manifest says {size}")
        if _sha256(target) != digest:
            raise damaged(target, part, "its SHA-256 differs from the manifest's")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = ["MANIFEST", "write_manifest", "verify_manifest", "damaged"]

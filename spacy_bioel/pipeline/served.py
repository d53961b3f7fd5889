"""The default linker built without PyTorch, from the mention tower shipped in
the package.

The untrained default's mention tower is the embedded MiniLM exported to ONNX
with int8 weights and embedding table (the one default's runtime). Only PyTorch
can make that graph, so it ships ready in `spacy_bioel/assets/tower` with its
tokenizer, the encoder config and a weights file that is a reference to the base
model (`encoders.base_tower.reference_bytes`), under a manifest of checksums
(`spacy project run build-default-tower` rebuilds it; E254 when a file differs).

`served_linker` gives a pipeline's `bioel_linker` (the one default, on the
embedded MiniLM) that graph as its runtime, encodes the KB's names with it (the
same graph for names and mentions, as the untrained towers are one model), and
defers the PyTorch module to when something needs it (training, a refresh,
another runtime: it is then built from the base model and checked against the
reference). So the default pipeline builds, links and saves in an install
without PyTorch, and links the same in an install with it.
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Dict

import numpy as np
from spacy.language import Language

from .. import assets
from ..index.names import joined_utf8
from ..kb.knowledge_base import KnowledgeBase
from .defaults import ENCODER

logger = logging.getLogger(__name__)

TOWER = assets.FOLDER / "tower"
WHAT, COMMAND = "int8 mention tower", "build-default-tower"


def available(encoder: str) -> bool:
    """Whether the shipped tower serves `encoder` (the embedded default's MiniLM)."""
    return encoder == ENCODER and (TOWER / assets.MANIFEST).is_file()


def tower_info(folder: Path = TOWER) -> Dict[str, Any]:
    """The shipped tower's manifest, its files checked (E254)."""
    return assets.verify(folder, WHAT, COMMAND)


def names_key(names, tower_digest: str) -> str:
    """The embedding-cache key of `names` encoded by the shipped graph."""
    digest = hashlib.sha1()
    digest.update(("served\n" + tower_digest + "\n").encode("utf-8"))
    digest.update(joined_utf8(names))
    return digest.hexdigest()[:20]


def serve_untrained(linker, rows) -> bool:
    """Serve `linker` from the shipped tower (`serve`) when it has nothing to train on
    (no gold `rows`), is not built, and the tower is its mention tower (`can_serve`):
    the one default on the embedded MiniLM links without PyTorch, the same in every
    install. Whether it did."""
    from ..encoders.thinc_biencoder import is_built

    if rows or linker.deferred_model is not None or is_built(linker.model) or \
            not can_serve(linker):
        return False
    serve(linker)
    return True


def can_serve(linker, folder: Path = TOWER) -> bool:
    """Whether the shipped tower is `linker`'s mention tower: an untrained linker
    on the embedded MiniLM with the one default's runtime (ONNX, int8-all) and
    the tower's pooling and length."""
    if not (folder / assets.MANIFEST).is_file() or linker.model.attrs.get("encoder") != ENCODER:
        return False
    runtime = linker.runtime
    if getattr(runtime, "name", None) != "onnx" or runtime.quantize != "int8-all" or \
            getattr(runtime, "student", None) or getattr(runtime, "tower", "mention") != "mention":
        return False
    info = assets.manifest(folder, WHAT, COMMAND)
    attrs = linker.model.attrs
    return attrs.get("pooling") == info.get("pooling") and \
        int(attrs.get("max_length") or 0) == int(info.get("max_length") or -1)


def serve(linker, folder: Path = TOWER) -> None:
    """Initialise `linker` (its KB set) on the shipped tower (see the module): the
    graph as its runtime, every name encoded with it, an empty datastore, the
    PyTorch module deferred (built from the base model when needed)."""
    from .serialize import _load_weights
    from .updates import TrainingState

    info = tower_info(folder)
    _load_weights(linker, folder, int(info["dim"]), exclude=(), concept_tower=None)
    linker.rng = np.random.default_rng(0)
    linker.steps = TrainingState(eval_frequency=0)
    linker.train_mentions = []
    batch = linker.cfg["encode_batch_size"]
    linker.index.refresh(lambda texts: linker.runtime.encode(linker.model, texts, batch,
                                                             progress="Encoding names"),
                         names_key(linker.index.names.names, assets.manifest_digest(folder)))
    linker.state.refresh_datastore(int(info["dim"]), None)
    linker.model_changed()
    logger.info("Built the linker on the shipped %s (%d names of %d concepts)", WHAT,
                len(linker.index.names), len(linker.kb))


def served_linker(nlp: Language, kb: KnowledgeBase, name: str = "bioel_linker",
                  folder: Path = TOWER) -> Language:
    """Add the one default `bioel_linker` to `nlp`, served by the shipped graph
    (see the module), with every name of `kb` encoded; no PyTorch is imported."""
    linker = nlp.add_pipe(name)
    if not can_serve(linker, folder):
        raise ValueError(f"the shipped tower in {folder} does not serve the default linker")
    linker.set_kb(kb)
    serve(linker, folder)
    return nlp


def write_manifest(folder: Path, info: Dict[str, Any]) -> Dict[str, Any]:
    """The tower folder's manifest: `info` (dim, encoder, quantize, ...) and each
    file's SHA-256."""
    data = {**info, "files": assets.tree_checksums(folder)}
    (folder / assets.MANIFEST).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n",
                                          encoding="utf-8")
    return data


__all__ = ["TOWER", "available", "can_serve", "serve_untrained", "names_key", "serve", "served_linker", "tower_info",
           "write_manifest"]

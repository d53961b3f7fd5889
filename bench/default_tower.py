"""The int8 mention tower shipped in the package (issue 72): the embedded MiniLM
exported to ONNX as the one default exports it (`quantize = "int8-all"`), with
its tokenizer and encoder config and a weights file that references the base
model, under a manifest (`spacy_bioel.pipeline.served`). Needs PyTorch: this is
what only PyTorch can make, so that the base install does not need it."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict


def build_tower(target: Path) -> Dict[str, Any]:
    """Export the tower into `target` (replaced only when it holds a shipped
    manifest, or is absent); return its manifest."""
    from spacy_bioel import Concept, KnowledgeBase
    from spacy_bioel.assets import MANIFEST
    from spacy_bioel.encoders.base_tower import reference_bytes, tower_digest
    from spacy_bioel.encoders.thinc_biencoder import torch_module
    from spacy_bioel.pipeline.defaults import ENCODER
    from spacy_bioel.pipeline.loading import find_linker, untrained_pipeline
    from spacy_bioel.pipeline.served import write_manifest

    if target.exists() and not (target / MANIFEST).is_file():
        raise SystemExit(f"{target} exists and is not a shipped tower (no {MANIFEST}): "
                         "give another folder or move it away")
    from spacy_bioel.pipeline import served

    kb = KnowledgeBase(name="one name")
    kb.add(Concept("X1", "colon cancer"))
    can_serve, served.can_serve = served.can_serve, lambda *args, **kwargs: False
    try:  # built with PyTorch from the base model, exported anew: not served by the old tower
        nlp = untrained_pipeline(kb, ENCODER, config={"index": {
            "@misc": "spacy-bioel.NameIndex.v2", "index_type": "int8", "embedding_cache": None}})
    finally:
        served.can_serve = can_serve
    linker = find_linker(nlp)
    linker.runtime.encode(linker.model, ["colon cancer"], 8)  # export the graph
    module = torch_module(linker.model)
    reference = {"encoder": ENCODER, "sha256": tower_digest(module.mention_encoder)}
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".staging", dir=target.parent))
    with tempfile.TemporaryDirectory() as tmp:
        nlp.to_disk(tmp)
        component = Path(tmp) / "bioel_linker"
        for part in ("runtime", "encoder"):
            shutil.copytree(component / part, staging / part)
    (staging / "model").write_bytes(reference_bytes(reference))
    info = {"encoder": ENCODER, "dim": int(linker.model.get_dim("nO")),
            "quantize": linker.runtime.quantize, "max_length": linker.model.attrs["max_length"],
            "pooling": linker.model.attrs["pooling"], "command": "spacy project run build-default-tower"}
    manifest = write_manifest(staging, info)
    if target.exists():
        shutil.rmtree(target)  # an earlier shipped tower (its manifest checked above)
    staging.rename(target)
    target.chmod(0o755)  # mkdtemp made it private
    return manifest


__all__ = ["build_tower"]

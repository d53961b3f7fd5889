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


def deserialize_weights(module: torch.nn.Module, state_bytes: bytes, device: Any
                        ) -> torch.nn.Module:
    """Thinc's `PyTorchWrapper_v3(deserialize_model=...)`: load a state dict saved
    by thinc's default serializer with `weights_only=True` (thinc's own default
    leaves the argument out), then move the module to `device`."""
    module.load_state_dict(load_tensors(state_bytes, map_location=device))
    module.to(device)
    return module


__all__ = ["load_tensors", "deserialize_weights"]

"""Registered prediction runtimes of the linker (entry points in `spacy_misc`)."""
from __future__ import annotations

from typing import Optional

from spacy.util import registry


@registry.misc("spacy-bioel.TorchRuntime.v1")
def create_torch_runtime(threads: int = 0, batch_size: int = 64):
    """Mentions encoded by the component's PyTorch module (see `encoders.runtime`).
    threads: inference threads (0: the libraries' defaults); batch_size: texts per pass."""
    from .runtime import TorchRuntime
    return TorchRuntime(threads, batch_size)


@registry.misc("spacy-bioel.OnnxRuntime.v1")
def create_onnx_runtime(quantize: Optional[str] = None, threads: int = 0, batch_size: int = 32):
    """Mentions encoded by ONNX Runtime from the exported mention tower
    (quantize: null, 'int8' or 'int8-all'); needs the `onnx` extra (see `encoders.runtime`)."""
    from .runtime import OnnxRuntime
    return OnnxRuntime(quantize, threads, batch_size)

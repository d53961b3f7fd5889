"""The Thinc wrapper around the PyTorch cross-encoder, registered as the
`spacy-bioel.CrossEncoder.v1` architecture.

Input: a list of (query, candidate) text pairs. Output: (n_pairs, 1) scores.
Like the bi-encoder, the transformer is loaded in `init` (never at
construction), and `build_from_saved` rebuilds the same module from a saved
config before `from_disk` loads the weights.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3
from thinc.types import Floats2d

from .common import DEFAULT_ENCODER, length_buckets
from .thinc_biencoder import batch_tokenizer

logger = logging.getLogger(__name__)
Pairs = List[Tuple[str, str]]


@registry.architectures("spacy-bioel.CrossEncoder.v1")
def build_cross_encoder(encoder: str = DEFAULT_ENCODER, pooling: str = "mean",
                        max_length: int = 64, frozen_layers: int = 0, dropout: float = 0.1,
                        mixed_precision: bool = False,
                        zero_head: bool = False) -> Model[Pairs, Floats2d]:
    """A cross-encoder over a Hugging Face transformer with a linear head.

    encoder (str): A local model directory, a hub name (needs internet), or
        'embedded:all-MiniLM-L6-v2' (the MiniLM in the `models` extra).
    pooling (str): 'mean' (Wiatrak et al., appendix) or 'cls'.
    max_length (int): Tokens per pair; the longer text is truncated first.
    frozen_layers (int): Freeze the embeddings and this many bottom layers.
    dropout (float): Dropout on the pooled vector while training.
    mixed_precision (bool): Autocast and gradient scaling on a CUDA device.
    zero_head (bool): Initialise the linear head at zero, so that a reranker
        interpolated with the linker's log score starts at the linker's ranking
        (`reranker.cfg`); False keeps PyTorch's random initialisation.
    """
    return Model("bioel_cross_encoder", forward, init=init, layers=[], dims={"nO": 1},
                 attrs={"encoder": encoder, "pooling": pooling, "max_length": max_length,
                        "frozen_layers": frozen_layers, "dropout": dropout,
                        "mixed_precision": mixed_precision, "zero_head": zero_head,
                        "tokenizer": None})


def init(model: Model, X: Optional[Pairs] = None, Y: Optional[Any] = None) -> None:
    """Load the transformer (weights included) unless already built."""
    if model.layers:
        return
    from .torch_biencoder import load_transformer

    attach_module(model, *load_transformer(model.attrs["encoder"]))


def build_from_saved(model: Model, encoder_dir: Union[str, Path]) -> None:
    """Rebuild the module from a saved tokenizer + transformer config (random
    weights), so that `model.from_bytes` can then load the trained weights."""
    if model.layers:
        return
    from .torch_biencoder import load_transformer

    attach_module(model, *load_transformer(str(encoder_dir), config_only=True))


def attach_module(model: Model, tokenizer, transformer) -> None:
    import torch

    from .cross_encoder import CrossEncoder
    from .torch_biencoder import freeze_bottom

    freeze_bottom(transformer, model.attrs["frozen_layers"], model.attrs["encoder"])
    module = CrossEncoder(transformer, pooling=model.attrs["pooling"],
                          dropout=model.attrs["dropout"],
                          zero_head=model.attrs["zero_head"])
    mixed = bool(model.attrs["mixed_precision"]) and torch.cuda.is_available()
    from .torch_io import deserialize_weights  # weights_only, explicitly

    model._layers.append(PyTorchWrapper_v3(module, convert_inputs=_make_converter(model),
                                           mixed_precision=mixed, deserialize_model=deserialize_weights))
    model.attrs["tokenizer"] = tokenizer


def save_encoder_config(model: Model, encoder_dir: Union[str, Path]) -> None:
    """Write the tokenizer and the transformer config (no weights)."""
    encoder_dir = Path(encoder_dir)
    encoder_dir.mkdir(parents=True, exist_ok=True)
    model.attrs["tokenizer"].save_pretrained(encoder_dir)
    torch_module(model).transformer.config.save_pretrained(encoder_dir)


def torch_module(model: Model):
    """RETURNS (CrossEncoder): the wrapped PyTorch module."""
    return model.layers[0].shims[0]._model


def tokenize_pairs(model: Model, pairs: Sequence[Tuple[str, str]], device) -> ArgsKwargs:
    """The pairs as one sequence each, truncated to max_length, on `device`."""
    import torch

    fast = batch_tokenizer(model)  # cached per tokenizer and max_length
    firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
    if fast is not None:
        ids, mask, types = (torch.from_numpy(a).to(device) for a in fast.pairs(firsts, seconds))
    else:  # a slow tokenizer
        batch = model.attrs["tokenizer"](firsts, seconds, padding=True, truncation=True,
                                         max_length=model.attrs["max_length"], return_tensors="pt")
        ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        types = batch.get("token_type_ids")
        types = types.to(device) if types is not None else None
    uses_types = getattr(torch_module(model).transformer.config, "type_vocab_size", 0) > 1
    return ArgsKwargs(args=(ids, mask), kwargs={"token_type_ids": types if uses_types else None})


def _make_converter(outer: Model):
    def convert_inputs(model: Model, X: Pairs, is_train: bool):
        return tokenize_pairs(outer, X, model.shims[0].device), lambda d_inputs: X
    return convert_inputs


def score_pairs(model: Model, pairs: Sequence[Tuple[str, str]], batch_size: int = 64) -> np.ndarray:
    """Score pairs without gradients in eval mode (under `torch.inference_mode`).
    RETURNS (np.ndarray): (len(pairs),) float32 logits."""
    import torch

    module = torch_module(model)
    device = next(module.parameters()).device
    autocast = device.type == "cuda" and bool(model.attrs.get("mixed_precision"))
    out = np.zeros((len(pairs),), dtype=np.float32)
    was_training = module.training
    module.eval()
    try:
        with torch.inference_mode():
            for indices in length_buckets([a + b for a, b in pairs], batch_size):
                inputs = tokenize_pairs(model, [pairs[i] for i in indices], device)
                with torch.autocast(device_type="cuda", enabled=autocast):
                    scores = module(*inputs.args, **inputs.kwargs)
                out[indices] = scores.float().cpu().numpy()[:, 0]
    finally:
        module.train(was_training)
    return out


def forward(model: Model, X: Pairs, is_train: bool):
    return model.layers[0](X, is_train)


__all__ = ["build_cross_encoder", "build_from_saved", "save_encoder_config", "torch_module",
           "tokenize_pairs", "score_pairs"]

"""Token vectors of a transformer that reads each document in context, for the
NER (issue 73): `spacy-bioel.TransformerTokens.v1`, this project's own layer, so
the NER does not pin the transformers version spacy-transformers supports.

Each document's spaCy tokens are split into word pieces by the encoder's fast
tokenizer (`is_split_into_words`, so a piece knows its token). A document longer
than the encoder's window is read in overlapping windows (`window` pieces,
`stride` apart, [CLS] and [SEP] around each). A token's vector is the mean of
its pieces' vectors over every window that read them. A token without a piece
(white space) gets zeros.

A piece's vector is a learned mix of the encoder's layers: softmax weights over
the embedding output and every layer, times a learned scale (the scalar mix of
ELMo, Peters et al. 2018, eq. 1, which spacy-transformers and AllenNLP also use
for frozen encoders). With `frozen = true` only the mix trains: the encoder runs
without gradients. With `frozen = false` the encoder trains too, at its own
rate: the optimizer's learning rate times `encoder_lr_scale` (e.g. 1e-3 x 0.05 =
5e-5, BERT's fine-tuning rate, while the fresh NER head keeps 1e-3), warmed up
linearly over `warmup_steps` updates (Devlin et al. 2019, Sec. A.2). One rate
for both was what left an earlier NER at F1 0.0 (docs/results/e2e.md).

The layer is built with its encoder's weights when the architecture is created,
so a saved pipeline loads its own weights over them.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import numpy as np
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import ArgsKwargs, Model
from thinc.layers.pytorchwrapper import convert_pytorch_default_outputs
from thinc.layers.pytorchwrapper import forward as pytorch_forward
from thinc.shims import PyTorchShim
from thinc.types import Floats2d

from ..encoders.common import DEFAULT_ENCODER
from ..errors import BioELError, Errors
from ..validation import as_bool, as_float, as_int
from .pieces import WordPieces, piece_batch, windows


def _module(transformer, frozen: bool):
    import torch
    from torch import nn

    class MixedPieces(nn.Module):
        """The encoder's layers mixed (softmax weights, a scale) and averaged per token."""

        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer
            self.frozen = frozen
            layers = int(transformer.config.num_hidden_layers) + 1
            self.mix = nn.Parameter(torch.zeros(layers))
            self.scale = nn.Parameter(torch.ones(1))
            if frozen:
                for parameter in transformer.parameters():
                    parameter.requires_grad_(False)

        def mixed(self, input_ids, attention_mask):
            """(windows, pieces, hidden): each piece's mix of the encoder's layers
            (what `onnx_tokens` exports)."""
            with torch.set_grad_enabled(torch.is_grad_enabled() and not self.frozen):
                states = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                          output_hidden_states=True).hidden_states
            stacked = torch.stack(states, dim=0)  # (layers, windows, pieces, hidden)
            weights = torch.softmax(self.mix, dim=0).view(-1, 1, 1, 1)
            return self.scale * (weights * stacked).sum(dim=0)

        def forward(self, input_ids, attention_mask, index, n_tokens: int):
            if input_ids.shape[0] == 0:
                return self.mix.new_zeros((n_tokens, self.transformer.config.hidden_size))
            pieces = self.mixed(input_ids, attention_mask)
            flat_index = index.reshape(-1)
            keep = flat_index >= 0
            rows = flat_index[keep]
            values = pieces.reshape(-1, pieces.shape[-1])[keep]
            out = values.new_zeros((n_tokens, values.shape[-1]))
            out = out.index_add(0, rows, values)
            counts = torch.bincount(rows, minlength=n_tokens).clamp(min=1).unsqueeze(1)
            return out / counts.to(out.dtype)

    return MixedPieces()


class EncoderRateShim(PyTorchShim):
    """thinc's PyTorch shim, with the encoder's parameters (`transformer.*`)
    updated at `lr_scale` times the optimizer's rate, warmed up linearly over
    `warmup_steps` updates; the other parameters (the mix) at the full rate."""

    def __init__(self, module, lr_scale: float, warmup_steps: int, **kwargs) -> None:
        super().__init__(module, **kwargs)
        self.lr_scale, self.warmup_steps, self.updates = lr_scale, warmup_steps, 0

    def encoder_scale(self) -> float:
        warm = min(1.0, (self.updates + 1) / self.warmup_steps) if self.warmup_steps else 1.0
        return self.lr_scale * warm

    def finish_update(self, optimizer) -> None:
        from thinc.util import torch2xp, xp2torch

        scale = self.encoder_scale()
        for name, parameter in self._model.named_parameters():
            if parameter.grad is None:
                continue
            if not self._grad_scaler.found_inf:
                value, _ = optimizer((self.id, name), torch2xp(parameter.data),
                                     torch2xp(parameter.grad),
                                     lr_scale=scale if name.startswith("transformer.") else 1.0)
                parameter.data = xp2torch(value, requires_grad=True, device=parameter.device)
            parameter.grad.zero_()
        self._grad_scaler.update()
        self.updates += 1


@registry.architectures("spacy-bioel.TransformerTokens.v1")
def build_transformer_tokens(encoder: str = DEFAULT_ENCODER, window: int = 128,
                             stride: int = 96, frozen: bool = True,
                             encoder_lr_scale: float = 0.05, warmup_steps: int = 500,
                             layers: int = 0) -> Model[List[Doc], List[Floats2d]]:
    """Docs -> (tokens, hidden) vectors of `encoder` reading each document in
    context (see the module): the `embed` of `spacy-bioel.KBNameEmbed.v1` for an
    NER that reads mentions in context.

    encoder (str): A local model folder, a hub name (needs internet) or
        'embedded:all-MiniLM-L6-v2'.
    window (int): Word pieces a window reads (without [CLS] and [SEP]).
    stride (int): Pieces between the starts of two windows (< window: overlap).
    frozen (bool): Train only the layer mix (True), or the encoder too.
    encoder_lr_scale (float): Not frozen: the encoder's rate as a share of the
        optimizer's (the mix and the layers above train at the full rate).
    warmup_steps (int): Not frozen: updates over which the encoder's rate rises
        linearly from 0 to its scale (0: none).
    layers (int): Keep the encoder's first `layers` layers (0: all of them): a
        shallower encoder reads a document in proportionally less time.
    """
    from ..encoders.torch_biencoder import load_transformer
    from ..encoders.torch_io import deserialize_weights, serialize_weights

    window = as_int("window", window, 8, 100_000)
    stride = as_int("stride", stride, 1, window)
    frozen = as_bool("frozen", frozen)
    tokenizer, transformer = load_transformer(encoder)
    layers = as_int("layers", layers, 0, 10_000)
    if layers:
        keep_first_layers(transformer, layers, encoder)
    limit = int(getattr(transformer.config, "max_position_embeddings", window + 2))
    window = min(window, limit - 2)
    stride = min(stride, window)
    encoder_lr_scale = as_float("encoder_lr_scale", encoder_lr_scale, 0.0, 1.0)
    warmup_steps = as_int("warmup_steps", warmup_steps, 0, 10 ** 7)
    module = _module(transformer, frozen)
    pieces = WordPieces.from_hf(tokenizer)
    shim = EncoderRateShim(module, encoder_lr_scale, warmup_steps,
                           serialize_model=serialize_weights, deserialize_model=deserialize_weights)
    wrapper = Model("pytorch", pytorch_forward, shims=[shim], dims={"nI": None, "nO": None},
                    attrs={"convert_inputs": _converter(pieces, window, stride),
                           "convert_outputs": convert_pytorch_default_outputs})
    return Model("transformer_tokens", _forward, layers=[wrapper],
                 dims={"nO": int(transformer.config.hidden_size)},
                 attrs={"encoder": encoder, "window": window, "stride": stride,
                        "frozen": frozen, "encoder_lr_scale": encoder_lr_scale,
                        "warmup_steps": warmup_steps, "layers": layers, "pieces": pieces})


def keep_first_layers(transformer, layers: int, encoder: str) -> None:
    """Cut a BERT-like encoder (its layers in `encoder.layer`) to its first
    `layers` layers, in place (E175 for another architecture or too many)."""
    stack = getattr(getattr(transformer, "encoder", None), "layer", None)
    total = int(transformer.config.num_hidden_layers)
    if stack is None or len(stack) != total:
        raise BioELError(Errors.E175.format(
            name="layers", value=layers,
            expected=f"0 for {encoder}, whose layers this layer cannot cut (a BERT-like "
                     "encoder keeps them in encoder.layer)"))
    if layers > total:
        raise BioELError(Errors.E175.format(name="layers", value=layers,
                                            expected=f"0 to {total}, the layers of {encoder}"))
    del stack[layers:]
    transformer.config.num_hidden_layers = layers


def _converter(pieces: WordPieces, window: int, stride: int) -> Callable:
    def convert_inputs(model: Model, docs: List[Doc], is_train: bool):
        import torch

        device = model.shims[0].device
        input_ids, mask, index = piece_batch(pieces, docs, window, stride)
        n_tokens = sum(len(doc) for doc in docs)
        args = ArgsKwargs(args=(torch.from_numpy(input_ids).to(device),
                                torch.from_numpy(mask).to(device),
                                torch.from_numpy(index).to(device), n_tokens), kwargs={})
        return args, lambda d_inputs: docs
    return convert_inputs


def _forward(model: Model, docs: List[Doc], is_train: bool
             ) -> Tuple[List[Floats2d], Callable[[List[Floats2d]], List[Doc]]]:
    vectors, backprop = model.layers[0](docs, is_train)
    lengths = [len(doc) for doc in docs]
    out = model.ops.unflatten(model.ops.asarray2f(vectors), lengths)

    def backprop_docs(d_out: List[Floats2d]) -> Any:
        backprop(model.ops.flatten(d_out) if d_out else model.ops.alloc2f(0, model.get_dim("nO")))
        return docs
    return out, backprop_docs


@registry.architectures("spacy-bioel.BesideEmbed.v1")
def build_beside_embed(embed: Model[List[Doc], List[Floats2d]],
                       beside: Model[List[Doc], List[Floats2d]]
                       ) -> Model[List[Doc], List[Floats2d]]:
    """Two token embeddings side by side (concatenated per token), e.g. spaCy's
    hash embeddings of each word's form beside the encoder's vectors in context:
    the `embed` of `spacy-bioel.KBNameEmbed.v1`, which mixes them to its width.

    embed (Model[List[Doc], List[Floats2d]]): The first embedding.
    beside (Model[List[Doc], List[Floats2d]]): The second.
    """
    from thinc.api import concatenate

    return concatenate(embed, beside)


__all__ = ["EncoderRateShim", "build_transformer_tokens", "build_beside_embed", "piece_batch",
           "windows"]

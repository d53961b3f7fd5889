"""The Thinc wrapper around the PyTorch bi-encoder, registered as the
`spacy-bioel.BiEncoder.v1` architecture.

Input: (texts, tower) with tower 'mention' or 'concept', or (segments,
'segments'), a list of ('mention' | 'concept', texts) and ('concept', (inputs_embeds,
attention_mask)) parts embedded in one call (a training step's one forward and
one backward pass). Output: (n, dim) embeddings (L2-normalised for cosine
similarity). The transformer is loaded in
`init` (never at construction), so a config can name an encoder without
loading it; `build_from_saved` rebuilds the same module from a saved config
before `from_disk` loads the weights.
"""
from __future__ import annotations

import copy
import logging
import weakref
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3
from thinc.types import Floats2d

from ..progress import progress_bar
from ..errors import BioELError, Errors
from ..validation import MAX_TOKENS, MIN_TOKENS, as_int
from .common import CPU_LENGTH_CHUNKS, DEFAULT_ENCODER, length_buckets

logger = logging.getLogger(__name__)
EncoderInput = Tuple[List[str], str]


@registry.architectures("spacy-bioel.BiEncoder.v1")
def build_biencoder(encoder: str = DEFAULT_ENCODER, pooling: str = "mean",
                    similarity: str = "cosine", shared_towers: bool = True,
                    train_concept_tower: bool = True, max_length: int = 25,
                    mixed_precision: bool = False, frozen_layers: int = 0,
                    prompt: Optional[str] = None,
                    cpu_length_chunks: int = CPU_LENGTH_CHUNKS) -> Model[EncoderInput, Floats2d]:
    """A bi-encoder over a Hugging Face transformer.

    encoder (str): A local model directory, a hub name (needs internet), or
        'embedded:all-MiniLM-L6-v2' (the MiniLM in the `models` extra).
    pooling (str): 'cls' (kNN-BioEL eq. 1) or 'mean'.
    similarity (str): 'cosine' or 'dot'.
    shared_towers (bool): One transformer for mentions and concept names.
    train_concept_tower (bool): With separate towers, False freezes the concept
        tower, so the candidate index never goes stale (fast on a CPU).
    max_length (int): Maximum tokens per text.
    mixed_precision (bool): Autocast and gradient scaling on a CUDA device (ignored on CPU).
    frozen_layers (int): Freeze the embedding layer and this many bottom
        transformer layers of the trained tower(s); 0 trains every layer. On a
        CPU, 3 of MiniLM's 6 layers halves the time of a training step.
    prompt (Optional[str]): A template every mention and concept name is put
        in before encoding, with {mask} (the tokenizer's mask token) and {text},
        e.g. "{mask} is identical with {text}" (GraphPrompt's T0, with pooling
        'mask'); None encodes the text alone.
    cpu_length_chunks (int): On a CPU, a batch of texts is encoded as this many
        sub-batches sorted by length, each padded only to its longest text: the
        same embeddings with less padding computed (NCBI's training batches are
        65% padding); 1 encodes a batch as one padded tensor. Not used on CUDA.
    """
    if prompt is not None and (prompt.count("{text}") != 1 or prompt.count("{mask}") != 1):
        raise BioELError(Errors.E191.format(template=prompt))
    max_length = as_int("model.max_length", max_length, MIN_TOKENS, MAX_TOKENS)
    frozen_layers = as_int("model.frozen_layers", frozen_layers, 0)
    cpu_length_chunks = as_int("model.cpu_length_chunks", cpu_length_chunks, 1)
    return Model("bioel_biencoder", forward, init=init, layers=[],
                 dims={"nO": None},
                 attrs={"encoder": encoder, "pooling": pooling, "similarity": similarity,
                        "shared_towers": shared_towers,
                        "train_concept_tower": train_concept_tower,
                        "max_length": max_length, "mixed_precision": mixed_precision,
                        "frozen_layers": frozen_layers, "prompt": prompt, "tokenizer": None,
                        "cpu_length_chunks": cpu_length_chunks})


def init(model: Model, X: Optional[EncoderInput] = None, Y: Optional[Any] = None) -> None:
    """Load the transformer (weights included) unless already built; a contextual
    model's span layer (`research/contextual.py`) is initialized too."""
    for layer in model.layers[1 if is_built(model) else 0:]:
        layer.initialize()
    if is_built(model):
        return
    from .torch_biencoder import load_transformer

    tokenizer, transformer = load_transformer(model.attrs["encoder"])
    attach_module(model, tokenizer, transformer)
    if not is_contextual(model):  # a frozen tower that is the base model is saved by reference
        from .base_tower import reference_for

        module = torch_module(model)
        module.concept_base = reference_for(module, model.attrs["encoder"])


def check_max_length(max_length: int, transformer, encoder: str) -> None:
    """E175 when `max_length` is longer than the transformer's position embeddings
    (the first text that long would fail inside the encoder)."""
    limit = getattr(getattr(transformer, "config", None), "max_position_embeddings", None)
    if isinstance(limit, int) and max_length > limit:
        raise BioELError(Errors.E175.format(
            name="model.max_length", value=max_length,
            expected=f"an integer in [{MIN_TOKENS}, {limit}] ({encoder} has {limit} positions)"))


def is_built(model: Model) -> bool:
    """True once the PyTorch module is attached (always `model.layers[0]`; a
    contextual model's span layer follows it)."""
    return bool(model.layers) and model.layers[0].name.startswith("pytorch")


def is_contextual(model: Model) -> bool:
    """True for `spacy-bioel.ContextualBiEncoder.v1`: mentions are read from an
    upstream component's token vectors, not encoded from their text."""
    return bool(model.attrs.get("contextual"))


def attach_module(model: Model, tokenizer, transformer) -> None:
    """Build the BiEncoder around `transformer` and wrap it as the model's layer."""
    from .torch_biencoder import BiEncoder, freeze_bottom

    frozen = model.attrs.get("frozen_layers", 0)  # absent in pipelines saved before the option
    concept = None
    if is_contextual(model):  # one frozen tower: concept names only
        for parameter in transformer.parameters():
            parameter.requires_grad_(False)
    elif not model.attrs["shared_towers"]:
        concept = copy.deepcopy(transformer)
        if not model.attrs["train_concept_tower"]:
            for parameter in concept.parameters():
                parameter.requires_grad_(False)
        else:
            freeze_bottom(concept, frozen, model.attrs["encoder"])
    freeze_bottom(transformer, frozen, model.attrs["encoder"])
    check_max_length(model.attrs["max_length"], transformer, model.attrs["encoder"])
    module = BiEncoder(transformer, concept, pooling=model.attrs["pooling"],
                       similarity=model.attrs["similarity"],
                       mask_id=getattr(tokenizer, "mask_token_id", None),
                       cpu_length_chunks=model.attrs.get("cpu_length_chunks", CPU_LENGTH_CHUNKS))
    if (model.attrs["pooling"] == "mask" or model.attrs.get("prompt")) and module.mask_id is None:
        raise BioELError(Errors.E190.format(problem=f"the tokenizer of "
                                            f"{model.attrs['encoder']} has no mask token"))
    import torch

    # autocast + grad scaling only where they exist: on a CUDA device
    mixed = bool(model.attrs["mixed_precision"]) and torch.cuda.is_available()
    from .torch_io import deserialize_weights, serialize_weights  # weights_only, explicitly

    module.concept_base = None  # set where the module is built from the base model (`init`)
    wrapper = PyTorchWrapper_v3(module, convert_inputs=_make_converter(model),
                                mixed_precision=mixed, serialize_model=serialize_weights,
                                deserialize_model=deserialize_weights)
    model._layers.insert(0, wrapper)  # before a contextual model's span layer
    model.attrs["tokenizer"] = tokenizer
    model.set_dim("nO", module.dim)


def build_from_saved(model: Model, encoder_dir: Union[str, Path]) -> None:
    """Rebuild the module from a saved tokenizer + transformer config (random
    weights), so that `model.from_disk` can then load the trained weights."""
    if is_built(model):
        return
    from .torch_biencoder import load_transformer

    tokenizer, transformer = load_transformer(str(encoder_dir), config_only=True)
    attach_module(model, tokenizer, transformer)


def save_encoder_config(model: Model, encoder_dir: Union[str, Path]) -> None:
    """Write the tokenizer and the transformer config (no weights) for `build_from_saved`."""
    encoder_dir = Path(encoder_dir)
    encoder_dir.mkdir(parents=True, exist_ok=True)
    model.attrs["tokenizer"].save_pretrained(encoder_dir)
    torch_module(model).mention_encoder.config.save_pretrained(encoder_dir)


def concept_tower_trained(model: Model) -> bool:
    """RETURNS (bool): whether training changes the concept tower (shared towers,
    or a separate tower with train_concept_tower), so name embeddings go stale.
    A contextual model's concept tower is always frozen."""
    if is_contextual(model):
        return False
    return bool(model.attrs.get("shared_towers", True) or model.attrs.get("train_concept_tower", True))


def torch_module(model: Model) -> BiEncoder:
    """RETURNS (BiEncoder): the wrapped PyTorch module."""
    return model.layers[0].shims[0]._model


_BATCH_TOKENIZERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def batch_tokenizer(model: Model):
    """The model's tokenizer as a `BatchTokenizer` (the Rust backend called
    directly), or None for a slow tokenizer; built once per tokenizer."""
    from .tokenize import batch_tokenizer as make

    tokenizer = model.attrs["tokenizer"]
    key = (model.attrs["max_length"],)
    cached = _BATCH_TOKENIZERS.get(tokenizer)
    if cached is None or cached[0] != key:
        cached = (key, make(tokenizer, model.attrs["max_length"]))
        _BATCH_TOKENIZERS[tokenizer] = cached
    return cached[1]


def prompted(model: Model, texts: Sequence[str]) -> List[str]:
    """`texts` put in the model's prompt template (unchanged without one)."""
    template = model.attrs.get("prompt")
    if not template:
        return list(texts)
    mask = model.attrs["tokenizer"].mask_token
    return [template.replace("{mask}", mask).replace("{text}", text) for text in texts]


def tokenize(model: Model, texts: List[str], device, prompt: bool = True) -> Tuple[Any, Any]:
    """(input_ids, attention_mask) tensors on `device`, padded and truncated to
    the model's max_length with its tokenizer; the texts are put in the prompt
    template first unless `prompt` is False (GraphPrompt's own templates)."""
    import torch

    if prompt:
        texts = prompted(model, texts)
    fast = batch_tokenizer(model)
    if fast is not None:
        ids, mask = fast(texts)
        return torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)
    batch = model.attrs["tokenizer"](list(texts), padding=True, truncation=True,
                                     max_length=model.attrs["max_length"], return_tensors="pt")
    return batch["input_ids"].to(device), batch["attention_mask"].to(device)


def _make_converter(outer: Model) -> Callable:
    def convert_inputs(model: Model, X: EncoderInput, is_train: bool):
        payload, tower = X
        device = model.shims[0].device
        if tower != "segments":
            args = ArgsKwargs(args=tokenize(outer, payload, device), kwargs={"tower": tower})
            return args, lambda d_inputs: X
        segments = []
        for part_tower, part in payload:
            if isinstance(part, tuple):  # (inputs_embeds, attention_mask)
                segments.append((part_tower, None, part[1], part[0]))
            else:  # 'prompt' parts are GraphPrompt templates: no T0 around them
                segments.append((part_tower, *tokenize(outer, part, device,
                                                       prompt=part_tower != "prompt"), None))
        return ArgsKwargs(args=(None,), kwargs={"segments": segments}), lambda d_inputs: X
    return convert_inputs


def embed_texts(model: Model, texts: Sequence[str], tower: str, batch_size: int = 256,
                progress: bool = False) -> np.ndarray:
    """Embed texts with the PyTorch module in length-bucketed batches, in eval
    mode under `torch.inference_mode` (autocast on CUDA with mixed_precision).
    A text that occurs several times is encoded once (a corpus repeats its
    mentions: NCBI test has 960 mentions of 424 distinct strings).

    RETURNS (np.ndarray): (len(texts), dim) float32.
    """
    import torch

    if tower == "mention" and is_contextual(model):  # its mention tower reads docs, not texts
        raise BioELError(Errors.E212.format(what="Encoding mention strings", fix=(
            "Link docs with nlp(text) or nlp.pipe(texts): the mention is read there.")))
    first: dict = {}
    inverse = np.fromiter((first.setdefault(text, len(first)) for text in texts),
                          dtype=np.int64, count=len(texts))
    unique = list(first)
    out = np.zeros((len(unique), model.get_dim("nO")), dtype=np.float32)
    module = torch_module(model)
    device = next(module.parameters()).device
    autocast = device.type == "cuda" and bool(model.attrs.get("mixed_precision"))
    was_training = module.training
    module.eval()
    try:
        with torch.inference_mode():
            for indices in progress_bar(length_buckets(unique, batch_size), desc=f"Encoding {tower}s",
                                        unit=" batches", disable=not progress):
                ids, mask = tokenize(model, [unique[i] for i in indices], device)
                with torch.autocast(device_type="cuda", enabled=autocast):
                    embeddings = module.encode(tower, ids, mask)
                out[indices] = embeddings.float().cpu().numpy()
    finally:
        module.train(was_training)
    return out[inverse]


def forward(model: Model, X: EncoderInput, is_train: bool):
    if X[1] == "spans":  # (docs, spans) of a contextual model: its span layer
        return model.layers[1](X[0], is_train)
    return model.layers[0](X, is_train)


__all__ = ["build_biencoder", "build_from_saved", "is_built", "is_contextual", "save_encoder_config", "torch_module",
           "tokenize", "prompted", "batch_tokenizer", "embed_texts", "concept_tower_trained"]

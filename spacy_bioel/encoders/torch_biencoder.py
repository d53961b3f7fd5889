"""The bi-encoder: mentions and concept names embedded in one space by a
Hugging Face transformer (pure PyTorch; no spaCy import).

References:
    Lin et al., kNN-BioEL (Sec. 2.1, eqs. 1-2): f(m) = Encoder(m)[CLS], and
    s(m, e) = cos(f(m), f(e)). Mean pooling is the sentence-transformers
    default (and what the embedded MiniLM was trained with).
    Xu et al., GraphPrompt, eqs. 4-5: with a prompt template ("[MASK] is
    identical with v", T0) and 'mask' pooling, x_v is the transformer's output
    at the [MASK] token.
"""
from __future__ import annotations

import logging
from typing import List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

logger = logging.getLogger(__name__)

from .common import (CPU_LENGTH_CHUNKS, DEFAULT_ENCODER, MENTION_END, MENTION_START, length_buckets,
                     resolve_model_path)

POOLINGS = ("cls", "mean", "mask")
SIMILARITIES = ("cosine", "dot")
# (tower, input_ids or None, attention_mask, inputs_embeds or None)
Segment = Tuple[str, Optional[torch.Tensor], torch.Tensor, Optional[torch.Tensor]]


class BiEncoder(nn.Module):
    """Mention and concept towers over a transformer, with CLS or mean pooling.

    mention_encoder (nn.Module): A `transformers` model (AutoModel).
    concept_encoder (Optional[nn.Module]): A separate concept tower; None shares
        the mention tower's weights.
    pooling (str): 'cls', 'mean' (mean over non-padding tokens) or 'mask' (the
        first [MASK] token of each row; GraphPrompt's T0 representation).
    similarity (str): 'cosine' (embeddings L2-normalised) or 'dot'.
    mask_id (Optional[int]): The tokenizer's [MASK] id ('mask' pooling and
        GraphPrompt templates).
    cpu_length_chunks (int): `forward` encodes a batch of token ids on a CPU as
        this many sub-batches sorted by length (`encode_by_length`: the same
        embeddings, less padding computed); 1: one padded batch. CUDA batches
        are encoded whole.

    Inputs (forward): input_ids, attention_mask: (batch, seq_len) int tensors;
        tower: 'mention' or 'concept'; inputs_embeds: (batch, seq_len, hidden)
        token embeddings to use instead of input_ids (FGSM).
    Output: (batch, hidden) embeddings.

    Example:
        >>> model = BiEncoder(AutoModel.from_pretrained(path))
        >>> emb = model(**tokenizer(["colon cancer"], return_tensors="pt"))
    """

    def __init__(self, mention_encoder: nn.Module, concept_encoder: Optional[nn.Module] = None,
                 pooling: str = "mean", similarity: str = "cosine",
                 mask_id: Optional[int] = None,
                 cpu_length_chunks: int = CPU_LENGTH_CHUNKS) -> None:
        super().__init__()
        if pooling not in POOLINGS or similarity not in SIMILARITIES:
            from ..errors import BioELError, Errors
            raise BioELError(Errors.E151.format(pooling=pooling, similarity=similarity))
        self.mention_encoder = mention_encoder
        self.concept_encoder = concept_encoder
        self.pooling = pooling
        self.similarity = similarity
        self.mask_id = mask_id
        self.cpu_length_chunks = cpu_length_chunks

    @property
    def shared(self) -> bool:
        return self.concept_encoder is None

    @property
    def dim(self) -> int:
        return int(self.mention_encoder.config.hidden_size)

    def tower(self, tower: str) -> nn.Module:
        """The transformer that encodes `tower` ('mention' or 'concept')."""
        return self.mention_encoder if tower == "mention" or self.shared else self.concept_encoder

    def concept_input_embeddings(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(batch, seq, hidden) token input embeddings of the concept tower (the
        z that FGSM perturbs; pass them back as `inputs_embeds`)."""
        return self.tower("concept").get_input_embeddings()(input_ids)

    def forward(self, input_ids: Optional[torch.Tensor], attention_mask: Optional[torch.Tensor] = None,
                tower: str = "mention", inputs_embeds: Optional[torch.Tensor] = None,
                segments: Optional[Sequence[Segment]] = None) -> torch.Tensor:
        """Embed one batch with one tower or, with `segments`, several batches
        (mentions, concept names, FGSM-perturbed names) in one call, so that a
        training step has one output and one backward pass (thinc's PyTorch
        shim scales and unscales gradients once per backward).

        segments: (tower, input_ids or None, attention_mask, inputs_embeds or None)
            tuples; their embeddings are concatenated in order. Tower 'prompt'
            (GraphPrompt templates, mention tower) gives one row per [MASK]
            token, rows in reading order (`mask_states`).
        """
        if segments is not None:
            return torch.cat([self.mask_states(ids, mask) if part == "prompt"
                              else self._encode_batch(part, ids, mask, embeds)
                              for part, ids, mask, embeds in segments])
        return self._encode_batch(tower, input_ids, attention_mask, inputs_embeds)

    def _encode_batch(self, tower: str, input_ids: Optional[torch.Tensor],
                      attention_mask: torch.Tensor,
                      inputs_embeds: Optional[torch.Tensor]) -> torch.Tensor:
        if input_ids is None or inputs_embeds is not None or input_ids.device.type != "cpu":
            return self.encode(tower, input_ids, attention_mask, inputs_embeds)
        return self.encode_by_length(tower, input_ids, attention_mask, self.cpu_length_chunks)

    def encode(self, tower: str, input_ids: Optional[torch.Tensor], attention_mask: torch.Tensor,
               inputs_embeds: Optional[torch.Tensor] = None) -> torch.Tensor:
        """(batch, hidden) pooled (and, for cosine, L2-normalised) embeddings."""
        encoder = self.tower(tower)
        hidden = encoder(input_ids=input_ids, attention_mask=attention_mask,
                         inputs_embeds=inputs_embeds).last_hidden_state
        pooled = pool(hidden, attention_mask, self.pooling, input_ids, self.mask_id)
        return self._normalise(pooled)

    def encode_by_length(self, tower: str, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         chunks: int) -> torch.Tensor:
        """The embeddings of `encode(tower, input_ids, attention_mask)`, rows in
        the same order, computed over `chunks` sub-batches of rows sorted by
        length, each cut to its longest row: the padding a batch of short and
        long names carries is not computed (with the attention mask, a row's
        embedding does not depend on its padding).

        chunks (int): Sub-batches (1: the batch as it is).
        RETURNS (torch.Tensor): (batch, hidden).
        """
        n_rows = input_ids.shape[0]
        if chunks <= 1 or n_rows < 2:
            return self.encode(tower, input_ids, attention_mask)
        lengths = attention_mask.sum(dim=1)
        order = torch.argsort(lengths, stable=True)
        parts = []
        for rows in torch.tensor_split(order, min(chunks, n_rows)):
            width = max(int(lengths[rows].max()), 1)
            if bool(attention_mask[rows, width:].any()):  # padded on the left: keep every column
                width = attention_mask.shape[1]
            parts.append(self.encode(tower, input_ids[rows, :width], attention_mask[rows, :width]))
        sorted_rows = torch.cat(parts)
        out = torch.empty_like(sorted_rows)
        out[order] = sorted_rows
        return out

    def mask_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """(n masks, hidden): the mention tower's output at every [MASK] token of
        the batch, row by row, left to right (GraphPrompt eqs. 7 and T2)."""
        hidden = self.tower("mention")(input_ids=input_ids,
                                       attention_mask=attention_mask).last_hidden_state
        return self._normalise(hidden[input_ids == self.mask_id])

    def _normalise(self, pooled: torch.Tensor) -> torch.Tensor:
        if self.similarity == "cosine":
            pooled = nn.functional.normalize(pooled.float(), dim=-1)
        return pooled


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str,
         input_ids: Optional[torch.Tensor] = None, mask_id: Optional[int] = None) -> torch.Tensor:
    """(batch, hidden) from (batch, seq, hidden): the [CLS] vector ('cls'), the
    mean over non-padding tokens ('mean') or the first [MASK] token's vector
    ('mask'; the [CLS] vector for a row without one)."""
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mask":
        if input_ids is None or mask_id is None:
            from ..errors import BioELError, Errors
            raise BioELError(Errors.E190.format(
                problem="no input ids were given" if input_ids is None
                else "the tokenizer has no mask token"))
        first = (input_ids == mask_id).int().argmax(dim=1)  # 0 ([CLS]) when a row has none
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), first]
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (batch, seq, 1)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def freeze_bottom(transformer: nn.Module, n_layers: int, name: str = "") -> None:
    """Freeze the embedding layer and the first `n_layers` transformer layers
    of a BERT-style model (`embeddings` + `encoder.layer`), so that only the
    top layers train: on a CPU this roughly halves a training step (no
    gradient for the 30k x hidden word-embedding table, no backward through
    the bottom layers). 0 leaves every parameter trainable."""
    if n_layers <= 0:
        return
    layers = getattr(getattr(transformer, "encoder", None), "layer", None)
    embeddings = getattr(transformer, "embeddings", None)
    problem = ("it has no embeddings + encoder.layer" if layers is None or embeddings is None
               else f"it has {len(layers)} layers" if n_layers > len(layers) else None)
    if problem:
        from ..errors import BioELError, Errors
        raise BioELError(Errors.E167.format(n=n_layers, encoder=name, problem=problem))
    for module in [embeddings, *layers[:n_layers]]:
        for parameter in module.parameters():
            parameter.requires_grad_(False)


def load_transformer(name_or_path: str, *, config_only: bool = False):
    """Load (tokenizer, model) from a local directory, the embedded default, or
    a hub name, the weights in float32 whatever dtype they were saved in.
    `config_only` builds random weights from the config (used before loading
    saved weights)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from ..progress import quiet_library_bars

    quiet_library_bars()  # transformers' "Loading weights" bar, in a log file
    path = resolve_model_path(name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if config_only:  # the saved weights replace these: skip the random initialisation
        try:
            from transformers.initialization import no_init_weights
        except ImportError:  # transformers 4
            from transformers.modeling_utils import no_init_weights
        with no_init_weights():
            model = AutoModel.from_config(AutoConfig.from_pretrained(path))
    else:
        model = AutoModel.from_pretrained(path)
    # transformers 5 keeps a checkpoint's dtype (4 made float32): a float16 or
    # bfloat16 checkpoint would train in half precision (NaN on a CPU) and save
    # so; the towers train in float32 (autocast adds half precision on CUDA)
    return tokenizer, model.float()


@torch.no_grad()
def encode_texts(model: BiEncoder, tokenizer, texts: Sequence[str], *, tower: str = "mention",
                 batch_size: int = 256, max_length: int = 25, device: Union[str, torch.device] = "cpu",
                 progress: bool = False, desc: str = "Encoding") -> torch.Tensor:
    """Embed texts with length-bucketed batching (and autocast on CUDA).

    RETURNS (torch.Tensor): (len(texts), dim) float32 embeddings on the CPU.
    """
    from ..progress import progress_bar

    was_training = model.training
    model.eval()
    out = torch.empty((len(texts), model.dim), dtype=torch.float32)
    device = torch.device(device)
    batches = length_buckets(texts, batch_size)
    for indices in progress_bar(batches, desc=desc, unit=" batches", disable=not progress):
        batch = tokenizer([texts[i] for i in indices], padding=True, truncation=True,
                          max_length=max_length, return_tensors="pt")
        with torch.autocast(device_type="cuda", enabled=device.type == "cuda"):
            emb = model(batch["input_ids"].to(device), batch["attention_mask"].to(device), tower)
        out[torch.tensor(indices)] = emb.float().cpu()
    model.train(was_training)
    return out


__all__ = ["BiEncoder", "CPU_LENGTH_CHUNKS", "pool", "load_transformer", "freeze_bottom", "encode_texts", "length_buckets",
           "resolve_model_path", "DEFAULT_ENCODER", "MENTION_START", "MENTION_END"]

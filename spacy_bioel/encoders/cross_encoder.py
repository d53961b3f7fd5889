"""The cross-encoder of the reranker: one transformer reads a (mention in
context, candidate concept) pair and a linear head scores it (pure PyTorch; no
spaCy import).

References:
    Wiatrak et al., Proxy-based Zero-Shot Entity Linking by Effective Candidate
    Retrieval, Appendix (cross-encoder): y_{m,e} = red(T_cross(tau_{m,e})) with
    `red` mean pooling over the tokens, s_cross(m, e) = y_{m,e} W.
    Sui et al., BioFEG, Sec. 3.6: the mention-with-context input and the
    entity input concatenated in one sequence (Logeswaran et al. 2019).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .torch_biencoder import POOLINGS, pool


class CrossEncoder(nn.Module):
    """A transformer over a text pair and a linear scoring head.

    transformer (nn.Module): A `transformers` model (AutoModel).
    pooling (str): 'mean' (Wiatrak et al.) or 'cls'.
    dropout (float): Dropout on the pooled vector while training.
    zero_head (bool): Start the head at zero weight and bias, so every pair
        scores 0 until training moves it: a reranker that adds the linker's log
        score (`linker_weight`) then starts exactly at the linker's ranking, and
        learns a correction of it (the zero-initialised residual branch of
        ReZero, Bachlechner et al. 2021). The head's weight still gets a
        gradient (the pooled vector), and the transformer one after the first
        step.

    Inputs (forward): input_ids, attention_mask and, for BERT-style models,
        token_type_ids: (n_pairs, seq_len) int tensors.
    Output: (n_pairs, 1) scores (logits).

    Example:
        >>> model = CrossEncoder(AutoModel.from_pretrained(path))
        >>> scores = model(**tokenizer(["[M] colon cancer [/M]"], ["Colonic Neoplasms"],
        ...                             return_tensors="pt"))
    """

    def __init__(self, transformer: nn.Module, pooling: str = "mean", dropout: float = 0.1,
                 zero_head: bool = False) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            from ..errors import BioELError, Errors
            raise BioELError(Errors.E184.format(pooling=pooling))
        self.transformer = transformer
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(int(transformer.config.hidden_size), 1)
        if zero_head:
            nn.init.zeros_(self.head.weight)
            nn.init.zeros_(self.head.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: Optional[torch.Tensor] = None) -> torch.Tensor:
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        hidden = self.transformer(**kwargs).last_hidden_state  # (n, seq, hidden)
        pooled = pool(hidden, attention_mask, self.pooling)
        return self.head(self.dropout(pooled)).float()  # (n, 1)


__all__ = ["CrossEncoder", "POOLINGS"]

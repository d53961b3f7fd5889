"""Contrastive InfoNCE with in-batch and dynamic hard negatives.

References:
    Lin et al., kNN-BioEL: Improving Biomedical Entity Linking with
    Retrieval-Enhanced Learning, Sec. 2.2, eq. 3:

        L(m, e) = -log( d(m, e) / (d(m, e) + sum_{e' in E1} d(m, e') + sum_{e'' in E2} d(m, e'')) ),
        d(m, e) = exp(s(m, e) / tau),

    E1 = the other mentions' gold entities in the batch (in-batch negatives),
    E2 = the top-p most similar wrong entities from the whole KB, retrieved
    with the model being trained (dynamic hard negatives).

Inputs:
    mentions: (batch, dim) mention embeddings f(m).
    positives: (batch, dim) embeddings of each mention's gold-concept name f(e).
    hard_negatives: (batch, p, dim) or None: embeddings of E2.
    concept_ids: (batch,) int ids of the gold concepts; an in-batch "negative"
        with the mention's own concept is masked out (it is not false).
Output: scalar mean loss over the batch.

Example:
    >>> loss = InfoNCELoss(temperature=0.05)(m, e, hard, ids)
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn


class InfoNCELoss(nn.Module):
    """kNN-BioEL eq. 3 with s = dot product (cosine for normalised embeddings).

    temperature (float): tau (the paper uses 0.01 with SapBERT).
    in_batch (bool): Use the other positives of the batch as negatives (E1).
    """

    def __init__(self, temperature: float = 0.05, in_batch: bool = True) -> None:
        super().__init__()
        self.temperature = temperature
        self.in_batch = in_batch

    def logits(self, mentions: torch.Tensor, positives: torch.Tensor,
               hard_negatives: Optional[torch.Tensor], concept_ids: torch.Tensor) -> torch.Tensor:
        """RETURNS (torch.Tensor): (batch, 1 + batch + p) logits; column 0 is the
        positive, masked entries are -inf."""
        columns = [(mentions * positives).sum(-1, keepdim=True)]  # (batch, 1)
        if self.in_batch:
            in_batch = mentions @ positives.T  # (batch, batch)
            same = concept_ids.unsqueeze(0) == concept_ids.unsqueeze(1)  # (batch, batch)
            columns.append(in_batch.masked_fill(same, float("-inf")))
        if hard_negatives is not None and hard_negatives.shape[1]:
            columns.append(torch.einsum("bd,bpd->bp", mentions, hard_negatives))  # (batch, p)
        return torch.cat(columns, dim=1) / self.temperature

    def forward(self, mentions: torch.Tensor, positives: torch.Tensor,
                hard_negatives: Optional[torch.Tensor] = None,
                concept_ids: Optional[torch.Tensor] = None,
                groups: Optional[torch.Tensor] = None) -> torch.Tensor:
        """`groups` (document indices) is accepted for a common signature and unused."""
        if concept_ids is None:
            concept_ids = torch.arange(mentions.shape[0], device=mentions.device)
        logits = self.logits(mentions, positives, hard_negatives, concept_ids)
        target = torch.zeros(mentions.shape[0], dtype=torch.long, device=mentions.device)
        return nn.functional.cross_entropy(logits, target)


__all__ = ["InfoNCELoss"]

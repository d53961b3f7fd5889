"""Multi-similarity loss with online hard-pair mining: the loss of
self-alignment pre-training on knowledge-base synonyms.

References:
    Liu et al., Self-Alignment Pretraining for Biomedical Entity
    Representations (SapBERT), NAACL 2021, Sec. 2.2, eq. 1, with the
    multi-similarity loss and miner of Wang et al., Multi-Similarity Loss with
    General Pair Weighting for Deep Metric Learning, CVPR 2019 (eqs. 10-11 for
    mining, eq. 12 for the loss). For a batch X_b of names and the cosine
    similarity matrix S:

        L = 1/|X_b| sum_i [ 1/alpha log(1 + sum_{n in N_i} exp(alpha (S_in - lambda)))
                          + 1/beta  log(1 + sum_{p in P_i} exp(-beta (S_ip - lambda))) ]

    P_i / N_i are the mined positives / negatives of anchor i (a positive is a
    name of the same concept, a negative a name of another concept):

        keep negative n  if  S_in + epsilon > min_{p same concept} S_ip,
        keep positive p  if  S_ip - epsilon < max_{n other concept} S_in,

    so only the pairs that violate the margin epsilon contribute. SapBERT uses
    alpha = 2, beta = 50, lambda = 0.5, epsilon = 0.2.

Unlike the linker's losses (`loss(mentions, positives, negatives, ...)`), this
loss takes one set of embeddings and their concept labels: every name is an
anchor, and every other name in the batch a positive or a negative.

Inputs:
    embeddings: (batch, dim) L2-normalised name embeddings.
    labels: (batch,) int concept labels; names with the same label are synonyms.
Output: scalar mean loss over the batch's anchors (an anchor without a mined
    pair contributes 0).

Example:
    >>> loss = MultiSimilarityLoss()(embeddings, labels)
"""
from __future__ import annotations

from typing import Tuple

import torch
from torch import nn


def synonym_masks(labels: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """RETURNS (Tuple[torch.Tensor, torch.Tensor]): (batch, batch) boolean masks
    of every anchor's positives (same label, not itself) and negatives."""
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    return same & ~eye, ~same


def mine_hard_pairs(similarities: torch.Tensor, labels: torch.Tensor,
                    epsilon: float = 0.2) -> Tuple[torch.Tensor, torch.Tensor]:
    """The multi-similarity miner (Wang et al. eqs. 10-11).

    similarities (torch.Tensor): (batch, batch) S.
    labels (torch.Tensor): (batch,) concept labels.
    epsilon (float): The margin a pair must violate to be kept.
    RETURNS (Tuple[torch.Tensor, torch.Tensor]): (batch, batch) boolean masks of
        the kept positives and negatives of each anchor (row). An anchor with no
        positive keeps no negative; one with no negative keeps no positive.
    """
    positive, negative = synonym_masks(labels)
    scores = similarities.detach()
    inf = torch.tensor(float("inf"), dtype=scores.dtype, device=scores.device)
    hardest_positive = torch.where(positive, scores, inf).min(dim=1, keepdim=True).values
    hardest_negative = torch.where(negative, scores, -inf).max(dim=1, keepdim=True).values
    keep_negative = negative & (scores + epsilon > hardest_positive)
    keep_positive = positive & (scores - epsilon < hardest_negative)
    return keep_positive, keep_negative


class MultiSimilarityLoss(nn.Module):
    """SapBERT eq. 1 (Wang et al. eq. 12) over the pairs `mine_hard_pairs` keeps.

    alpha (float): Scale of the negative term (SapBERT: 2).
    beta (float): Scale of the positive term (SapBERT: 50).
    base (float): lambda, the similarity the terms are centred on (SapBERT: 0.5).
    epsilon (float): The miner's margin (SapBERT: 0.2); None uses every pair
        (no mining).
    """

    def __init__(self, alpha: float = 2.0, beta: float = 50.0, base: float = 0.5,
                 epsilon: float | None = 0.2) -> None:
        super().__init__()
        self.alpha = alpha
        self.beta = beta
        self.base = base
        self.epsilon = epsilon

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        similarities = embeddings @ embeddings.T  # (batch, batch)
        positive, negative = synonym_masks(labels) if self.epsilon is None else \
            mine_hard_pairs(similarities, labels, self.epsilon)
        negative_term = _log1p_sum_exp(self.alpha * (similarities - self.base), negative) / self.alpha
        positive_term = _log1p_sum_exp(-self.beta * (similarities - self.base), positive) / self.beta
        return (negative_term + positive_term).mean()


def _log1p_sum_exp(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Row-wise log(1 + sum_{j in mask} exp(logits_ij)), stably (0 for an empty row)."""
    masked = logits.masked_fill(~mask, float("-inf"))
    zeros = torch.zeros((logits.shape[0], 1), dtype=logits.dtype, device=logits.device)
    return torch.logsumexp(torch.cat([zeros, masked], dim=1), dim=1)


__all__ = ["MultiSimilarityLoss", "mine_hard_pairs"]

"""Proxy-based (Pb) candidate-retrieval loss.

References:
    Wiatrak et al., Proxy-based Zero-Shot Entity Linking by Effective Candidate
    Retrieval, Sec. 3, eq. 3:

        L_Pb(m, P) = log(1 + exp(-alpha (s(m, e+) - delta)))
                     + log(1 + sum_{e- in P-} exp(alpha (s(m, e-) + delta))),

    s = cosine similarity, alpha a scale (32), delta a margin (0, 0.01, 0.05,
    0.1). The positive and negative terms are decoupled (unlike softmax
    cross-entropy), so negatives are pushed to low *absolute* similarity: the
    basis of NIL detection by a score threshold (Sec. 5). The FGSM term of
    eq. 8 is added by the component (it needs the concept tower's inputs).

Inputs:
    mentions: (batch, dim) L2-normalised mention embeddings.
    positives: (batch, dim) gold-concept name embeddings (proxies e+).
    negatives: (batch, p, dim) or None: sampled negative names (P-).
    concept_ids: (batch,) gold concept ids (masks in-batch negatives of the same concept).
Output: scalar mean loss over the batch.

Example:
    >>> loss = ProxyLoss(alpha=32, margin=0.05)(m, e, negatives, ids)
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from .negatives import gather_negatives


class ProxyLoss(nn.Module):
    """Wiatrak et al. eq. 3.

    alpha (float): Scale of the similarities.
    margin (float): delta.
    in_batch (bool): Also use the other mentions' positives as negatives.
    """

    def __init__(self, alpha: float = 32.0, margin: float = 0.0, in_batch: bool = True) -> None:
        super().__init__()
        self.alpha = alpha
        self.margin = margin
        self.in_batch = in_batch

    def forward(self, mentions: torch.Tensor, positives: torch.Tensor,
                negatives: Optional[torch.Tensor] = None,
                concept_ids: Optional[torch.Tensor] = None,
                groups: Optional[torch.Tensor] = None) -> torch.Tensor:
        if concept_ids is None:
            concept_ids = torch.arange(mentions.shape[0], device=mentions.device)
        positive = (mentions * positives).sum(-1)  # (batch,)
        pos_term = nn.functional.softplus(-self.alpha * (positive - self.margin))  # (batch,)
        stacked, valid = gather_negatives(positives, negatives, concept_ids, self.in_batch)
        negative = torch.einsum("bd,bkd->bk", mentions, stacked)  # (batch, K)
        logits = (self.alpha * (negative + self.margin)).masked_fill(~valid, float("-inf"))
        zero = logits.new_zeros((logits.shape[0], 1))  # the "1 +" inside the log
        neg_term = torch.logsumexp(torch.cat([zero, logits], dim=1), dim=1)  # (batch,)
        return (pos_term + neg_term).mean()


__all__ = ["ProxyLoss"]

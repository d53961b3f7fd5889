"""Listwise softmax cross-entropy over a mention's candidate list (the
reranker's loss).

References:
    Wiatrak et al., Proxy-based Zero-Shot Entity Linking, eq. 1 and the
    appendix's cross-encoder: L = -log( exp(s(m, e+)) / sum_{e in C(m)} exp(s(m, e)) ),
    C(m) the retrieved candidates (the gold inserted when retrieval missed it;
    the cross-encoder is trained on the top 16 without extra negative sampling).

Inputs:
    scores: (n,) logits of all pairs of a batch, mention after mention.
    groups: per mention, (start, length, gold position within its group).
Output: (mean loss, d_scores), d_scores = (softmax - one_hot) / n_mentions.

Example:
    >>> loss, d_scores = listwise_softmax_loss(np.array([2.0, 0.5, -1.0]), [(0, 3, 0)])
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np


def listwise_softmax_loss(scores: np.ndarray, groups: Sequence[Tuple[int, int, int]]
                          ) -> Tuple[float, np.ndarray]:
    """RETURNS (Tuple[float, np.ndarray]): the mean loss over the groups and the
    gradient of that mean with respect to `scores` (same shape)."""
    scores = np.asarray(scores, dtype=np.float64)
    d_scores = np.zeros_like(scores)
    if not groups:
        return 0.0, d_scores.astype(np.float32)
    total = 0.0
    for start, length, gold in groups:
        logits = scores[start:start + length]
        shifted = logits - logits.max()
        log_z = np.log(np.exp(shifted).sum())
        probabilities = np.exp(shifted - log_z)
        total += float(log_z - shifted[gold])
        probabilities[gold] -= 1.0
        d_scores[start:start + length] = probabilities
    n = len(groups)
    return total / n, (d_scores / n).astype(np.float32)


__all__ = ["listwise_softmax_loss"]

"""The negative set shared by the pair- and proxy-based losses.

Every loss sees the same negatives for a mention: the names sampled for it
(hard, random or mixed; chosen by the component) and, optionally, the other
mentions' positives in the batch (in-batch negatives), with those of the
mention's own concept masked out (they are not negatives).
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch


def gather_negatives(positives: torch.Tensor, negatives: Optional[torch.Tensor],
                     concept_ids: torch.Tensor, in_batch: bool
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Stack sampled and in-batch negatives per mention.

    positives: (batch, dim) gold-concept name embeddings.
    negatives: (batch, p, dim) sampled negative names, or None.
    concept_ids: (batch,) gold concept ids.
    RETURNS: (batch, K, dim) negative embeddings and a (batch, K) bool mask of
        the valid ones (K = p + batch when in_batch, else p).
    """
    batch, dim = positives.shape
    parts, masks = [], []
    if negatives is not None and negatives.shape[1]:
        parts.append(negatives)  # (batch, p, dim)
        masks.append(torch.ones(negatives.shape[:2], dtype=torch.bool, device=positives.device))
    if in_batch:
        parts.append(positives.unsqueeze(0).expand(batch, batch, dim))  # (batch, batch, dim)
        masks.append(concept_ids.unsqueeze(0) != concept_ids.unsqueeze(1))  # (batch, batch)
    if not parts:
        return positives.new_zeros((batch, 0, dim)), torch.zeros((batch, 0), dtype=torch.bool,
                                                                  device=positives.device)
    return torch.cat(parts, dim=1), torch.cat(masks, dim=1)


__all__ = ["gather_negatives"]

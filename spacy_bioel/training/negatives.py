"""Negative samplers for the linker's `update` (the `negatives` stage).

Given the batch's mention embeddings and gold concepts, a sampler returns each
mention's positive (the gold concept's name closest to the mention) and p
negative names:
- `HardNegatives.v1`: the best name of each of the top-p wrong concepts
  retrieved from the whole KB with the model being trained (kNN-BioEL Sec. 2.2,
  eq. 3; the index is refreshed every epoch);
- `RandomNegatives.v1`: the closest name of p wrong concepts drawn uniformly;
- `MixedNegatives.v1`: round(p * hard_fraction) hard, the rest random
  (Wiatrak et al. Sec. 4, 'mixed-50%').
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from ..errors import BioELError, Errors
from ..index.name_index import NameIndex


class NegativeSampler:
    """n (int): p, the negatives per mention (0: in-batch negatives only).
    hard_fraction (float): the share of them retrieved (1 hard, 0 random)."""

    def __init__(self, n: int = 4, hard_fraction: float = 1.0, name: str = "hard") -> None:
        if n < 0 or not 0.0 <= hard_fraction <= 1.0:
            raise BioELError(Errors.E165.format(name=name, sampling=f"n={n}", fraction=hard_fraction))
        self.n = int(n)
        self.hard_fraction = float(hard_fraction)

    def n_hard(self, p: int) -> int:
        return int(round(p * self.hard_fraction))

    def __call__(self, queries: np.ndarray, gold: Sequence[int], index: NameIndex,
                 rng: np.random.Generator) -> Tuple[List[int], List[int], int]:
        """RETURNS (Tuple[List[int], List[int], int]): positive name per mention,
            p negative names per mention (mention-major), and p."""
        n_concepts = len(index.names.concept_ids)
        p = min(self.n, n_concepts - 1)
        positives = [index.closest_name(q, c) for q, c in zip(queries, gold)]
        negatives: List[int] = []
        if not p:
            return positives, negatives, p
        n_hard = self.n_hard(p)
        hits = index.search(queries, k=n_hard + 1) if n_hard else [[] for _ in gold]
        for query, row, concept in zip(queries, hits, gold):
            hard = [(owner, name) for owner, name, _ in row if owner != concept][:n_hard]
            taken = {concept} | {owner for owner, _ in hard}
            drawn: List[int] = []
            while len(drawn) < p - len(hard):
                candidate = int(rng.integers(n_concepts))
                if candidate not in taken:
                    taken.add(candidate)
                    drawn.append(candidate)
            negatives.extend([name for _, name in hard] +
                             [index.closest_name(query, c) for c in drawn])
        return positives, negatives, p


__all__ = ["NegativeSampler"]

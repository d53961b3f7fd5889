"""The `ranker` stage: bi-encoder candidate scores interpolated with the kNN
datastore's neighbours (spaCy reserves a component's `scorer` argument for
evaluation, so this stage is named `ranker`).

References:
    Lin et al., kNN-BioEL, Sec. 2.3, eqs. 4-6 (see `datastore.knn`).

Inputs:
    rank(candidates [(concept_id, retrieval score, similarity)], neighbours
         [(concept_id, similarity)] sorted best first, top_k)
Output:
    Ranking(candidates [(concept_id, p)] best first, p in [0, 1];
            similarity: the top concept's cosine in [0, 1] (its best name, or for a
            concept found by the datastore alone its nearest neighbour); support: the best cosine among the candidates and,
            with kNN on, the nearest neighbour)

Example:
    >>> ranker = KNNRanker(use_knn=True, knn_k=4, knn_lambda=0.1)
    >>> ranker.rank([("D1", 0.9, 0.9), ("D2", 0.7, 0.7)], [("D1", 0.95)], top_k=64)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..validation import MAX_TEMPERATURE, MAX_TOP_K, MIN_TEMPERATURE, as_bool, as_float, as_int
from .interpolation import interpolate, model_distribution

RankCandidate = Tuple[str, float, float]


@dataclass
class Ranking:
    candidates: List[Tuple[str, float]]
    similarity: Optional[float]
    support: float


class KNNRanker:
    """use_knn (bool): interpolate with the datastore (eq. 6) or use eq. 4 alone.
    knn_k (int): neighbours retrieved. knn_lambda (float): lambda of eq. 6.
    beta1, beta2 (float): temperatures of eqs. 4 and 5."""

    PARAMS = ("use_knn", "knn_k", "knn_lambda", "beta1", "beta2")

    def __init__(self, use_knn: bool = True, knn_k: int = 4, knn_lambda: float = 0.1,
                 beta1: float = 0.05, beta2: float = 1.0) -> None:
        self.set_params(use_knn=use_knn, knn_k=knn_k, knn_lambda=knn_lambda, beta1=beta1,
                        beta2=beta2)

    def get_params(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.PARAMS}

    def set_params(self, **params: Any) -> None:
        """Set and check parameters: use_knn a bool, knn_k >= 1, knn_lambda in [0, 1],
        the temperatures beta1, beta2 > 0 (E175; a zero temperature divides by zero)."""
        checks = {"use_knn": lambda v: as_bool("ranker.use_knn", v),
                  "knn_k": lambda v: as_int("ranker.knn_k", v, 1, MAX_TOP_K),
                  "knn_lambda": lambda v: as_float("ranker.knn_lambda", v, 0, 1),
                  "beta1": lambda v: as_float("ranker.beta1", v, MIN_TEMPERATURE, MAX_TEMPERATURE),
                  "beta2": lambda v: as_float("ranker.beta2", v, MIN_TEMPERATURE, MAX_TEMPERATURE)}
        for name, value in params.items():
            if name in checks and value is not None:
                setattr(self, name, checks[name](value))

    def rank(self, candidates: Sequence[RankCandidate], neighbours: Sequence[Tuple[str, float]],
             top_k: int) -> Ranking:
        scored = [(cid, score) for cid, score, _ in candidates]
        neighbours = list(neighbours)[:self.knn_k] if self.use_knn else []
        if neighbours:
            ranked = interpolate(scored, neighbours, self.knn_lambda, self.beta1, self.beta2)[:top_k]
        else:
            probs = model_distribution(scored, self.beta1)
            ranked = [(cid, probs[cid]) for cid, _ in scored]
        similarity = {cid: sim for cid, _, sim in candidates}
        for cid, sim in neighbours:  # a concept found by the datastore alone: its nearest one
            similarity.setdefault(cid, sim)
        best = max([sim for _, _, sim in candidates] + [s for _, s in neighbours[:1]], default=-1.0)
        top = similarity.get(ranked[0][0]) if ranked else None
        top = None if top is None else min(1.0, max(0.0, float(top)))
        return Ranking([(cid, min(1.0, max(0.0, float(p)))) for cid, p in ranked], top, best)


__all__ = ["KNNRanker", "Ranking"]

"""The interpolation of the kNN datastore's neighbour distribution with the
model's (kNN-BioEL eqs. 4-6), per mention and vectorised over a dev set for
tuning.

References:
    Lin et al., kNN-BioEL, Sec. 2.3:
    eq. 4  p_model(y|x) ∝ exp(s(x, y) / beta1)        over the model's candidates;
    eq. 5  p_kNN(y|x)   ∝ max_{(k_i, v_i) in N, v_i = y} exp(g(f(x), k_i) / beta2)
           over the k retrieved neighbours N (zero for concepts not among them);
    eq. 6  p(y|x) = lambda * p_kNN(y|x) + (1 - lambda) * p_model(y|x).
    g is cosine similarity; keys are training-mention embeddings f(m_i) and
    values their gold concept ids.

Inputs:
    interpolate(candidates [(id, s)], neighbours [(id, g)], lam, beta1, beta2)
        -> [(id, p)] sorted by p descending.

Example:
    >>> interpolate(model_candidates, store.search(q, k=4)[0], 0.1, 0.05, 1.0)
"""
from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

import numpy as np

Scored = List[Tuple[str, float]]


def _softmax(values: Sequence[float], temperature: float) -> np.ndarray:
    scaled = np.asarray(values, dtype=np.float64) / temperature
    scaled -= scaled.max()
    exp = np.exp(scaled)
    return exp / exp.sum()


def knn_distribution(neighbours: Scored, temperature: float) -> Dict[str, float]:
    """Eq. 5: softmax-style weights exp(g / beta2) with MAX aggregation per
    concept, normalised over the concepts present."""
    if not neighbours:
        return {}
    best: Dict[str, float] = {}
    for concept_id, sim in neighbours:
        best[concept_id] = max(best.get(concept_id, -math.inf), sim)
    probs = _softmax(list(best.values()), temperature)
    return dict(zip(best, probs.tolist()))


def model_distribution(candidates: Scored, temperature: float) -> Dict[str, float]:
    """Eq. 4: softmax of candidate similarities at temperature beta1."""
    if not candidates:
        return {}
    probs = _softmax([s for _, s in candidates], temperature)
    return {cid: float(p) for (cid, _), p in zip(candidates, probs)}


def interpolate(candidates: Scored, neighbours: Scored, lam: float, beta1: float,
                beta2: float) -> Scored:
    """Eq. 6 over the union of model candidates and neighbour labels.

    RETURNS (List[Tuple[str, float]]): (concept_id, p) sorted by p descending,
        ties in candidate order.
    """
    p_model = model_distribution(candidates, beta1)
    p_knn = knn_distribution(neighbours, beta2)
    order = list(dict.fromkeys([c for c, _ in candidates] + list(p_knn)))
    mixed = [(cid, lam * p_knn.get(cid, 0.0) + (1.0 - lam) * p_model.get(cid, 0.0))
             for cid in order]
    return sorted(mixed, key=lambda item: -item[1])


def _row_softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    """Softmax of every row over its finite entries (-inf entries get 0; an
    all -inf row gives zeros)."""
    finite = np.isfinite(scores)
    top = np.where(finite.any(axis=1), np.max(np.where(finite, scores, -np.inf), axis=1), 0.0)
    exp = np.where(finite, np.exp((np.where(finite, scores, 0.0) - top[:, None]) / temperature), 0.0)
    total = exp.sum(axis=1, keepdims=True)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


def grid_accuracy(candidates: Sequence[Scored], neighbours: Sequence[Scored],
                  gold: Sequence[set], k_values: Sequence[int], lambdas: Sequence[float],
                  beta1s: Sequence[float], beta2s: Sequence[float]) -> List[Dict[str, float]]:
    """Acc@1 of `interpolate` (eqs. 4-6) for every (k, lambda, beta1, beta2),
    vectorised over mentions: the same top-1 as calling `interpolate` on each
    mention (ties in candidate order, then neighbour order) at a fraction of
    the time, so `tune` stays fast on large dev sets.

    candidates, neighbours: per mention, (concept_id, score), neighbours
        sorted by similarity (as DatastoreKNN.search returns them).
    gold: per mention, the set of gold ids (mentions are counted as given).
    RETURNS (List[dict]): {'k', 'lambda', 'beta1', 'beta2', 'acc@1'} per combination.
    """
    n = len(candidates)
    labels = [list(dict.fromkeys([c for c, _ in cands] + [c for c, _ in neigh]))
              for cands, neigh in zip(candidates, neighbours)]
    width = max([len(u) for u in labels] + [1])
    model = np.full((n, width), -np.inf)
    correct = np.zeros((n, width), dtype=bool)
    best = {k: np.full((n, width), -np.inf) for k in k_values}
    for i, (cands, neigh, union) in enumerate(zip(candidates, neighbours, labels)):
        position = {c: j for j, c in enumerate(union)}
        for cid, score in cands:  # a repeated id keeps its last score, as in model_distribution
            model[i, position[cid]] = score
        for j, cid in enumerate(union):
            correct[i, j] = cid in gold[i]
        for k in k_values:
            row = best[k][i]
            for cid, sim in neigh[:k]:
                row[position[cid]] = max(row[position[cid]], sim)
    p_model = {b1: _row_softmax(model, b1) for b1 in beta1s}
    rows = []
    for k in k_values:
        p_knn = {b2: _row_softmax(best[k], b2) for b2 in beta2s}
        for lam in lambdas:
            for b1 in beta1s:
                for b2 in beta2s:
                    mixed = lam * p_knn[b2] + (1.0 - lam) * p_model[b1]
                    top = mixed.argmax(axis=1)  # the first maximum: candidate order breaks ties
                    acc = float(correct[np.arange(n), top].mean()) if n else 0.0
                    rows.append({"k": k, "lambda": lam, "beta1": b1, "beta2": b2, "acc@1": acc})
    return rows


__all__ = ["interpolate", "knn_distribution", "model_distribution", "grid_accuracy", "Scored"]

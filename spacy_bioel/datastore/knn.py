"""The kNN datastore of training mentions and the interpolation of its
neighbour distribution with the model's.

References:
    Lin et al., kNN-BioEL, Sec. 2.3:
    eq. 4  p_model(y|x) ∝ exp(s(x, y) / beta1)        over the model's candidates;
    eq. 5  p_kNN(y|x)   ∝ max_{(k_i, v_i) in N, v_i = y} exp(g(f(x), k_i) / beta2)
           over the k retrieved neighbours N (zero for concepts not among them);
    eq. 6  p(y|x) = lambda * p_kNN(y|x) + (1 - lambda) * p_model(y|x).
    g is cosine similarity; keys are training-mention embeddings f(m_i) and
    values their gold concept ids.

Inputs:
    DatastoreKNN.add(keys (n, dim) float32 L2-normalised, values List[str])
    DatastoreKNN.search(queries (batch, dim), k) -> List[List[(concept_id, sim)]]
    interpolate(candidates [(id, s)], neighbours [(id, g)], lam, beta1, beta2)
        -> [(id, p)] sorted by p descending.

Example:
    >>> store = DatastoreKNN(dim=384); store.add(keys, ["D1", "D2"])
    >>> interpolate(model_candidates, store.search(q, k=4)[0], 0.1, 0.05, 1.0)
"""
from __future__ import annotations

import io
import math
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..errors import BioELError, Errors

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


class DatastoreKNN:
    """Keys: training-mention embeddings; values: their gold concept ids.

    Exact inner-product search (cosine for normalised keys) with FAISS when
    available, else numpy.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.keys = np.zeros((0, dim), dtype=np.float32)
        self.values: List[str] = []
        self._index = None

    def __len__(self) -> int:
        return len(self.values)

    def add(self, keys: np.ndarray, values: Sequence[str]) -> None:
        """Replace the datastore's content."""
        keys = np.ascontiguousarray(keys, dtype=np.float32)  # (n, dim)
        if len(keys) != len(values) or (len(keys) and keys.shape[1] != self.dim):
            raise BioELError(Errors.E155.format(n_keys=len(keys), n_values=len(values)))
        self.keys, self.values = keys, list(values)
        self._index = None
        from ..index.dense import faiss_available
        if faiss_available() and len(keys):
            import faiss
            self._index = faiss.IndexFlatIP(self.dim)
            self._index.add(keys)

    def search(self, queries: np.ndarray, k: int) -> List[Scored]:
        """RETURNS (List[List[Tuple[str, float]]]): k nearest (value, similarity) per query."""
        if not len(self):
            return [[] for _ in range(len(queries))]
        k = min(k, len(self))
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if self._index is not None:
            sims, indices = self._index.search(queries, k)
        else:
            all_sims = queries @ self.keys.T  # (batch, n)
            indices = np.argsort(-all_sims, axis=1, kind="stable")[:, :k]
            sims = np.take_along_axis(all_sims, indices, axis=1)
        return [[(self.values[i], float(s)) for i, s in zip(row_i, row_s) if i >= 0]
                for row_i, row_s in zip(indices, sims)]

    def to_bytes(self) -> bytes:
        import srsly
        buffer = io.BytesIO()
        np.save(buffer, self.keys)
        return srsly.msgpack_dumps({"dim": self.dim, "keys": buffer.getvalue(),
                                    "values": self.values})

    @classmethod
    def from_bytes(cls, data: bytes) -> "DatastoreKNN":
        import srsly
        msg = srsly.msgpack_loads(data)
        store = cls(msg["dim"])
        store.add(np.load(io.BytesIO(msg["keys"])), msg["values"])
        return store


__all__ = ["DatastoreKNN", "interpolate", "knn_distribution", "model_distribution"]

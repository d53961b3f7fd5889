"""Dense candidate store: nearest concept names by inner product (cosine for
normalised embeddings), max-aggregated per concept.

Backends: FAISS (`faiss-cpu` by default; exact `IndexFlatIP`, or HNSW / IVF-PQ
for large KBs) and a torch matmul top-k (used on a GPU when GPU FAISS is
absent, or when faiss is not installed). The store holds one row per concept
name; a concept's score is the best score of its names.

References:
    Johnson et al., Billion-scale similarity search with GPUs (FAISS), 2019.
    kNN-BioEL Sec. 3.1 (FAISS retrieval over all entity names).

Inputs:
    add(embeddings (n_names, dim) float32, owners (n_names,) concept index)
    search(queries (batch, dim), k) -> List[List[(concept_id, score)]]

Example:
    >>> store = DenseCandidateStore(concept_ids, dim=384)
    >>> store.add(name_embeddings, owners)
    >>> store.search(mention_embeddings, k=10)
"""
from __future__ import annotations

import io
import logging
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import BioELError, Errors

logger = logging.getLogger(__name__)
INDEX_TYPES = ("flat", "hnsw", "ivfpq")
BACKENDS = ("auto", "faiss", "torch")


def faiss_available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


class DenseCandidateStore:
    """Concept-level top-k over name embeddings.

    concept_ids (Sequence[str]): Concepts, indexed by `owners`.
    dim (int): Embedding size.
    index_type (str): 'flat' (exact, default), 'hnsw' or 'ivfpq' (approximate).
    backend (str): 'auto' (faiss if importable, else torch), 'faiss' or 'torch'.
    device (str): torch device for the torch backend ('cpu', 'cuda:0').
    """

    def __init__(self, concept_ids: Sequence[str], dim: int, *, index_type: str = "flat",
                 backend: str = "auto", device: str = "cpu", hnsw_m: int = 32,
                 ivf_lists: int = 1024, pq_m: int = 16) -> None:
        if index_type not in INDEX_TYPES or backend not in BACKENDS:
            raise BioELError(Errors.E152.format(index_type=index_type, backend=backend))
        if backend == "auto":
            backend = "faiss" if faiss_available() and not device.startswith("cuda") else "torch"
        if backend == "faiss" and not faiss_available():
            if index_type != "flat":
                raise BioELError(Errors.E177.format(index_type=index_type))
            logger.warning("faiss is not installed: the flat index runs on torch instead")
            backend = "torch"
        if backend == "torch" and index_type != "flat":
            raise BioELError(Errors.E152.format(index_type=index_type, backend=backend))
        self.concept_ids = list(concept_ids)
        self.dim = dim
        self.index_type = index_type
        self.backend = backend
        self.device = device
        self.params = {"hnsw_m": hnsw_m, "ivf_lists": ivf_lists, "pq_m": pq_m}
        self.owners = np.zeros((0,), dtype=np.int64)
        self._index = None
        self._matrix = None

    def __len__(self) -> int:
        return len(self.owners)

    def _new_faiss_index(self, n: int):
        import faiss

        if self.index_type == "flat":
            return faiss.IndexFlatIP(self.dim)
        if self.index_type == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.params["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = 128
            return index
        lists = max(1, min(self.params["ivf_lists"], n // 39))
        quantizer = faiss.IndexFlatIP(self.dim)
        index = faiss.IndexIVFPQ(quantizer, self.dim, lists, self.params["pq_m"], 8,
                                 faiss.METRIC_INNER_PRODUCT)
        index.nprobe = min(lists, 32)
        return index

    def add(self, embeddings: np.ndarray, owners: np.ndarray) -> None:
        """(Re)build the store from all name embeddings (replaces what was there)."""
        embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)  # (n_names, dim)
        if embeddings.ndim != 2 or embeddings.shape[1] != self.dim or len(embeddings) != len(owners):
            raise BioELError(Errors.E153.format(shape=embeddings.shape, dim=self.dim,
                                                n_owners=len(owners)))
        self.owners = np.asarray(owners, dtype=np.int64)
        if self.backend == "faiss":
            self._index = self._new_faiss_index(len(embeddings))
            if not self._index.is_trained:
                self._index.train(embeddings)
            self._index.add(embeddings)
        else:
            import torch
            self._matrix = torch.from_numpy(embeddings).to(self.device)

    def _search_names(self, queries: np.ndarray, n: int) -> Tuple[np.ndarray, np.ndarray]:
        if self.backend == "faiss":
            scores, indices = self._index.search(queries, n)
            return scores, indices
        import torch
        sims = torch.from_numpy(queries).to(self.device) @ self._matrix.T  # (batch, n_names)
        values, indices = torch.topk(sims, n, dim=1)
        return values.cpu().numpy(), indices.cpu().numpy()

    def search(self, queries: np.ndarray, k: int, expansion: int = 4
               ) -> List[List[Tuple[str, float]]]:
        """Top-k concepts per query as (concept_id, score), best first (see `search_names`)."""
        return [[(self.concept_ids[owner], score) for owner, _name, score in row]
                for row in self.search_names(queries, k, expansion)]

    def vectors(self) -> np.ndarray:
        """RETURNS (np.ndarray): (n_names, dim) the stored name embeddings (exact
        for flat and HNSW indexes and the torch backend, PQ-approximate for IVF-PQ)."""
        if self.backend == "torch":
            return self._matrix.cpu().numpy() if self._matrix is not None else \
                np.zeros((0, self.dim), np.float32)
        if self._index is None:
            return np.zeros((0, self.dim), np.float32)
        if self.index_type == "ivfpq":
            import faiss
            faiss.extract_index_ivf(self._index).make_direct_map()
        return self._index.reconstruct_n(0, self._index.ntotal)

    def search_names(self, queries: np.ndarray, k: int, expansion: int = 4,
                     allowed: Optional[Sequence[Optional[np.ndarray]]] = None
                     ) -> List[List[Tuple[int, int, float]]]:
        """Top-k concepts per query (best name score per concept, descending).

        allowed: per query, a (n_concepts,) bool mask of the concepts it may
            return (a semantic-type filter), or None for all.
        RETURNS (List[List[Tuple[int, int, float]]]): (concept index, index of
            its best name, score) per query, best first.

        Names are searched in growing pools (k * expansion, doubled while fewer
        than k distinct allowed concepts appear), so the concept ranking equals
        exact max-aggregation whenever the name search itself is exact.
        """
        if k < 1:
            raise BioELError(Errors.E104.format(k=k))
        if not len(self):
            raise BioELError(Errors.E105)
        queries = np.ascontiguousarray(queries, dtype=np.float32)  # (batch, dim)
        n_names = len(self)
        results: List[Optional[List[Tuple[int, int, float]]]] = [None] * len(queries)
        pending = np.arange(len(queries))
        pool = min(n_names, max(k * expansion, k))
        while len(pending):
            scores, indices = self._search_names(queries[pending], pool)
            still = []
            for row, query_index in enumerate(pending):
                ranked: Dict[int, Tuple[int, float]] = {}
                mask = allowed[query_index] if allowed is not None else None
                for name_index, score in zip(indices[row], scores[row]):
                    if name_index < 0:
                        continue
                    owner = int(self.owners[name_index])
                    if mask is not None and not mask[owner]:
                        continue
                    if owner not in ranked:
                        ranked[owner] = (int(name_index), float(score))
                if len(ranked) >= k or pool >= n_names:
                    results[query_index] = [(owner, name, score) for owner, (name, score)
                                            in list(ranked.items())[:k]]
                else:
                    still.append(query_index)
            pending = np.array(still, dtype=np.int64)
            pool = min(n_names, pool * 2)
        return results  # type: ignore[return-value]

    def to_bytes(self) -> bytes:
        """A flat store saves its vectors as .npy (either backend loads them, FAISS
        or not); HNSW and IVF-PQ save FAISS's own serialisation."""
        import srsly

        if self.backend == "faiss" and self.index_type != "flat":
            import faiss
            index_bytes = faiss.serialize_index(self._index).tobytes() if self._index is not None else b""
        else:
            buffer = io.BytesIO()
            np.save(buffer, self.vectors(), allow_pickle=False)
            index_bytes = buffer.getvalue()
        return srsly.msgpack_dumps({"format": "faiss" if self.index_type != "flat" else "npy",
            "concept_ids": self.concept_ids, "dim": self.dim, "index_type": self.index_type,
            "backend": self.backend, "params": self.params, "owners": self.owners.tolist(),
            "index": index_bytes})

    @classmethod
    def from_bytes(cls, data: bytes, *, device: str = "cpu", path: str = "<bytes>"
                   ) -> "DenseCandidateStore":
        import srsly

        try:
            msg = srsly.msgpack_loads(data)
            # files written before the "format" key: FAISS bytes when the backend was faiss
            fmt = msg.get("format", "faiss" if msg["backend"] == "faiss" else "npy")
            backend = msg["backend"]
            if backend == "faiss" and not faiss_available():
                if fmt == "faiss" or msg["index_type"] != "flat":
                    raise BioELError(Errors.E177.format(index_type=msg["index_type"]))
                backend = "torch"
            store = cls(msg["concept_ids"], msg["dim"], index_type=msg["index_type"] if backend == "faiss" else "flat",
                        backend=backend, device=device, **msg["params"])
            store.owners = np.asarray(msg["owners"], dtype=np.int64)
            if not msg["index"]:
                return store
            if fmt == "faiss":
                import faiss
                index = faiss.deserialize_index(np.frombuffer(msg["index"], dtype=np.uint8))
                if index.d != store.dim:
                    raise ValueError(f"vectors of dimension {index.d}, not {store.dim}")
                if backend == "faiss":
                    store._index = index
                else:  # reconstruct vectors for the torch backend
                    import torch
                    store._matrix = torch.from_numpy(index.reconstruct_n(0, index.ntotal)).to(device)
            else:
                import torch
                matrix = np.load(io.BytesIO(msg["index"]), allow_pickle=False)
                if matrix.ndim != 2 or matrix.shape != (len(store.owners), store.dim):
                    raise ValueError(f"vectors of shape {matrix.shape}, not "
                                     f"({len(store.owners)}, {store.dim})")
                if backend == "faiss":
                    store.add(matrix, store.owners)
                else:
                    store._matrix = torch.from_numpy(matrix).to(device)
        except (KeyError, ValueError, TypeError, RuntimeError, AttributeError, OSError) as err:
            raise BioELError(Errors.E154.format(path=path, problem=f"{type(err).__name__}: {err}"))
        if len(store.owners) and (store._index is not None and store._index.ntotal != len(store.owners)):
            raise BioELError(Errors.E154.format(path=path, problem="index size differs from the name table"))
        return store


__all__ = ["DenseCandidateStore", "faiss_available", "INDEX_TYPES", "BACKENDS"]

"""The concept-name index of a linker: every KB name, its embedding by the
concept tower, and the dense store searched over them.

It owns the moment of refresh. Embeddings are computed only by `refresh`,
which the component calls at defined moments (`initialize`, the end of each
training epoch, spaCy's evaluation steps, an explicit `BioELLinker.refresh()`),
never during prediction or serialisation. `stale` says the concept tower has
changed since the last refresh. With `embedding_cache` set and a frozen
concept tower, the embeddings are read from (or written to) a folder, keyed by
the names, the encoder settings and the tower's weights.

References:
    kNN-BioEL Sec. 2.2 (dynamic hard negatives from an index refreshed every
    epoch) and Sec. 3.1 (FAISS retrieval over all entity names).

Example:
    >>> index = NameIndex(); index.set_names(NameTable(kb))
    >>> index.refresh(lambda texts: encode(texts))
    >>> index.search(mention_embeddings, k=10)
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import BioELError, Errors
from .dense import DenseCandidateStore
from .names import NameTable

logger = logging.getLogger(__name__)
Encode = Callable[[List[str]], np.ndarray]
Hit = Tuple[int, int, float]  # (concept index, name index, score)


class NameIndex:
    """Name embeddings and the dense store over them.

    index_type (str): 'flat' (exact), 'hnsw' or 'ivfpq' (see `DenseCandidateStore`).
    backend (str): 'auto', 'faiss' or 'torch'.
    embedding_cache (Optional[str]): Folder for a frozen concept tower's embeddings.
    """

    def __init__(self, index_type: str = "flat", backend: str = "auto",
                 embedding_cache: Optional[str] = None) -> None:
        self.index_type = index_type
        self.backend = backend
        self.embedding_cache = embedding_cache
        self.names: Optional[NameTable] = None
        self.embeddings: Optional[np.ndarray] = None  # (n_names, dim)
        self.store: Optional[DenseCandidateStore] = None
        self.stale = True

    def set_names(self, names: NameTable) -> None:
        """Index these names (embedded by the next `refresh`)."""
        self.names = names
        self.embeddings = None
        self.store = None
        self.stale = True

    @property
    def ready(self) -> bool:
        return self.store is not None and self.embeddings is not None

    def refresh(self, encode: Encode, cache_key: Optional[str] = None) -> None:
        """Embed every name with `encode` and rebuild the store.

        encode (Callable[[List[str]], np.ndarray]): texts -> (n, dim) embeddings.
        cache_key (Optional[str]): A key for the embedding cache (None: no cache,
            e.g. when the concept tower trains).
        """
        if self.names is None:
            raise BioELError(Errors.E105)
        logger.info("Encoding %d names of %d concepts", len(self.names), len(self.names.concept_ids))
        embeddings = self._cached(encode, cache_key)
        store = DenseCandidateStore(self.names.concept_ids, embeddings.shape[1],
                                    index_type=self.index_type, backend=self.backend)
        store.add(embeddings, self.names.owners)
        self.embeddings, self.store, self.stale = embeddings, store, False

    def _cached(self, encode: Encode, cache_key: Optional[str]) -> np.ndarray:
        if not self.embedding_cache or cache_key is None:
            return encode(self.names.names)
        path = Path(self.embedding_cache) / f"names-{cache_key}.npy"
        if path.exists():
            embeddings = np.load(path)
            if embeddings.shape[0] == len(self.names):
                logger.info("Read %d name embeddings from %s", len(embeddings), path)
                return embeddings
            logger.warning("Ignoring %s (shape %s)", path, embeddings.shape)
        embeddings = encode(self.names.names)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(partial, embeddings)
        partial.replace(path)  # atomic: concurrent runs never read a half-written file
        return embeddings

    def _require(self) -> None:
        if not self.ready:
            raise BioELError(Errors.E168)

    def search(self, queries: np.ndarray, k: int,
               masks: Optional[Sequence[Optional[np.ndarray]]] = None) -> List[List[Hit]]:
        """Top-k concepts per query, best name score per concept, best first.

        masks: per query, a (n_concepts,) bool array of allowed concepts, or None.
        """
        self._require()
        return self.store.search_names(queries, k, allowed=masks)

    def similarities(self, queries: np.ndarray, concepts: Sequence[Sequence[int]]
                     ) -> List[List[float]]:
        """The best name similarity of each listed concept, per query.

        queries: (batch, dim); concepts: per query, concept indices.
        RETURNS (List[List[float]]): aligned with `concepts`.
        """
        self._require()
        return [self.names.best_per_listed(row, lambda rows: self.embeddings[rows] @ query)
                for query, row in zip(queries, concepts)]

    def closest_name(self, query: np.ndarray, concept: int) -> int:
        """The index of `concept`'s name most similar to `query`."""
        start, end = self.names.offsets[concept], self.names.end(concept)
        return int(start + np.argmax(self.embeddings[start:end] @ query))

    def to_bytes(self) -> bytes:
        """The dense store (it holds the embeddings); E168 before the first refresh."""
        self._require()
        return self.store.to_bytes()

    def from_bytes(self, data: bytes, *, path: str = "<bytes>") -> "NameIndex":
        """Restore a store written by `to_bytes` for the current names (E154
        when it does not fit them)."""
        store = DenseCandidateStore.from_bytes(data, path=path)
        if self.names is None or len(store) != len(self.names):
            raise BioELError(Errors.E154.format(
                path=path, problem="its name count differs from the KB's"))
        self.store, self.embeddings, self.stale = store, store.vectors(), False
        return self


__all__ = ["NameIndex"]

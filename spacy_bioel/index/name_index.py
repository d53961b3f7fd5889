"""The concept-name index of a linker: every KB name, its embedding by the
concept tower, and the dense store searched over them.

It owns the moment of refresh. Embeddings are computed only by `refresh`,
which the component calls at defined moments (`initialize`, the end of each
training epoch, spaCy's evaluation steps, an explicit `BioELLinker.refresh()`),
never during prediction or serialisation. `stale` says the concept tower has
changed since the last refresh. With `embedding_cache` set and a frozen
concept tower, the embeddings are read from (or written to) a folder, keyed by
the names, the encoder settings and the tower's weights; writing is resumable
(a KB of millions of names is encoded in chunks, and an interrupted run
continues where it stopped).

Saved, the index is a folder (`store_io.save_store`): the embeddings
load by memory map and a FAISS index is read from its file, so loading neither
encodes nor rebuilds anything.

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
from typing import Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import BioELError, Errors, Warnings, warn
from ..progress import progress_bar
from .dense import FAISS_TYPES, DenseCandidateStore
from .embedding_cache import EmbeddingCache, cached_embeddings
from .names import NameTable
from .store_io import load_store, save_store, store_from_bytes, store_to_bytes

logger = logging.getLogger(__name__)
Encode = Callable[[List[str]], np.ndarray]
Hit = Tuple[int, int, float]  # (concept index, name index, score)
ENCODE_CHUNK = 65536  # names encoded per call of `encode` during a refresh


class NameIndex:
    """Name embeddings and the dense store over them.

    index_type (str): 'flat' (exact), 'int8' (an int8 scan), 'flat_int8' (an int8 scan,
        re-scored), 'hnsw', 'hnsw_sq8', 'ivf_sq8' or 'ivfpq' (see `DenseCandidateStore`).
    backend (str): 'auto', 'faiss', 'torch' or 'numpy'.
    embedding_cache (Optional[str]): Folder for a frozen (or not yet trained) concept
        tower's embeddings; 'auto' is the user's cache folder (`cache_folder`).
    vectors_dtype (str): 'float32' or 'float16' (halves the memory of the embeddings;
        scores are computed in float32).
    device (str): 'auto' (the encoder's device), 'cpu' or 'cuda:N': where the
        flat store searches.
    nprobe, ef_search (Optional[int]): search parameters of IVF / HNSW indexes.
    """

    def __init__(self, index_type: str = "flat", backend: str = "auto",
                 embedding_cache: Optional[str] = None, vectors_dtype: str = "float32",
                 device: str = "auto", nprobe: Optional[int] = None,
                 ef_search: Optional[int] = None, hnsw_m: int = 32, ivf_lists: int = 0) -> None:
        self.index_type = index_type
        self.backend = backend
        self.embedding_cache = embedding_cache
        self.vectors_dtype = vectors_dtype
        self.resumed_at = 0  # names of the last cached encoding that an interrupted run had encoded
        self.device = device
        self.search_params = {"nprobe": nprobe, "ef_search": ef_search, "hnsw_m": hnsw_m,
                              "ivf_lists": ivf_lists}
        self.names: Optional[NameTable] = None
        self.store: Optional[DenseCandidateStore] = None
        self.stale = True
        self._device = "cpu"  # resolved device

    @property
    def embeddings(self) -> Optional[np.ndarray]:
        """(n_names, dim) embeddings (float32 or float16; a memory map when loaded)."""
        return self.store.embeddings if self.store is not None else None

    def set_names(self, names: NameTable) -> None:
        """Index these names (embedded by the next `refresh`)."""
        self.names = names
        self.store = None
        self.stale = True

    def initialize(self, kb, index: "NameIndex") -> None:
        """Take over `index`'s names and embeddings and build this index's store
        over them (`set-stage ... index` changes the index type or the vector
        precision of a trained linker without encoding anything)."""
        if index is self or index.names is None:
            return
        self.names, self._device, self.stale = index.names, index._device, index.stale
        self.store = None
        if index.ready:
            vectors = index.store.embeddings
            if vectors.dtype != np.dtype(self.vectors_dtype):
                vectors = np.asarray(vectors, dtype=self.vectors_dtype)
            store = self._new_store(vectors.shape[1])
            store.add(vectors, self.names.owners, self.names.tie_rank)
            self.store = store

    @property
    def ready(self) -> bool:
        return self.store is not None and self.store.embeddings is not None

    def use_device(self, device: str) -> None:
        """Search on the encoder's `device` when `device` was 'auto' (a flat
        store moves its embeddings to a GPU; see `DenseCandidateStore.to_device`)."""
        self._device = str(device) if self.device == "auto" else self.device
        if self.store is not None and self.store.device != self._device:
            self.store.to_device(self._device)

    def _new_store(self, dim: int) -> DenseCandidateStore:
        params = self.search_params
        return DenseCandidateStore(self.names.concept_ids, dim, index_type=self.index_type,
                                   backend=self.backend, device=self._device,
                                   hnsw_m=params["hnsw_m"], ivf_lists=params["ivf_lists"],
                                   nprobe=params["nprobe"], ef_search=params["ef_search"])

    def refresh(self, encode: Encode, cache_key: Optional[str] = None,
                progress: bool = True) -> None:
        """Embed every name with `encode` (in chunks) and rebuild the store.

        encode (Callable[[List[str]], np.ndarray]): texts -> (n, dim) embeddings.
        cache_key (Optional[str]): A key for the embedding cache (None: no cache,
            e.g. when the concept tower trains).
        """
        if self.names is None:
            raise BioELError(Errors.E105)
        logger.info("Encoding %d names of %d concepts", len(self.names), len(self.names.concept_ids))
        embeddings = self.cached_embeddings(encode, cache_key, progress)
        store = self._new_store(embeddings.shape[1])
        store.add(embeddings, self.names.owners, self.names.tie_rank)
        self.store, self.stale = store, False

    def _encode_into(self, encode: Encode, out: np.ndarray, start: int, progress: bool,
                     done: Optional[Callable[[int], None]] = None) -> np.ndarray:
        names = self.names.names
        chunks = range(start, len(names), ENCODE_CHUNK)
        for first in progress_bar(chunks, desc="Encoding names", unit=" chunks",
                                  disable=not progress or len(chunks) < 2):
            out[first:first + ENCODE_CHUNK] = encode(names[first:first + ENCODE_CHUNK])
            if done is not None:
                done(min(len(names), first + ENCODE_CHUNK))
        return out

    def _allocate(self, encode: Encode) -> np.ndarray:
        first = np.asarray(encode(self.names.names[:1]))
        return np.empty((len(self.names), first.shape[1]), dtype=self.vectors_dtype)

    def cached_embeddings(self, encode: Encode, cache_key: Optional[str], progress: bool) -> np.ndarray:
        """The embeddings of every name, through the embedding cache when there is
        one (see `index.embedding_cache`: verified chunks, resumable, one writer at
        a time); `resumed_at` says how many names earlier runs had encoded."""
        folder = cache_folder(self.embedding_cache)
        if folder is None or cache_key is None:
            return self._encode_into(encode, self._allocate(encode), 0, progress)
        names = self.names.names
        dim = self._allocate(encode).shape[1]  # the width every cached chunk must have
        cache = EmbeddingCache(folder, cache_key, len(names), self.vectors_dtype)
        if self.vectors_dtype == "float16" and not cache.path.exists():
            # the float32 entry of the same names and tower, where one is there: cast, not encoded
            full = EmbeddingCache(folder, cache_key, len(names), "float32").load(dim)
            if full is not None:
                self.resumed_at = len(names)
                return np.asarray(full, dtype=np.float16)
        chunks = range(0, len(names), ENCODE_CHUNK)
        with progress_bar(total=len(chunks), desc="Encoding names", unit=" chunks",
                          disable=not progress or len(chunks) < 2) as bar:
            embeddings, self.resumed_at = cached_embeddings(
                cache, dim, ENCODE_CHUNK, lambda start, stop: encode(names[start:stop]),
                on_chunk=lambda _: bar.update(1))
        return np.asarray(embeddings, dtype=self.vectors_dtype)

    def _require(self) -> None:
        if not self.ready:
            raise BioELError(Errors.E168)

    def search(self, queries: np.ndarray, k: int,
               masks: Optional[Sequence[Optional[np.ndarray]]] = None,
               names: bool = True) -> List[List[Hit]]:
        """Top-k concepts per query, best name score per concept, best first.

        masks: per query, a (n_concepts,) bool array of allowed concepts, or None.
        names: also return each concept's best name (else -1 in its place).
        """
        self._require()
        return self.store.search_names(queries, k, allowed=masks, names=names)

    def vectors(self, rows: Union[Sequence[int], np.ndarray, slice]) -> np.ndarray:
        """RETURNS (np.ndarray): float32 embeddings of name rows."""
        self._require()
        return self.store.rows(rows)

    def similarities(self, queries: np.ndarray, concepts: Sequence[Sequence[int]]
                     ) -> List[List[float]]:
        """The best name similarity of each listed concept, per query.

        queries: (batch, dim); concepts: per query, concept indices.
        RETURNS (List[List[float]]): aligned with `concepts`.
        """
        self._require()
        return [self.names.best_per_listed(row, lambda rows: self.store.rows(rows) @ query)
                for query, row in zip(queries, concepts)]

    def closest_name(self, query: np.ndarray, concept: int) -> int:
        """The index of `concept`'s name most similar to `query`."""
        start, end = self.names.offsets[concept], self.names.end(concept)
        return int(start + np.argmax(self.store.rows(slice(start, end)) @ query))

    def to_disk(self, path: Union[str, Path]) -> None:
        """Save the store (its folder); E168 before the first refresh."""
        self._require()
        save_store(self.store, path)

    def from_disk(self, path: Union[str, Path]) -> "NameIndex":
        """Load a store saved by `to_disk` (or, from an older version, one file)
        for the current names: embeddings by memory map, nothing re-encoded (E154
        when it does not fit them)."""
        if self.names is None:
            raise BioELError(Errors.E154.format(path=path, problem="no KB is set"))
        store = load_store(path, self.names.concept_ids, device=self._device, backend=self.backend)
        if len(store) != len(self.names) or not np.array_equal(store.owners, self.names.owners):
            raise BioELError(Errors.E154.format(
                path=path, problem="its names differ from the KB's"))
        if store.index_type in FAISS_TYPES:
            store.set_search_params(nprobe=self.search_params["nprobe"],
                                    ef_search=self.search_params["ef_search"])
        store.set_tie_rank(self.names.tie_rank)
        self.store, self.stale = store, False
        return self

    def to_bytes(self) -> bytes:
        """The dense store in one message (see `store_io.store_to_bytes`)."""
        self._require()
        return store_to_bytes(self.store)

    def from_bytes(self, data: bytes, *, path: str = "<bytes>") -> "NameIndex":
        """Restore a store written by `to_bytes` for the current names (E154
        when it does not fit them)."""
        store = store_from_bytes(data, path=path, device=self._device)
        if self.names is None or len(store) != len(self.names):
            raise BioELError(Errors.E154.format(
                path=path, problem="its name count differs from the KB's"))
        store.set_tie_rank(self.names.tie_rank)
        self.store, self.stale = store, False
        return self


AUTO_CACHE = "auto"
CACHE_ENV = "SPACY_BIOEL_CACHE"


def cache_folder(setting: Optional[str], part: str = "names") -> Optional[str]:
    """The folder of the embedding cache: None (no cache), a folder, or 'auto' (the
    default of `add_pipe`): $SPACY_BIOEL_CACHE, else $XDG_CACHE_HOME/spacy_bioel or
    ~/.cache/spacy_bioel, so the embedded default encodes a KB's names once per
    machine (a base model's tower; keyed by names, settings and weights). An 'auto'
    folder that cannot be created or read is W014 and no cache, a read-only one is
    read and not written; a folder named in the config is E238 (`EmbeddingCache`). `part` names the sub-folder of the 'auto'
    root (`pipeline.embedded_default` keeps its pipelines in 'pipelines')."""
    if not setting:
        return None
    if setting != AUTO_CACHE:
        return setting
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "spacy_bioel")
    folder = os.path.join(root, part)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        warn(Warnings.W014.format(path=folder, problem=f"{type(err).__name__}: {err}", env=CACHE_ENV))
        return None
    if not os.access(folder, os.W_OK):
        if os.access(folder, os.R_OK | os.X_OK):  # e.g. baked into a container image
            logger.info("The cache %s is read-only: its entries are read, none is written", folder)
            return folder
        warn(Warnings.W014.format(path=folder, problem="PermissionError: not readable", env=CACHE_ENV))
        return None
    return folder


__all__ = ["cache_folder", "AUTO_CACHE", "CACHE_ENV", "NameIndex", "ENCODE_CHUNK"]

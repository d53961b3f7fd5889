"""Dense candidate store: nearest concepts by inner product (cosine for
normalised embeddings), each concept scored by its best name.

The store holds the name embeddings (float32 or float16; a memory map when
loaded from disk) and searches them in one of three ways:

- flat (exact, the default): the scores of every name are computed in blocks
  of queries (numpy BLAS on the CPU, a torch matmul on a GPU), reduced to the
  best name per concept, and the top-k concepts taken, in one pass;
- 'int8': every name scored in int8 by ONNX Runtime (`int8_scan`), the best
  `k * expansion` names proposed with the scan's scores (no FAISS, and the
  stored vectors are not read to search: the default of the configs; on a GPU
  it searches as 'flat');
- 'flat_int8': the same scan, the proposed names re-scored exactly as below;
- approximate (FAISS): 'hnsw' (fp32 graph), 'hnsw_sq8' (graph over 8-bit
  vectors), 'ivf_sq8' (inverted lists of 8-bit vectors) and 'ivfpq' propose
  names, which are then re-scored exactly from the stored embeddings; the pool
  grows until k distinct concepts are found. 'hnsw_sq8' and 'ivf_sq8' keep a
  UMLS-size KB in memory as 8-bit vectors, with the float16 embeddings on disk
  (docs/results/speed.md).

Saving and loading: `store_io` (save_store, load_store, store_to_bytes, store_from_bytes).

References:
    Johnson et al., Billion-scale similarity search with GPUs (FAISS), 2019.
    Malkov & Yashunin, HNSW, 2018. kNN-BioEL Sec. 3.1 (retrieval over all names).

Inputs:
    add(embeddings (n_names, dim), owners (n_names,) concept index, grouped by concept)
    search_names(queries (batch, dim), k) -> per query [(concept, name, score)]

Example:
    >>> store = DenseCandidateStore(concept_ids, dim=384)
    >>> store.add(name_embeddings, owners)
    >>> store.search(mention_embeddings, k=10)
"""
from __future__ import annotations

import logging
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import BioELError, Errors
from .names import top_k

logger = logging.getLogger(__name__)
INDEX_TYPES = ("flat", "int8", "flat_int8", "hnsw", "ivfpq", "hnsw_sq8", "ivf_sq8")
INT8_TYPES = ("int8", "flat_int8")  # searched by the int8 scan (`int8_scan`) on a CPU
FAISS_TYPES = ("hnsw", "ivfpq", "hnsw_sq8", "ivf_sq8")
BACKENDS = ("auto", "faiss", "torch", "numpy")
VECTOR_DTYPES = ("float32", "float16")
STORE_FORMAT = 4  # 4: int8 names in blocks (3 still loads)
BLOCK_BYTES = 8 * 2 ** 20  # scores computed per block of queries (flat search): bounds the peak memory
BEST_BYTES = 16 * 2 ** 20  # per-concept best scores of the queries that share one pass over the names
CHUNK_ROWS = 8192  # float16 vectors converted to float32 this many rows at a time
SCAN_QUERIES = 64  # queries per int8 scan call (int8 types; with int8_scan.BLOCK_NAMES: see there)
RESCORE_ROWS = 8192  # proposed names gathered per step when re-scoring (approximate search)
Hit = Tuple[int, int, float]  # (concept index, name index, score)


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
    index_type (str): 'flat' (exact, default), 'int8', 'flat_int8', 'hnsw', 'hnsw_sq8', 'ivf_sq8' or 'ivfpq'.
    backend (str): 'auto'; a flat store searches with numpy on a CPU ('faiss' and
        'numpy' alike) and with torch on a GPU or when 'torch' is asked for;
        approximate indexes need FAISS (E177 without it).
    device (str): torch device of the torch backend ('cpu', 'cuda:0').
    hnsw_m, ivf_lists, pq_m: build parameters (ivf_lists 0: about 4 * sqrt(n)).
    nprobe, ef_search: search parameters of IVF and HNSW indexes (None: defaults).
    """

    def __init__(self, concept_ids: Sequence[str], dim: int, *, index_type: str = "flat",
                 backend: str = "auto", device: str = "cpu", hnsw_m: int = 32,
                 ivf_lists: int = 1024, pq_m: int = 16, nprobe: Optional[int] = None,
                 ef_search: Optional[int] = None) -> None:
        if index_type not in INDEX_TYPES or backend not in BACKENDS:
            raise BioELError(Errors.E152.format(index_type=index_type, backend=backend))
        on_gpu = str(device).startswith("cuda")
        if index_type == "flat":  # exact search is one BLAS matmul: FAISS adds nothing
            backend = "torch" if on_gpu or backend == "torch" else "numpy"
        elif index_type in INT8_TYPES:  # ONNX Runtime's int8 scan
            if backend == "torch":
                raise BioELError(Errors.E152.format(index_type=index_type, backend=backend))
            backend = "onnx"
        elif backend not in ("auto", "faiss"):
            raise BioELError(Errors.E152.format(index_type=index_type, backend=backend))
        else:
            if not faiss_available():
                raise BioELError(Errors.E177.format(index_type=index_type))
            backend = "faiss"
        self.concept_ids = list(concept_ids)
        self.dim = dim
        self.index_type = index_type
        self.backend = backend
        self.device = str(device)
        self.params: Dict[str, Any] = {"hnsw_m": hnsw_m, "ivf_lists": ivf_lists, "pq_m": pq_m,
                                       "nprobe": nprobe, "ef_search": ef_search}
        self.owners = np.zeros((0,), dtype=np.int64)
        self.embeddings: Optional[np.ndarray] = None  # (n_names, dim), float32 or float16
        self._index = None  # FAISS index (approximate types)
        self._scan = None  # the int8 name scan of the int8 types (built on first search)
        self._int8: Optional[Tuple[np.ndarray, np.ndarray, int]] = None  # its names, scales, block
        self._matrix = None  # torch tensor on `device` (torch backend)
        self._starts = np.zeros((0,), dtype=np.int64)  # first row of each concept's names
        self._segment_owner = np.zeros((0,), dtype=np.int64)
        self._tie_rank = np.arange(len(self.concept_ids))

    def __len__(self) -> int:
        return len(self.owners)

    # ---------------------------------------------------------------- build
    def add(self, embeddings: np.ndarray, owners: np.ndarray,
            tie_rank: Optional[np.ndarray] = None) -> None:
        """(Re)build the store from all name embeddings (replaces what was there).
        The flat store keeps `embeddings` as given (no copy for a float32/16 array
        or memory map); FAISS indexes are built from it. `tie_rank` (n_concepts,)
        orders concepts whose scores tie exactly (default: concept order)."""
        if embeddings.dtype not in (np.float32, np.float16):
            embeddings = np.asarray(embeddings, dtype=np.float32)
        if embeddings.ndim != 2 or embeddings.shape[1] != self.dim or len(embeddings) != len(owners):
            raise BioELError(Errors.E153.format(shape=embeddings.shape, dim=self.dim,
                                                n_owners=len(owners)))
        self._set_owners(owners)
        self.set_tie_rank(tie_rank)
        self.embeddings = embeddings
        self._index = self._matrix = self._scan = self._int8 = None
        if self.index_type in FAISS_TYPES:
            self._index = self._build_faiss(embeddings)
        self.to_device(self.device)

    def _set_owners(self, owners: np.ndarray) -> None:
        owners = np.asarray(owners, dtype=np.int64)
        if len(owners) and np.any(np.diff(owners) < 0):
            raise BioELError(Errors.E153.format(shape="owners not grouped by concept",
                                                dim=self.dim, n_owners=len(owners)))
        self.owners = owners
        self._starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if len(owners) \
            else np.zeros((0,), dtype=np.int64)
        self._segment_owner = owners[self._starts]

    def set_tie_rank(self, tie_rank: Optional[np.ndarray]) -> None:
        """Break exact score ties between concepts by this (n_concepts,) rank."""
        self._tie_rank = np.arange(len(self.concept_ids)) if tie_rank is None else \
            np.asarray(tie_rank, dtype=np.int64)

    def _ivf_lists(self, n: int) -> int:
        wanted = self.params["ivf_lists"] or int(4 * np.sqrt(n))
        return max(1, min(wanted, n // 39 or 1))  # FAISS wants >= 39 training points per list

    def _build_faiss(self, embeddings: np.ndarray):
        import faiss
        from ..progress import progress_bar

        metric, dim = faiss.METRIC_INNER_PRODUCT, self.dim
        n = len(embeddings)
        if self.index_type == "hnsw":
            index = faiss.IndexHNSWFlat(dim, self.params["hnsw_m"], metric)
        elif self.index_type == "hnsw_sq8":
            index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, self.params["hnsw_m"], metric)
        else:
            lists = self._ivf_lists(n)
            quantizer = faiss.IndexFlatIP(dim)
            if self.index_type == "ivf_sq8":
                index = faiss.IndexIVFScalarQuantizer(quantizer, dim, lists,
                                                      faiss.ScalarQuantizer.QT_8bit, metric)
            else:
                index = faiss.IndexIVFPQ(quantizer, dim, lists, self.params["pq_m"], 8, metric)
        if not index.is_trained:
            sample = np.random.default_rng(0).choice(n, size=min(n, 200_000), replace=False)
            index.train(np.ascontiguousarray(embeddings[np.sort(sample)], dtype=np.float32))
        chunk = 100_000
        for start in progress_bar(range(0, n, chunk), desc=f"Building {self.index_type} index",
                                  unit=" chunks", disable=n <= chunk):
            index.add(np.ascontiguousarray(embeddings[start:start + chunk], dtype=np.float32))
        self._apply_search_params(index)
        return index

    def _apply_search_params(self, index) -> None:
        import faiss

        if self.index_type.startswith("hnsw"):
            index.hnsw.efSearch = self.params.get("ef_search") or 128
        else:
            ivf = faiss.extract_index_ivf(index)
            ivf.nprobe = min(ivf.nlist, self.params.get("nprobe") or 32)

    @property
    def faiss_index(self):
        """The FAISS index of an approximate type (None for the exact and int8 types,
        or before `add`): what the lab's scale benchmark measures."""
        return self._index

    def set_search_params(self, nprobe: Optional[int] = None, ef_search: Optional[int] = None) -> None:
        """Change nprobe (IVF) or efSearch (HNSW) of a built index."""
        self.params.update({k: v for k, v in (("nprobe", nprobe), ("ef_search", ef_search))
                            if v is not None})
        if self._index is not None:
            self._apply_search_params(self._index)

    def to_device(self, device: str) -> None:
        """Search on `device`: a flat store on 'cuda:N' moves its embeddings there
        (torch matmul top-k; an int8 store too, and back to its int8 scan on
        the CPU); FAISS indexes stay on the CPU unless GPU FAISS is installed (then
        the index is cloned to the GPU)."""
        self.device = str(device)
        on_gpu = self.device.startswith("cuda")
        if self.index_type in INT8_TYPES and not on_gpu:
            self.backend, self._matrix = "onnx", None
        elif self.embeddings is not None and self.index_type in ("flat",) + INT8_TYPES and (
                on_gpu or self.backend == "torch"):
            import torch
            self.backend = "torch"
            self._matrix = torch.from_numpy(np.array(self.embeddings)).to(self.device)
        elif on_gpu and self._index is not None:
            import faiss
            if getattr(faiss, "get_num_gpus", lambda: 0)() > 0:
                gpu = int(self.device.split(":")[1]) if ":" in self.device else 0
                self._index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), gpu, self._index)

    # --------------------------------------------------------------- search
    def rows(self, rows: Union[np.ndarray, Sequence[int], slice]) -> np.ndarray:
        """RETURNS (np.ndarray): float32 embeddings of the given name rows."""
        return np.asarray(self.embeddings[rows], dtype=np.float32)

    def vectors(self) -> np.ndarray:
        """RETURNS (np.ndarray): (n_names, dim) the stored embeddings (a memory map
        after loading; float16 when stored so)."""
        return self.embeddings if self.embeddings is not None else np.zeros((0, self.dim), np.float32)

    def search(self, queries: np.ndarray, k: int, expansion: int = 4
               ) -> List[List[Tuple[str, float]]]:
        """Top-k concepts per query as (concept_id, score), best first (see `search_names`)."""
        return [[(self.concept_ids[owner], score) for owner, _name, score in row]
                for row in self.search_names(queries, k, expansion)]

    def search_names(self, queries: np.ndarray, k: int, expansion: int = 4,
                     allowed: Optional[Sequence[Optional[np.ndarray]]] = None,
                     names: bool = True) -> List[List[Hit]]:
        """Top-k concepts per query (best name score per concept, descending; exact
        ties by the tie rank, see `set_tie_rank`).

        allowed: per query, a (n_concepts,) bool mask of the concepts it may
            return (a semantic-type filter), or None for all.
        names: also find the index of each concept's best name (else -1).
        RETURNS (List[List[Tuple[int, int, float]]]): (concept index, index of
            its best name, score) per query, best first. Flat search is exact;
            approximate indexes return exact scores for the names they find.
        """
        if k < 1:
            raise BioELError(Errors.E104.format(k=k))
        if not len(self):
            raise BioELError(Errors.E105)
        queries = np.ascontiguousarray(queries, dtype=np.float32)  # (batch, dim)
        if self.index_type == "flat" or self._matrix is not None:
            return self._search_flat(queries, k, allowed, names)
        if self.index_type in INT8_TYPES:
            # few queries per call: the score matrix of a block of names stays small
            scanned = max(1, min(len(self), self.int8_names()[2]))  # names per scan block
            block = int(max(1, min(SCAN_QUERIES, 4 * BLOCK_BYTES // (4 * scanned))))
            return self._search_approximate(queries, k, expansion, allowed, block)
        return self._search_approximate(queries, k, expansion, allowed)

    def _rescore(self, queries: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """(batch, pool) exact scores of the proposed name rows (-inf where none),
        the rows gathered from the stored vectors a few queries at a time."""
        out = np.full(indices.shape, -np.inf, dtype=np.float32)
        step = max(1, RESCORE_ROWS // max(1, indices.shape[1]))
        for first in range(0, len(indices), step):
            rows = indices[first:first + step]
            vectors = self.rows(np.where(rows >= 0, rows, 0).ravel()).reshape(*rows.shape, self.dim)
            exact = np.matmul(vectors, queries[first:first + step, :, None])[..., 0]
            out[first:first + step] = np.where(rows >= 0, exact, -np.inf)
        return out

    def _propose(self, queries: np.ndarray, pool: int) -> Tuple[np.ndarray, np.ndarray]:
        """(batch, pool) name rows proposed by the approximate search (-1: none)
        and their scores: exact, or the int8 scan's for 'int8' (the scan's graph
        computes both)."""
        if self.index_type in INT8_TYPES:
            if self._scan is None:
                from .int8_scan import Int8Scan

                weights, scales, block = self.int8_names()
                self._scan = Int8Scan(weights, scales, self.dim, block)
            indices, scores = self._scan.top(queries, pool)
            return indices, (self._rescore(queries, indices) if self.index_type == "flat_int8"
                             else scores)
        indices = self._index.search(queries, pool)[1]
        return indices, self._rescore(queries, indices)

    def int8_names(self) -> Tuple[np.ndarray, np.ndarray, int]:
        """RETURNS: the flat int8 names, (n_names,) scales and names per block
        that a store of an int8 type scans (`int8_scan.quantize_names`), as
        loaded with the store or quantised once here."""
        if self._int8 is None:
            from . import int8_scan

            block = int8_scan.BLOCK_NAMES
            self._int8 = (*int8_scan.quantize_names(self.vectors(), block), block)
        return self._int8

    def set_int8_names(self, weights: np.ndarray, scales: np.ndarray,
                       block: Optional[int] = None) -> None:
        """Use saved int8 names (`int8_names` of the same vectors; memory maps):
        (n_names * dim,) in blocks of `block` names, or one (dim, n_names)
        matrix (saved before blocks: one block)."""
        n = len(self)
        if weights.ndim == 2 and weights.shape == (self.dim, n):
            block = max(1, n)
        if weights.dtype != np.int8 or scales.dtype != np.float32 or weights.size != self.dim * n \
                or weights.ndim not in (1, 2) or scales.shape != (n,) or not block or block < 1:
            raise ValueError(f"int8 names of shape {weights.shape} ({weights.dtype}), blocks of "
                             f"{block} and scales {scales.shape} ({scales.dtype}), not "
                             f"({self.dim * n},) int8 in blocks and ({n},) float32")
        self._int8, self._scan = (weights, scales, int(block)), None

    def _search_flat(self, queries: np.ndarray, k: int, allowed, names: bool) -> List[List[Hit]]:
        n_names, k = len(self), min(k, len(self._starts))
        torch = sys.modules.get("torch")  # never imported here: a torch-free install uses numpy
        fast = torch is not None and (self._matrix is not None or self.embeddings.dtype == np.float32)
        if not names and not fast:
            return self._stream_concepts(queries, k, allowed)
        block = int(max(1, min(256, BLOCK_BYTES // (4 * max(n_names, len(self._starts))))))
        out: List[List[Hit]] = []
        for first in range(0, len(queries), block):
            scores = self._scores(queries[first:first + block])  # (b, n_names)
            masks = allowed[first:first + block] if allowed is not None else None
            if fast and (masks is None or all(m is None for m in masks)):
                out.extend(self._top_by_names(torch, scores, k, names))
            else:
                out.extend(self._top_by_concepts(scores, k, masks, names))
        return out

    def _stream_concepts(self, queries: np.ndarray, k: int, allowed) -> List[List[Hit]]:
        """Exact, in bounded memory: the names are read once per group of queries
        (as many as `BEST_BYTES` of per-concept scores hold), in chunks that end at
        concept boundaries (float16 vectors are converted a chunk at a time, so a
        group pays one conversion of the names), and only each concept's best
        score is kept."""
        n_segments = len(self._starts)
        ends = np.r_[self._starts[1:], len(self)]
        group = int(max(1, min(len(queries), BEST_BYTES // (4 * n_segments))))
        out: List[List[Hit]] = []
        for first in range(0, len(queries), group):
            batch = queries[first:first + group]
            best = np.empty((len(batch), n_segments), dtype=np.float32)  # (b, n_segments)
            chunk = int(max(CHUNK_ROWS // 8, min(CHUNK_ROWS, BLOCK_BYTES // (4 * len(batch)))))
            segment = 0
            while segment < n_segments:
                row = int(self._starts[segment])
                last = max(segment + 1, int(np.searchsorted(ends, row + chunk, side="right")))
                scores = batch @ self.rows(slice(row, int(ends[last - 1]))).T
                best[:, segment:last] = np.maximum.reduceat(
                    scores, self._starts[segment:last] - row, axis=1)
                segment = last
            self._exclude(best, allowed[first:first + group] if allowed is not None else None)
            segments, values = top_k(best, k, self._tie_rank[self._segment_owner])
            out.extend([(int(self._segment_owner[s]), -1, float(v))
                         for s, v in zip(seg_row, val_row) if np.isfinite(v)]
                        for seg_row, val_row in zip(segments, values))
        return out

    def _exclude(self, best: np.ndarray, masks: Optional[Sequence[Optional[np.ndarray]]]) -> None:
        """-inf in `best` (b, n_segments) where a query's mask excludes the concept;
        the queries that share a mask (one per entity label) are masked together."""
        shared: Dict[int, Tuple[np.ndarray, List[int]]] = {}
        for row, mask in enumerate(masks or []):
            if mask is not None:
                shared.setdefault(id(mask), (mask, []))[1].append(row)
        for mask, rows in shared.values():
            excluded = np.flatnonzero(~mask[self._segment_owner])
            if len(excluded):
                best[np.ix_(rows, excluded)] = -np.inf

    def _top_by_concepts(self, scores, k: int, masks, names: bool) -> List[List[Hit]]:
        """Exact: the best name of every concept (a segment max), then the top k."""
        best = self._segment_max(scores)  # (b, n_segments) numpy
        self._exclude(best, masks)
        segments, values = top_k(best, k, self._tie_rank[self._segment_owner])  # (b, k)
        rows = self._best_rows(scores, segments) if names else np.full(segments.shape, -1)
        return [[(int(self._segment_owner[s]), int(r), float(v))
                 for s, r, v in zip(seg_row, name_row, val_row) if np.isfinite(v)]
                for seg_row, val_row, name_row in zip(segments, values, rows)]

    def _top_by_names(self, torch, scores, k: int, names: bool) -> List[List[Hit]]:
        """Exact and faster: the top names of each query (torch.topk), grouped by
        concept. Every concept whose best name scores above the pool's lowest
        score is in the pool with that name; a query with fewer than k such
        concepts falls back to `_top_by_concepts`."""
        matrix = scores if not isinstance(scores, np.ndarray) else torch.from_numpy(scores)
        pool = min(len(self), max(4 * k, k + 64))
        values, indices = torch.topk(matrix, pool, dim=1)  # sorted, best first
        values, indices = values.float().cpu().numpy(), indices.cpu().numpy()
        owners = self.owners[indices]  # (b, pool)
        ties = self._tie_rank[owners]
        order = np.lexsort((indices, owners, ties, -values), axis=1)  # score desc, tie rank, name
        owners, scored, indices = (np.take_along_axis(a, order, axis=1)
                                   for a in (owners, values, indices))
        by_owner = np.argsort(owners, axis=1, kind="stable")  # stable: best name first
        grouped = np.take_along_axis(owners, by_owner, axis=1)
        starts = np.ones(grouped.shape, dtype=bool)
        starts[:, 1:] = grouped[:, 1:] != grouped[:, :-1]
        first = np.zeros(grouped.shape, dtype=bool)  # each concept's best name
        np.put_along_axis(first, by_owner, starts, axis=1)
        if pool < len(self):  # above the lowest score of the pool: certainly its best name
            first &= scored > values[:, -1:]
        keep = first & (np.cumsum(first, axis=1) <= k)
        out: List[Optional[List[Hit]]] = []
        for row in range(len(keep)):
            chosen = keep[row]
            rows = indices[row, chosen] if names else np.full(int(chosen.sum()), -1)
            out.append(list(zip(owners[row, chosen].tolist(), rows.tolist(),
                                scored[row, chosen].tolist())))
        fallback = [row for row in range(len(keep)) if first[row].sum() < min(k, len(self._starts))]
        if fallback:
            exact = self._top_by_concepts(scores[fallback], k, None, names)
            for row, hits in zip(fallback, exact):
                out[row] = hits
        return out  # type: ignore[return-value]

    def _scores(self, queries: np.ndarray):
        """(b, n_names) scores: a torch tensor on the device, or a numpy array."""
        if self._matrix is not None:
            import torch
            q = torch.from_numpy(queries).to(self.device, dtype=self._matrix.dtype)
            return q @ self._matrix.T
        if self.embeddings.dtype == np.float32:
            return queries @ self.embeddings.T
        scores = np.empty((len(queries), len(self)), dtype=np.float32)
        for start in range(0, len(self), CHUNK_ROWS):  # float16 on disk: convert in chunks
            scores[:, start:start + CHUNK_ROWS] = queries @ self.rows(slice(start, start + CHUNK_ROWS)).T
        return scores

    def _segment_max(self, scores) -> np.ndarray:
        if isinstance(scores, np.ndarray):
            return np.maximum.reduceat(scores, self._starts, axis=1)
        import torch
        segment = torch.from_numpy(np.repeat(np.arange(len(self._starts)),
                                             np.diff(np.r_[self._starts, len(self)]))).to(scores.device)
        best = torch.full((scores.shape[0], len(self._starts)), -float("inf"),
                          device=scores.device, dtype=scores.dtype)
        best.scatter_reduce_(1, segment.expand(scores.shape[0], -1), scores, reduce="amax")
        return best.float().cpu().numpy()

    def _best_rows(self, scores, segments: np.ndarray) -> np.ndarray:
        """The row of the best name of each selected concept (segments (b, k))."""
        starts = self._starts[segments]  # (b, k)
        ends = np.r_[self._starts, len(self)][segments + 1]
        width = int((ends - starts).max()) if segments.size else 1
        rows = np.minimum(starts[..., None] + np.arange(width), len(self) - 1)  # (b, k, width)
        flat = rows.reshape(len(segments), -1)
        if isinstance(scores, np.ndarray):
            values = np.take_along_axis(scores, flat, axis=1)
        else:
            import torch
            values = scores.gather(1, torch.from_numpy(flat).to(scores.device)).float().cpu().numpy()
        values = values.reshape(rows.shape)
        values[rows >= ends[..., None]] = -np.inf
        return np.take_along_axis(rows, values.argmax(axis=2)[..., None], axis=2)[..., 0]

    def _search_approximate(self, queries: np.ndarray, k: int, expansion: int,
                            allowed, block: Optional[int] = None) -> List[List[Hit]]:
        """Propose `k * expansion` names per query (`block` queries per proposal,
        None: all), keep each concept's best; the queries with fewer than k
        concepts are proposed again together, with twice the pool (one pass over
        the names for up to `block` of them, not one per block that had any)."""
        n_names = len(self)
        results: List[Optional[List[Hit]]] = [None] * len(queries)
        pending = np.arange(len(queries))
        pool = min(n_names, max(k * expansion, k))
        while len(pending):
            still = []
            step = block or len(pending)
            for first in range(0, len(pending), step):
                part = pending[first:first + step]
                indices, scores = self._propose(queries[part], pool)
                masks = [allowed[i] for i in part] if allowed is not None else None
                for query_index, hits in zip(part, self._best_per_concept(indices, scores, k, masks)):
                    if len(hits) >= k or pool >= n_names:
                        results[query_index] = hits
                    else:
                        still.append(query_index)
            pending = np.array(still, dtype=np.int64)
            pool = min(n_names, pool * 2)
        return results  # type: ignore[return-value]

    def _best_per_concept(self, indices: np.ndarray, scores: np.ndarray, k: int,
                          masks: Optional[Sequence[Optional[np.ndarray]]]) -> List[List[Hit]]:
        """Per query, up to k concepts of the proposed names (-1: none), each with
        its best-scoring name, best first; exact ties by the tie rank, then the
        name row. Concepts a query's mask excludes are left out."""
        batch, pool = indices.shape
        keep = indices >= 0
        owners = self.owners[np.where(keep, indices, 0)]
        for row, mask in enumerate(masks or []):
            if mask is not None:
                keep[row] &= mask[owners[row]]
        # each row best first (exact score, tie rank, name row), the names left out last
        order = np.lexsort((indices, self._tie_rank[owners], np.where(keep, -scores, np.inf)), axis=-1)
        owners, keep = np.take_along_axis(owners, order, 1), np.take_along_axis(keep, order, 1)
        # a concept's first place in its row: its best name (a mask drops all of its names)
        grouped = np.argsort(owners, axis=1, kind="stable")
        sorted_owners = np.take_along_axis(owners, grouped, 1)
        starts = np.ones(owners.shape, dtype=bool)
        starts[:, 1:] = sorted_owners[:, 1:] != sorted_owners[:, :-1]
        first = np.empty_like(starts)
        np.put_along_axis(first, grouped, starts, 1)
        best = first & keep
        best &= np.cumsum(best, axis=1) <= k  # each query's best k concepts
        rows, places = np.nonzero(best)
        columns = order[rows, places]
        hits = list(zip(owners[rows, places].tolist(), indices[rows, columns].tolist(),
                        scores[rows, columns].tolist()))
        bounds = np.searchsorted(rows, np.arange(batch + 1))
        return [hits[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


__all__ = ["DenseCandidateStore", "faiss_available", "INDEX_TYPES", "INT8_TYPES", "FAISS_TYPES", "BACKENDS", "VECTOR_DTYPES",
           "STORE_FORMAT"]

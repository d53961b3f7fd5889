"""The name scan of an `int8` or `flat_int8` index: every name scored in int8
by ONNX Runtime and the best `pool` names proposed; `DenseCandidateStore.
_search_approximate` keeps each concept's best. An `int8` index takes the
scan's scores as they are (the stored float vectors are never read to search:
neither resident nor paged in); a `flat_int8` index re-scores the proposed names
exactly from the stored vectors (`DenseCandidateStore._rescore`).

Each name vector is quantised symmetrically to int8 with its own scale (max |v|
/ 127), and so is each query (`quantize_queries`: a query's values do not
depend on the queries scanned beside it, so tune's pass and a pipeline's, which
batch mentions differently, score it the same); ONNX Runtime's
`MatMulIntegerToFloat` (com.microsoft) scales the exact int32 products by the
names' scales and `TopK` keeps the best names: one pass over 1 byte per
dimension instead of a float32 matmul over every name, with no FAISS. (Until
issue 46, `DynamicQuantizeMatMul` quantised a call's queries as one tensor, and
a query's scores moved with its neighbours: docs/results/speed.md.) The names are held in blocks of
`BLOCK_NAMES` (each block's (dim, size) matrix contiguous, so a block is a view
of the saved file): each block is scanned on its own and the blocks' best names
merged, so the score buffer holds a block's scores, not every name's (the block
size trades that memory against speed: docs/results/speed.md). The graph holds no weights (`assets/int8_scan.onnx`, built by
`scan_graph`): a block's int8 names and scales are inputs of each call, handed
over without a copy.

The scan is faster than the float32 matmul of the exact search, and dev
predictions are the exact search's, with the re-scoring and without it
(`int8`): docs/results/speed.md measures both.

References:
    ONNX Runtime contrib ops, MatMulIntegerToFloat; Jacob et al., Quantization
    and training of neural networks for efficient integer-arithmetic-only
    inference, CVPR 2018 (symmetric int8 with per-channel scales).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from ..encoders.int8_exact import sign_flipped, u8s8_saturates
from ..encoders.onnx_sessions import new_session, track

ASSETS = Path(__file__).resolve().parents[1] / "assets"
QUANTIZE_ROWS = 1024  # names quantised this many at a time (no float32 copy; larger blocks peak higher)
BLOCK_NAMES = 24576  # names per scanned block (the score buffer: queries x block x 4 bytes)
QUERY_ZERO = 128  # a query's int8 values are passed as uint8 with this zero point (ONNX Runtime's u8 x s8 kernel)


def graph_file(unsigned: bool = False) -> Path:
    """The packaged weightless scan graph (`scan_graph(unsigned)`)."""
    return ASSETS / ("int8_scan_u8.onnx" if unsigned else "int8_scan.onnx")


def scan_graph(unsigned: bool = False) -> bytes:
    """The weightless graph: queries (batch, dim) uint8 and their scales
    (batch, 1) float32 (`quantize_queries`), a block's names W (dim, size) int8
    and their scales (size,) float32, and k (1,) int64 -> indices (batch, k) of
    the block's best names by the int8 scan and their scores (batch, k). The
    int32 products are exact, so a query's scores do not depend on the queries
    scanned beside it. `unsigned`: W is uint8, each name's int8 values + 128
    (zero point 128), for CPUs whose uint8 x int8 kernel saturates
    (`encoders.int8_exact`): the uint8 x uint8 kernel adds the same products
    exactly. Needs `onnx`; the package ships both (`graph_file`)."""
    from onnx import TensorProto, helper

    # the names' scales multiply the exact int32 products inside the matmul; a query's
    # own scale (one positive number) leaves its ranking as it is, so only the k kept are scaled
    names_zero = ["name_zero"] if unsigned else []
    nodes = [helper.make_node("MatMulIntegerToFloat", ["queries", "W", "one", "scale", "query_zero"]
                              + names_zero, ["name_scaled"], domain="com.microsoft"),
             helper.make_node("TopK", ["name_scaled", "k"], ["unscaled", "indices"], axis=1),
             helper.make_node("Mul", ["unscaled", "query_scale"], ["values"])]
    graph = helper.make_graph(
        nodes, "bioel_int8_scan",
        [helper.make_tensor_value_info("queries", TensorProto.UINT8, ["batch", "dim"]),
         helper.make_tensor_value_info("query_scale", TensorProto.FLOAT, ["batch", 1]),
         helper.make_tensor_value_info("W", TensorProto.UINT8 if unsigned else TensorProto.INT8,
                                       ["dim", "size"]),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT, ["size"]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("indices", TensorProto.INT64, ["batch", "pool"]),
         helper.make_tensor_value_info("values", TensorProto.FLOAT, ["batch", "pool"])],
        initializer=[helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
                     helper.make_tensor("query_zero", TensorProto.UINT8, [], [QUERY_ZERO])]
        + ([helper.make_tensor("name_zero", TensorProto.UINT8, [], [QUERY_ZERO])] if unsigned else []))
    model = helper.make_model(graph, producer_name="spacy-bioel",
                              opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def symmetric_rows(rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """RETURNS: each row of `rows` in int8 steps of its own scale (max |v| / 127;
    a zero row keeps scale 1), as float32 integers in [-127, 127], and the
    (n, 1) float32 scales."""
    rows = np.asarray(rows, dtype=np.float32)
    scale = np.abs(rows).max(axis=1, keepdims=True, initial=0.0) / np.float32(127.0)
    scale[scale == 0] = 1.0
    return np.rint(rows / scale), scale


def quantize_names(vectors: np.ndarray, block: Optional[int] = None
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """RETURNS: the (n * dim,) int8 names in blocks of `block` names (None:
    `BLOCK_NAMES`), each block's (dim, size) matrix contiguous (transposed for
    the matmul), and their (n,) float32 scales; a zero vector keeps scale 1."""
    n, dim = vectors.shape
    weights = np.empty(n * dim, dtype=np.int8)
    scales = np.empty(n, dtype=np.float32)
    for first, names in name_blocks(weights, scales, dim, block or BLOCK_NAMES):
        size = names.shape[1]
        for start in range(0, size, QUANTIZE_ROWS):
            end = min(size, start + QUANTIZE_ROWS)
            steps, scale = symmetric_rows(vectors[first + start:first + end])
            scales[first + start:first + end] = scale[:, 0]
            names[:, start:end] = steps.T
    return weights, scales


def quantize_queries(queries: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """RETURNS: the (batch, dim) queries quantised symmetrically to int8, each
    row with its own scale (max |v| / 127), as uint8 offset by `QUERY_ZERO`,
    and their (batch, 1) float32 scales (a zero query keeps scale 1). Each row
    is quantised alone, so it does not depend on the rows beside it."""
    steps, scale = symmetric_rows(queries)
    return np.ascontiguousarray(steps.astype(np.int16) + QUERY_ZERO, dtype=np.uint8), scale


def name_blocks(weights: np.ndarray, scales: np.ndarray, dim: int, block: int
                ) -> List[Tuple[int, np.ndarray]]:
    """RETURNS: (first name row, (dim, size) view) of each block of the flat
    int8 names (`quantize_names`; a (dim, n) matrix, as saved before blocks,
    is one block of n names)."""
    n = len(scales)
    flat = weights.reshape(-1)
    block = max(1, min(int(block), n)) if n else 1
    return [(first, flat[dim * first:dim * min(n, first + block)].reshape(dim, -1))
            for first in range(0, n, block)]


def unsigned_names(weights: np.ndarray) -> np.ndarray:
    """The int8 names `weights` as uint8 + 128 (each byte's sign bit flipped),
    for the uint8 x uint8 scan (`scan_graph(unsigned=True)`). Names memory-mapped
    from a saved store are flipped in place in a private copy-on-write mapping
    of their file: the pages become this process' own, the file is untouched,
    and its pages are not held beside them (a copy of a read-only map would hold
    both); other names are copied."""
    if isinstance(weights, np.memmap) and weights.filename:
        try:
            private = np.load(weights.filename, mmap_mode="c", allow_pickle=False)
        except (OSError, ValueError):
            private = None
        if private is not None and private.shape == weights.shape and private.dtype == weights.dtype:
            return sign_flipped(private, fresh=True)
    return sign_flipped(weights)


def reblock(weights: np.ndarray, scales: np.ndarray, dim: int, block: int,
            new_block: Optional[int] = None) -> Tuple[np.ndarray, int]:
    """RETURNS: the same int8 names in blocks of `new_block` (None:
    `BLOCK_NAMES`; exact: no name is quantised again) and that block size;
    names already so are returned as they are. `save_store` saves a store
    loaded with its names in one (dim, n) matrix (format 3) so."""
    n, new_block = len(scales), new_block or BLOCK_NAMES
    if n == 0 or min(block, n) == min(new_block, n):
        return weights, block
    old = name_blocks(weights, scales, dim, block)
    out = np.empty(n * dim, dtype=np.int8)
    for first, names in name_blocks(out, scales, dim, new_block):
        end = first + names.shape[1]
        for start, source in old:  # the old blocks that overlap this one
            lo, hi = max(first, start), min(end, start + source.shape[1])
            if lo < hi:
                names[:, lo - first:hi - first] = source[:, lo - start:hi - start]
    return out, new_block


class Int8Scan:
    """An ONNX Runtime session that proposes the best names of each query by the
    int8 scan, block by block.

    weights, scales: `quantize_names(vectors, block)`, as saved with the store
        (memory maps: nothing is quantised at load or first search).
    dim (int): The embedding size.
    block (int): Names per block of `weights`.

    On a CPU whose uint8 x int8 kernel saturates (`u8s8_saturates`), each block
    is read once as uint8 (its int8 values + 128: the sign bit flipped) and
    scanned by the uint8 x uint8 graph, which adds the same products exactly.
    """

    def __init__(self, weights: np.ndarray, scales: np.ndarray, dim: int, block: int) -> None:
        import onnxruntime

        self.n_names = len(scales)
        self._unsigned = u8s8_saturates()
        if self._unsigned:
            weights = unsigned_names(weights)
        ortvalue = onnxruntime.OrtValue.ortvalue_from_numpy
        # each OrtValue wraps its numpy buffer without a copy and keeps it alive
        self._blocks = [(first, ortvalue(names), ortvalue(scales[first:first + names.shape[1]]),
                         names.shape[1])
                        for first, names in name_blocks(weights, scales, dim, block)]
        self._session = None
        track(self)  # its session is dropped in a forked worker

    def _ready(self):
        if self._session is None:
            self._session = new_session(graph_file(self._unsigned).read_bytes(), exact=not self._unsigned)
        return self._session

    def top(self, queries: np.ndarray, pool: int) -> Tuple[np.ndarray, np.ndarray]:
        """RETURNS: (batch, min(pool, n)) int64 name rows, best first by the int8
        scan (equal scores: the lower row first), and their float32 scores."""
        import onnxruntime

        pool = min(pool, self.n_names)
        session = self._ready()
        quantised, query_scale = quantize_queries(queries)
        ortvalue = onnxruntime.OrtValue.ortvalue_from_numpy
        query_value, query_scale = ortvalue(quantised), ortvalue(query_scale)
        indices, values = [], []
        for first, names, scales, size in self._blocks:
            k = ortvalue(np.array([min(pool, size)], dtype=np.int64))
            found, scores = session.run_with_ort_values(
                ["indices", "values"], {"queries": query_value, "query_scale": query_scale,
                                        "W": names, "scale": scales, "k": k})
            indices.append(found.numpy() + first)
            values.append(scores.numpy())
        # one block too: ONNX Runtime's TopK does not always put the lower row first among
        # equal scores (seen on MEDIC's 72,968 names in one block), and the order must not
        # depend on how the names are blocked
        indices, values = np.concatenate(indices, axis=1), np.concatenate(values, axis=1)
        order = np.lexsort((indices, -values), axis=1)[:, :pool]
        return np.take_along_axis(indices, order, 1), np.take_along_axis(values, order, 1)


__all__ = ["Int8Scan", "scan_graph", "quantize_names", "quantize_queries", "name_blocks", "reblock", "unsigned_names", "graph_file", "BLOCK_NAMES"]

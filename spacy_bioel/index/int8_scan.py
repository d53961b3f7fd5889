"""The name scan of an `int8` or `flat_int8` index: every name scored in int8
by ONNX Runtime and the best `pool` names proposed; `DenseCandidateStore.
_search_approximate` keeps each concept's best. An `int8` index takes the
scan's scores as they are (the stored float vectors are never read to search:
neither resident nor paged in); a `flat_int8` index re-scores the proposed names
exactly from the stored vectors.

Each name vector is quantised symmetrically to int8 with its own scale
(max |v| / 127), the queries dynamically to uint8 by ONNX Runtime's
`DynamicQuantizeMatMul` (com.microsoft), and `TopK` keeps the best names: one
pass over 1 byte per dimension instead of a float32 matmul over every name,
with no FAISS. The proposed names are then gathered from the stored vectors
and scored exactly in the same graph. The graph holds no weights
(`assets/int8_scan_{float16,float32}.onnx`, built by `scan_graph`): the int8
names and the stored vectors are handed to the session as initializers, so
nothing is written to disk and the stored vectors are not copied.

On the natural corpus (MEDIC's 72,968 names, 3,600 mention queries, 2 CPU
cores) scanning and re-scoring take about 1 s against 2.9 s for the float32
matmul of the exact search; the exactly best name was among the 256 proposed
for every query, and NCBI and BC5CDR dev predictions are identical to the exact
search's. Without the re-scoring (`int8`) NCBI and BC5CDR dev Acc@1 and kb_id_
accuracy are unchanged too; Acc@5 moves by up to 0.25 points
(docs/results/speed.md).

References:
    ONNX Runtime contrib ops, DynamicQuantizeMatMul; Jacob et al., Quantization
    and training of neural networks for efficient integer-arithmetic-only
    inference, CVPR 2018 (symmetric int8 with per-channel scales).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from ..encoders.onnx_sessions import new_session, track

ASSETS = Path(__file__).resolve().parents[1] / "assets"
QUANTIZE_ROWS = 1024  # names quantised this many at a time (no float32 copy; 8192 peaked 30 MB higher)


GRAPHS = ("float16", "float32", "scores")  # re-scoring from float16 / float32 vectors, or not


def graph_file(kind: str) -> Path:
    """The packaged scan graph: `kind` 'float16' or 'float32' re-scores from
    stored vectors of that dtype, 'scores' returns the int8 scan's scores."""
    return ASSETS / f"int8_scan_{kind}.onnx"


def scan_graph(kind: str) -> bytes:
    """The weightless graph: queries (batch, dim) float32 and k (1,) int64 ->
    indices (batch, k) of the best names by the int8 scan, and their scores
    (batch, k): for `kind` 'float16' or 'float32', exact from the stored vectors
    V (n, dim) of that dtype; for 'scores', the scan's own. W (dim, n) int8,
    scale (n,), zp (n,) and V are placeholders that the session's initializers
    replace. Needs `onnx`; the package ships its output (`graph_file`)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("DynamicQuantizeMatMul", ["queries", "W", "scale", "zp"], ["scores"],
                              domain="com.microsoft"),
             helper.make_node("TopK", ["scores", "k"], ["values", "indices"], axis=1)]
    placeholders = [numpy_helper.from_array(np.zeros((1, 1), np.int8), "W"),
                    numpy_helper.from_array(np.ones(1, np.float32), "scale"),
                    numpy_helper.from_array(np.zeros(1, np.int8), "zp")]
    output = "values"
    if kind != "scores":
        nodes += [helper.make_node("Gather", ["V", "indices"], ["picked"], axis=0),
                  helper.make_node("Cast", ["picked"], ["picked32"], to=TensorProto.FLOAT),
                  helper.make_node("Unsqueeze", ["queries", "last"], ["column"]),
                  helper.make_node("MatMul", ["picked32", "column"], ["exact3"]),
                  helper.make_node("Squeeze", ["exact3", "last"], ["exact"])]
        placeholders += [numpy_helper.from_array(np.zeros((1, 1), dtype=kind), "V"),
                         numpy_helper.from_array(np.array([-1], np.int64), "last")]
        output = "exact"
    graph = helper.make_graph(
        nodes, "bioel_int8_scan",
        [helper.make_tensor_value_info("queries", TensorProto.FLOAT, ["batch", "dim"]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("indices", TensorProto.INT64, ["batch", "pool"]),
         helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", "pool"])],
        placeholders)
    model = helper.make_model(graph, producer_name="spacy-bioel",
                              opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def quantize_names(vectors: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """RETURNS: (dim, n) int8 names (transposed for the matmul) and their (n,)
    float32 scales; a zero vector keeps scale 1."""
    n, dim = vectors.shape
    weights = np.empty((dim, n), dtype=np.int8)
    scales = np.empty(n, dtype=np.float32)
    for start in range(0, n, QUANTIZE_ROWS):
        rows = np.asarray(vectors[start:start + QUANTIZE_ROWS], dtype=np.float32)
        scale = np.abs(rows).max(axis=1) / 127.0
        scale[scale == 0] = 1.0
        scales[start:start + len(rows)] = scale
        weights[:, start:start + len(rows)] = np.rint(rows / scale[:, None]).T
    return weights, scales


class Int8Scan:
    """An ONNX Runtime session that proposes the best names of each query and
    scores them (exactly, or by the scan).

    weights, scales: `quantize_names(vectors)`, as saved with the store (memory
        maps: nothing is quantised at load or first search).
    vectors (Optional[np.ndarray]): (n_names, dim) float32 or float16 stored
        vectors to score the proposed names exactly from (shared, not copied);
        None: the scan's scores are returned and no float vector is read.
    """

    def __init__(self, weights: np.ndarray, scales: np.ndarray,
                 vectors: Optional[np.ndarray] = None) -> None:
        import onnxruntime

        self.n_names = len(scales)
        # the session reads these buffers (it does not copy them): they live as long as it does
        arrays = {"W": weights, "scale": scales, "zp": np.zeros(len(scales), dtype=np.int8)}
        if vectors is not None:
            arrays["V"] = np.ascontiguousarray(vectors)
        self.graph = arrays["V"].dtype.name if vectors is not None else "scores"
        self._arrays = tuple(arrays.values())
        self._values = {name: onnxruntime.OrtValue.ortvalue_from_numpy(array)
                        for name, array in arrays.items()}
        self._session = None
        track(self)  # its session is dropped in a forked worker

    def _ready(self):
        if self._session is None:
            self._session = new_session(graph_file(self.graph).read_bytes(),
                                        initializers=self._values)
        return self._session

    def top(self, queries: np.ndarray, pool: int) -> Tuple[np.ndarray, np.ndarray]:
        """RETURNS: (batch, min(pool, n)) int64 name rows, best first by the int8
        scan, and their float32 scores (exact when re-scoring)."""
        pool = min(pool, self.n_names)
        indices, exact = self._ready().run(None, {
            "queries": np.ascontiguousarray(queries, dtype=np.float32),
            "k": np.array([pool], dtype=np.int64)})
        return indices, exact


__all__ = ["Int8Scan", "scan_graph", "quantize_names", "graph_file", "GRAPHS"]

"""Exact uint8 x int8 products on CPUs whose ONNX Runtime kernel saturates them.

The int8 graphs of this package (the mention tower quantised per row,
`onnx_export.scale_rows`, and the name scan, `index.int8_scan`) pass signed
int8 values to ONNX Runtime as uint8 with zero point 128 against int8 weights.
On x86 CPUs with AVX2 but no VNNI (many AMD EPYC and older Intel Xeons), MLAS
multiplies such pairs with `vpmaddubsw`, which adds two u8 x s8 products into
a saturating int16: 255 x 127 x 2 does not fit, and the scores come back wrong
(on a scan test, 0.04 off for 16-d unit vectors; the int8 mention embeddings
moved by about 2e-3). ONNX Runtime documents this ("Quantize ONNX models":
U8S8 on AVX2/AVX512 without VNNI may saturate; reduce_range or U8U8 avoid it).

`u8s8_saturates` asks the installed ONNX Runtime on this CPU once (a probe
matmul whose exact int32 result it knows); where it saturates, `exact_graph`
rewrites each such integer matmul before its session opens (`exact_products`):
- int8 weights of the graph (an initializer) become uint8 with zero point 128
  (w + 128: each byte's sign bit flipped as it is read), so the matmul is
  uint8 x uint8, a kernel that widens to int16 before it
  multiplies and adds exactly; one matmul as before, 1.2-1.8x faster than the
  split below on an AMD EPYC with AVX2 (docs/results/speed.md);
- B a graph input (its values are not known before a call): the signed
  activation s = a - 128 in [-127, 127] is split into its positive and
  negative parts, each in [0, 127] (zero point 0), two integer matmuls are
  taken and subtracted in int32, and every pair sum fits in int16 (127 x 127 x
  2 < 32,767). The name scan passes its names as uint8 instead where the CPU
  saturates (`index.int8_scan`), so it needs neither.
Either way the result is the exact int32 product a VNNI CPU computes: the same
embeddings and scores on every CPU. $SPACY_BIOEL_INT8_SPLIT: "auto" (the probe
decides, default), "1" (always rewrite), "0" (never).

The rewrite parses the graph with `onnx`, whose import took 1 s of a 1.8 s
`spacy.load` on an AMD EPYC with AVX2. So a saved graph carries what the
rewrite would make of it, written on every CPU when it is saved
(`write_unsigned`: `mention.u8.onnx` and its record `mention.u8.json`), and
such a CPU opens that without `onnx` (`read_unsigned`); a record written for
other bytes is not used, and the graph is rewritten as before. A graph held as
bytes with its weights inside (the in-context NER's) carries its record within
its saved model instead (`inline_unsigned`: a small companion whose weights are
read from those bytes, `read_inline`).
"""
from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np

from ..files import replace_file

logger = logging.getLogger(__name__)
ENV = "SPACY_BIOEL_INT8_SPLIT"
SHIFT = 128  # the zero point of the package's uint8 activations (a signed value + 128)
SIGN_BIT = np.uint8(0x80)  # an int8 byte with this bit flipped reads as uint8 w + 128
# ONNX Runtime's session option for where a graph loaded from bytes finds its external weights
EXTERNAL_FOLDER = "session.model_external_initializers_file_folder_path"
UNSIGNED_PREFIX = "bioel_u8/"  # the name of an int8 weight read as uint8 is this + its own
PROBE_K = 64  # the probe's inner size: 255 x 127 x 64 exactly, or a saturated sum


# `probe_graph()`'s bytes, shipped so that loading a pipeline does not import `onnx` (slow);
# tests/encoders/test_int8_exact.py checks them against a fresh build
PROBE_FILE = Path(__file__).resolve().parent.parent / "assets" / "u8s8_probe.onnx"


def shipped_probe_graph() -> bytes:
    """The probe graph: the shipped file, else `probe_graph()` (needs `onnx`)."""
    try:
        return PROBE_FILE.read_bytes()
    except OSError:
        return probe_graph()


def probe_graph() -> bytes:
    """A MatMulInteger of uint8 A (batch, PROBE_K) and int8 B (PROBE_K, 16), no
    zero points, int32 out; needs `onnx`."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])], "bioel_u8s8_probe",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, ["batch", PROBE_K]),
         helper.make_tensor_value_info("B", TensorProto.INT8, [PROBE_K, 16])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, ["batch", 16])])
    model = helper.make_model(graph, producer_name="spacy-bioel",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def probe(graph: bytes) -> bool:
    """Whether `graph` (`probe_graph`, or a rewrite of it) returns the exact
    int32 product of all-255 A and all-127 B on this CPU."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    got = session.run(None, {"A": np.full((4, PROBE_K), 255, dtype=np.uint8),
                             "B": np.full((PROBE_K, 16), 127, dtype=np.int8)})[0]
    return bool((got.astype(np.int64) == 255 * 127 * PROBE_K).all())


@functools.lru_cache(maxsize=None)
def u8s8_saturates() -> bool:
    """Whether this CPU's ONNX Runtime adds uint8 x int8 products in a saturating
    int16 (asked once a process; $SPACY_BIOEL_INT8_SPLIT "1"/"0" answers instead).
    Without `onnx` to build the probe: False, with a warning."""
    setting = os.environ.get(ENV, "auto").strip().lower()
    if setting in ("1", "true", "yes"):
        return True
    if setting in ("0", "false", "no"):
        return False
    try:
        graph = shipped_probe_graph()
    except ImportError:
        logger.warning("onnx is not installed: int8 matmuls are not checked for int16 "
                       "saturation on this CPU (pip install onnx)")
        return False
    saturates = not probe(graph)
    if saturates:  # debug: the user did not ask (docs/component.md says what it costs)
        logger.debug("This CPU's ONNX Runtime saturates uint8 x int8 products (AVX2 without VNNI): "
                     "int8 weights are read as uint8 (an exact kernel) when a session opens")
    return saturates


def int8_split_here() -> Optional[bool]:
    """For a report's metadata: whether int8 graphs are split on this CPU
    (`u8s8_saturates`), None without onnxruntime."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    return u8s8_saturates()


def _constants(graph) -> Dict[str, np.ndarray]:
    """Name -> value of the graph's scalar initializers and Constant nodes (a
    zero point is one; weights are not read, nor their external files), followed
    through Identity nodes."""
    from onnx import TensorProto, numpy_helper

    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer
              if int(np.prod(t.dims)) <= 1 and t.data_location != TensorProto.EXTERNAL}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute:
            attr = node.attribute[0]
            if attr.name == "value":
                values[node.output[0]] = numpy_helper.to_array(attr.t)
        elif node.op_type == "Identity" and node.input[0] in values:
            values[node.output[0]] = values[node.input[0]]
    return values


def _unsigned_weight(tensor, folder: Optional[Path]):
    """The int8 initializer `tensor` as uint8 w + 128 (its bits with the sign bit
    flipped), read from its external file in `folder` or from the graph; None
    where its bytes are not at hand (an external file and no folder)."""
    from onnx import TensorProto, numpy_helper

    if tensor.data_location == TensorProto.EXTERNAL:
        if folder is None:
            return None
        location, offset = _external_span(tensor)
        return _flipped(Path(folder) / location, offset, tensor.dims)
    return sign_flipped(numpy_helper.to_array(tensor)).reshape(tuple(tensor.dims))


def sign_flipped(values: np.ndarray, fresh: bool = False) -> np.ndarray:
    """int8 `values` (or their bytes) as uint8 w + 128, each byte's sign bit
    flipped: in place where `fresh` (a writable array no one else holds), else
    into a new array (`values` may be read-only, e.g. a view of a graph's bytes)."""
    raw = values.view(np.uint8)
    if fresh:
        raw ^= SIGN_BIT
        return raw
    return raw ^ SIGN_BIT


def _external_span(tensor) -> Tuple[str, int]:
    """Where an initializer saved in an external file lies: (file name, offset)."""
    where = {entry.key: entry.value for entry in tensor.external_data}
    return where["location"], int(where.get("offset", 0))


def _flipped(file: Path, offset: int, shape) -> Optional[np.ndarray]:
    """The int8 values of `shape` at `offset` of `file` as uint8 w + 128 (each
    byte's sign bit flipped); None where the file holds fewer."""
    count = int(np.prod(tuple(shape))) if len(shape) else 1
    values = np.fromfile(file, dtype=np.uint8, count=count, offset=offset)
    if values.size != count:
        return None
    return sign_flipped(values, fresh=True).reshape(tuple(shape))


class Exact(NamedTuple):
    """What `exact_products` did: how many matmuls it rewrote, and the uint8
    weights read from external files (name -> array), which the session is given
    (`new_session`) instead of the graph holding a copy."""
    count: int
    weights: Dict[str, np.ndarray]


def exact_products(model, folder: Optional[Path] = None) -> Exact:
    """Rewrite in place each MatMulInteger / MatMulIntegerToFloat of `model`
    whose A is uint8 with the constant zero point `SHIFT` and whose B is int8 so
    that its int32 products are exact where ONNX Runtime's uint8 x int8 kernel
    saturates (the module's docstring). B an int8 initializer becomes uint8 with
    its zero point + 128: inline where the graph holds its bytes, else read from
    its external file in `folder` and returned in `Exact.weights` (the graph
    keeps a declaration of the same size; the session is given the array). B a
    graph input, or weights whose bytes are not at hand, is split: the positive
    and negative parts of A - SHIFT, two matmuls subtracted in int32, then, for
    MatMulIntegerToFloat, cast and scaled by a_scale x b_scale, plus its bias. A
    uint8 B is left as it is (that kernel is exact)."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    constants = _constants(graph)
    tensors = {t.name: t for t in graph.initializer}
    inputs = {v.name: v.type.tensor_type.elem_type for v in graph.input}
    zero_index = {"MatMulInteger": 2, "MatMulIntegerToFloat": 4}
    parts: Dict[str, tuple] = {}  # A -> (positive, negative) uint8 tensors
    unsigned: Dict[str, Optional[str]] = {}  # an int8 initializer -> its uint8 one (None: not at hand)
    added, external = [], {}
    nodes, rewritten, used = [], 0, set()

    def as_unsigned(name: str) -> Optional[str]:
        if name not in unsigned:
            tensor = tensors[name]
            values = _unsigned_weight(tensor, folder)
            unsigned[name] = None if values is None else f"{UNSIGNED_PREFIX}{name}"
            if values is not None and tensor.data_location == TensorProto.EXTERNAL:
                declared = TensorProto(name=unsigned[name], data_type=TensorProto.UINT8,
                                       dims=tensor.dims, data_location=TensorProto.EXTERNAL)
                declared.external_data.extend(tensor.external_data)  # the same span, never read
                added.append(declared)
                external[unsigned[name]] = values
            elif values is not None:
                added.append(numpy_helper.from_array(values, unsigned[name]))
        return unsigned[name]

    for node in graph.node:
        index = zero_index.get(node.op_type)
        if (index is None or len(node.input) <= index or node.domain not in
                ("", "ai.onnx", "com.microsoft")):
            nodes.append(node)
            continue
        zero = constants.get(node.input[index])
        if zero is None or zero.dtype != np.uint8 or zero.size != 1 or int(zero.reshape(-1)[0]) != SHIFT:
            nodes.append(node)
            continue
        a, b = node.input[0], node.input[1]
        b_type = tensors[b].data_type if b in tensors else inputs.get(b)
        if b_type == TensorProto.UINT8:
            nodes.append(node)
            continue
        b_zero = node.input[index + 1] if len(node.input) > index + 1 else ""
        if (b_type == TensorProto.INT8 and b in tensors and (not b_zero or b_zero in tensors)
                and as_unsigned(b) and (not b_zero or as_unsigned(b_zero))):
            swapped = list(node.input) + [""] * (index + 2 - len(node.input))
            swapped[1] = unsigned[b]
            swapped[index + 1] = unsigned[b_zero] if b_zero else "bioel_u8_shift"
            if not b_zero:
                used.add("bioel_u8_shift")
            rewrite = helper.make_node(node.op_type, swapped, list(node.output), name=node.name,
                                       domain=node.domain)
            rewrite.attribute.extend(node.attribute)
            nodes.append(rewrite)
            rewritten += 1
            continue
        used.update(("bioel_split_shift", "bioel_split_zero_i32", "bioel_split_zero_u8"))
        tag = f"bioel_split/{node.name or node.output[0]}"
        if a not in parts:
            base = f"bioel_split/{a}"
            nodes += [helper.make_node("Cast", [a], [f"{base}/i32"], to=TensorProto.INT32),
                      helper.make_node("Sub", [f"{base}/i32", "bioel_split_shift"], [f"{base}/signed"]),
                      helper.make_node("Neg", [f"{base}/signed"], [f"{base}/negated"]),
                      helper.make_node("Max", [f"{base}/signed", "bioel_split_zero_i32"], [f"{base}/pos_i32"]),
                      helper.make_node("Max", [f"{base}/negated", "bioel_split_zero_i32"], [f"{base}/neg_i32"]),
                      helper.make_node("Cast", [f"{base}/pos_i32"], [f"{base}/pos"], to=TensorProto.UINT8),
                      helper.make_node("Cast", [f"{base}/neg_i32"], [f"{base}/neg"], to=TensorProto.UINT8)]
            parts[a] = (f"{base}/pos", f"{base}/neg")
        pos, neg = parts[a]
        tail = [b_zero] if b_zero else []
        exact = node.output[0] if node.op_type == "MatMulInteger" else f"{tag}/int32"
        nodes += [helper.make_node("MatMulInteger", [pos, b, "bioel_split_zero_u8"] + tail, [f"{tag}/pos"]),
                  helper.make_node("MatMulInteger", [neg, b, "bioel_split_zero_u8"] + tail, [f"{tag}/neg"]),
                  helper.make_node("Sub", [f"{tag}/pos", f"{tag}/neg"], [exact])]
        if node.op_type == "MatMulIntegerToFloat":
            a_scale, b_scale = node.input[2], node.input[3]
            bias = node.input[6] if len(node.input) > 6 and node.input[6] else ""
            scaled = f"{tag}/scaled" if bias else node.output[0]
            nodes += [helper.make_node("Mul", [a_scale, b_scale], [f"{tag}/scale"]),
                      helper.make_node("Cast", [exact], [f"{tag}/float"], to=TensorProto.FLOAT),
                      helper.make_node("Mul", [f"{tag}/float", f"{tag}/scale"], [scaled])]
            if bias:
                nodes.append(helper.make_node("Add", [scaled, bias], [node.output[0]]))
        rewritten += 1
    if rewritten:
        graph.ClearField("node")
        graph.node.extend(nodes)
        consumed = {name for node in nodes for name in node.input}
        gone = {name for name, read in unsigned.items() if read} - consumed  # read as uint8 instead
        kept = [t for t in graph.initializer if t.name not in gone]
        constant = {"bioel_split_shift": np.array(SHIFT, dtype=np.int32),
                    "bioel_split_zero_i32": np.array(0, dtype=np.int32),
                    "bioel_split_zero_u8": np.array(0, dtype=np.uint8),
                    "bioel_u8_shift": np.array(SHIFT, dtype=np.uint8)}
        graph.ClearField("initializer")
        graph.initializer.extend(kept + added + [numpy_helper.from_array(value, name)
                                                 for name, value in constant.items() if name in used])
    return Exact(rewritten, external)


def unsigned_files(graph: Union[str, Path]) -> Tuple[Path, Path]:
    """The unsigned companion of the graph file `graph` (`write_unsigned`):
    `<name>.u8.onnx` (the rewritten graph) and `<name>.u8.json` (its record)
    beside it; for mention.onnx, mention.u8.onnx and mention.u8.json."""
    graph = Path(graph)
    stem = graph.name[:-len(".onnx")] if graph.name.endswith(".onnx") else graph.name
    return graph.with_name(f"{stem}.u8.onnx"), graph.with_name(f"{stem}.u8.json")


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def write_unsigned(graph: Union[str, Path]) -> List[Path]:
    """Write what a CPU that saturates uint8 x int8 products opens in place of
    the graph file `graph` (saved with its weights in an external file beside it,
    `onnx_export.save_split`), on any CPU, so that such a CPU opens it without
    `onnx` (whose import took 1 s of a 1.8 s load on an AMD EPYC with AVX2:
    docs/results/speed.md):
    - `<name>.u8.json`, always: the SHA-256 of the graph it was written for and
      of its companion, and where each weight the companion reads as uint8 is
      (file, offset, shape); without a companion the graph opens as it is (it
      has no shifted uint8 x int8 matmul);
    - `<name>.u8.onnx`, where some int8 weights need it: the graph as
      `exact_graph` rewrites it (`exact_products`), those weights declared
      uint8 at the same spans of the same weights file (never read as they are).
    Needs `onnx`. RETURNS the files written (a companion written before and not
    needed now is removed: it is this package's file, named after the graph)."""
    import onnx

    graph = Path(graph)
    companion, record = unsigned_files(graph)
    source = graph.read_bytes()
    model = onnx.load_from_string(source)
    done = exact_products(model, graph.parent)
    meta: Dict[str, Any] = {"graph": _sha256(source), "unsigned": None, "weights": []}
    rewritten = model.SerializeToString() if done.count else None
    if rewritten is not None:
        meta["unsigned"] = _sha256(rewritten)
        for tensor in model.graph.initializer:
            if tensor.name in done.weights:
                location, offset = _external_span(tensor)
                meta["weights"].append({"name": tensor.name, "location": location, "offset": offset,
                                        "shape": [int(d) for d in tensor.dims]})
    _write_companion(graph, rewritten, meta)
    return [companion, record] if done.count else [record]


def _write_companion(graph: Path, rewritten: Optional[bytes], meta: Dict[str, Any]) -> None:
    """Write the record `meta` and the companion `rewritten` of the graph file
    `graph` (None: a companion written before is removed, this package's file)."""
    companion, record = unsigned_files(graph)
    if rewritten is not None:
        replace_file(companion, lambda p: p.write_bytes(rewritten))
    elif companion.is_file():
        companion.unlink()
    replace_file(record, lambda p: p.write_text(json.dumps(meta, indent=1), encoding="utf-8"))


def _companion(graph: Path, source: Optional[bytes] = None
               ) -> Optional[Tuple[Optional[bytes], Dict[str, Any]]]:
    """The companion graph's bytes (None: the graph opens as it is) and the
    record of the graph file `graph` (its bytes `source`, else read), where the
    record is there and both were written for these bytes (`write_unsigned`);
    None otherwise."""
    companion, record = unsigned_files(graph)
    try:
        meta = json.loads(record.read_text(encoding="utf-8"))
        source = graph.read_bytes() if source is None else source
        if not isinstance(meta, dict) or meta.get("graph") != _sha256(source) or \
                not isinstance(meta.get("weights"), list):
            logger.debug("%s was not written for %s: not used", record, graph)
            return None
        if meta.get("unsigned") is None:
            return None, meta
        rewritten = companion.read_bytes()
    except (OSError, ValueError):
        return None
    if meta["unsigned"] != _sha256(rewritten):
        logger.debug("%s is not the graph %s names: not used", companion, record)
        return None
    return rewritten, meta


def read_unsigned(graph: Union[str, Path]
                  ) -> Optional[Tuple[Optional[bytes], Dict[str, np.ndarray]]]:
    """What a CPU that saturates opens for the graph file `graph`, from what
    `write_unsigned` wrote, without `onnx`: the companion's bytes and its weights
    read as uint8 (w + 128, the sign bit flipped) from the weights file beside
    it; or (None, {}) where the record says the graph is exact as it is. None where the record is absent, was written for other bytes, or names a
    weight that is not there (then `exact_graph` rewrites the graph itself)."""
    graph = Path(graph)
    found = _companion(graph)
    if found is None:
        return None
    rewritten, meta = found
    if rewritten is None:
        return None, {}
    weights: Dict[str, np.ndarray] = {}
    try:
        for entry in meta["weights"]:
            location, shape = str(entry["location"]), tuple(int(d) for d in entry["shape"])
            if Path(location).name != location:  # the weights file beside the graph, nothing else
                return None
            values = _flipped(graph.parent / location, int(entry["offset"]), shape)
            if values is None:
                return None
            weights[str(entry["name"])] = values
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return rewritten, weights


def copy_unsigned(graph: Union[str, Path], pinned: bytes, target: Union[str, Path]) -> bool:
    """Copy what `write_unsigned` wrote for the graph file `graph` (whose bytes
    are `pinned`) to the graph file `target`'s names, where it was written for
    those bytes: saving a loaded pipeline needs no `onnx` then. Whether it did."""
    found = _companion(Path(graph), pinned)
    if found is None:
        return False
    _write_companion(Path(target), *found)
    return True


# where an inline record's companion declares the weights it is given (`inline_unsigned`):
# never a file; each is given to the session in memory
INLINE_LOCATION = "bioel-inline-weights"
INLINE_MIN_BYTES = 1024  # initializers smaller than this stay inside the companion
INLINE_DTYPES = ("uint8", "int8", "float16", "float32", "float64", "int32", "int64")


def inline_unsigned(graph: bytes) -> Dict[str, Any]:
    """For a graph held as bytes with its weights inside (the in-context NER's,
    `ner.onnx_tokens`, saved within its model), the record that lets a CPU that
    saturates open it without `onnx`, saved beside those bytes:
    {"graph": its SHA-256, "unsigned": the companion's bytes (None: the graph
    has no shifted uint8 x int8 matmul and opens as it is), "weights": [{"name",
    "offset", "dtype", "shape", "flip"}]}. The companion is the graph as
    `exact_products` rewrites it, with every initializer of at least
    INLINE_MIN_BYTES whose bytes lie once in `graph` declared external at
    INLINE_LOCATION (so it stays small): `read_inline` reads each from `graph`
    at its offset, flipped to uint8 w + 128 where the rewrite reads int8 weights
    as uint8. Needs `onnx`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load_from_string(graph)
    spans: Dict[str, Tuple[int, str, Tuple[int, ...]]] = {}
    for tensor in model.graph.initializer:
        data = tensor.raw_data
        if tensor.data_location == TensorProto.EXTERNAL or len(data) < INLINE_MIN_BYTES:
            continue
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type))
        offset = graph.find(data)
        if dtype.name in INLINE_DTYPES and offset >= 0 and graph.find(data, offset + 1) < 0:
            spans[tensor.name] = (offset, dtype.name, tuple(int(d) for d in tensor.dims))
    done = exact_products(model)
    meta: Dict[str, Any] = {"graph": _sha256(graph), "unsigned": None, "weights": []}
    if not done.count:
        return meta
    kept = []
    for tensor in model.graph.initializer:
        source = tensor.name[len(UNSIGNED_PREFIX):] if tensor.name.startswith(UNSIGNED_PREFIX) \
            else tensor.name
        if source not in spans:
            kept.append(tensor)
            continue
        offset, dtype, shape = spans[source]
        entry = {"name": tensor.name, "offset": offset, "dtype": dtype, "shape": list(shape),
                 "flip": source != tensor.name}
        if not np.array_equal(_inline_values(graph, entry), numpy_helper.to_array(tensor)):
            kept.append(tensor)  # not what the record would read (never seen): kept inside
            continue
        declared = TensorProto(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims,
                               data_location=TensorProto.EXTERNAL)
        where = declared.external_data.add()
        where.key, where.value = "location", INLINE_LOCATION
        kept.append(declared)
        meta["weights"].append(entry)
    model.graph.ClearField("initializer")
    model.graph.initializer.extend(kept)
    meta["unsigned"] = model.SerializeToString()
    return meta


def _inline_values(graph: bytes, entry: Dict[str, Any]) -> np.ndarray:
    """The values `entry` of an inline record names in `graph` (flipped to uint8
    w + 128 where it says so); ValueError where `graph` does not hold them. Bytes
    are read in place; wider values are copied (aligned)."""
    dtype = np.dtype(str(entry["dtype"]))
    shape = tuple(int(d) for d in entry["shape"])
    if dtype.name not in INLINE_DTYPES or (entry["flip"] and dtype != np.int8):
        raise ValueError(f"not a weight an inline record reads: {entry['dtype']}")
    values = np.frombuffer(graph, dtype=dtype, count=int(np.prod(shape)),
                           offset=int(entry["offset"])).reshape(shape)
    if entry["flip"]:
        return sign_flipped(values)
    return values.copy() if dtype.itemsize > 1 else values


def inline_matches(record: Any, graph: bytes) -> bool:
    """Whether `record` is an inline record written for the graph bytes `graph`."""
    return isinstance(record, dict) and record.get("graph") == _sha256(graph)


def read_inline(graph: bytes, record: Any
                ) -> Optional[Tuple[Optional[bytes], Dict[str, np.ndarray]]]:
    """What a CPU that saturates opens for the graph bytes `graph`, from its
    inline record (`inline_unsigned`), without `onnx`: the companion's bytes and
    the weights it declares at INLINE_LOCATION, read from `graph`; (None, {})
    where the record says the graph is exact as it is; None where the record is
    absent, was written for other bytes or names values `graph` does not hold."""
    if not inline_matches(record, graph):
        return None
    companion = record.get("unsigned")
    if companion is None:
        return None, {}
    weights: Dict[str, np.ndarray] = {}
    try:
        if not isinstance(companion, bytes):
            return None
        for entry in record["weights"]:
            weights[str(entry["name"])] = _inline_values(graph, entry)
    except (ValueError, KeyError, TypeError):
        return None
    return companion, weights


def exact_graph(source: Union[bytes, str, Path], force: Optional[bool] = None
                ) -> Tuple[Union[bytes, str, Path], Dict[str, np.ndarray]]:
    """`source` (graph bytes or a file path) as it is where the CPU does not
    saturate (`u8s8_saturates`; `force` decides instead), else its bytes with
    every shifted uint8 x int8 matmul made exact (`exact_products`), and the
    uint8 weights read from its external files for the session (`new_session`
    gives them as initializers); a graph without such a matmul is returned as it
    is. The rest of a file's external weights is not read: the bytes still name
    them, in the file's folder (`EXTERNAL_FOLDER`, a session option). A file
    with its companion (`write_unsigned`) is read from it, without `onnx`."""
    if not (u8s8_saturates() if force is None else force):
        return source, {}
    if not isinstance(source, bytes):
        found = read_unsigned(source)
        if found is not None:
            return found if found[0] is not None else (source, {})
    try:
        import onnx
    except ImportError:  # u8s8_saturates warned already where it could not probe
        return source, {}
    if isinstance(source, bytes):
        model, folder = onnx.load_from_string(source), None
    else:
        model, folder = onnx.load(str(source), load_external_data=False), Path(source).resolve().parent
    done = exact_products(model, folder)
    if not done.count:
        return source, {}
    return model.SerializeToString(), done.weights


def whole_graph(path: Union[str, Path]) -> bytes:
    """The bytes of the graph file `path` with its external weights read in."""
    import onnx

    return onnx.load(str(path)).SerializeToString()


__all__ = ["u8s8_saturates", "sign_flipped", "int8_split_here", "exact_graph", "whole_graph", "unsigned_files",
           "write_unsigned", "read_unsigned", "copy_unsigned", "inline_unsigned", "inline_matches", "read_inline", "EXTERNAL_FOLDER", "exact_products", "Exact", "probe_graph", "probe"]

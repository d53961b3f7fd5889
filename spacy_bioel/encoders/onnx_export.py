"""Export the mention tower of a bi-encoder to ONNX (optionally int8).

The graph takes (input_ids, attention_mask) int64 (batch, seq) and returns the
pooled (L2-normalised for cosine) embedding, exactly `BiEncoder.encode` for the
mention tower. It is traced with a padded batch, so the attention mask's
padding branch is part of the graph, and checked against PyTorch before it is
used (E179 when it differs).

int8 is ONNX Runtime's dynamic quantisation with per-channel int8 weights:
'int8' quantises the MatMul weights (the word-embedding table stays float32),
'int8-all' the embedding table too (a smaller file and less memory at the
same accuracy: docs/results/speed.md).

The activations are quantised per token row (`scale_rows`), not with one scale
per call as `quantize_dynamic` writes them: a text's embedding then does not
depend on the texts encoded beside it, so the runtime batches texts of one
token length (`ROW_SCALES` in the graph's metadata says so; a graph without it
is called once per text).

References:
    ONNX Runtime, "Quantize ONNX models" (dynamic quantisation); Dettmers et
    al., LLM.int8(): 8-bit matrix multiplication for transformers at scale,
    NeurIPS 2022 (vector-wise quantisation: one scale per row of the
    activations, one per column of the weights).
"""
from __future__ import annotations

import io
import logging
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from ..errors import BioELError, Errors
from ..files import replace_file

logger = logging.getLogger(__name__)
QUANTIZATIONS = (None, "int8", "int8-all")
ROW_SCALES = ("spacy_bioel.activation_scales", "row")  # metadata of a graph quantised per row
OPSET = 17
PROBE_TEXTS = ["colon cancer", "familial adenomatous polyposis of the colon", "FAP", "x"]


def require_onnx() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as err:
        raise BioELError(Errors.E178.format(missing=err.name or "onnx")) from err


def export_mention_encoder(model, quantize: Optional[str] = None, tower: str = "mention") -> bytes:
    """The ONNX bytes of `model`'s mention tower (a thinc `spacy-bioel.BiEncoder.v1`
    with its PyTorch module built), float32 or int8; `tower="concept"` exports
    the concept tower instead (to encode a very large KB's names faster).

    RETURNS (bytes): A serialized ONNX model (E178 without onnx/onnxruntime,
        E179 when the graph's output differs from PyTorch's).
    """
    import torch

    from .thinc_biencoder import tokenize, torch_module

    require_onnx()
    if model.attrs.get("prompt"):
        from ..errors import BioELError, Errors
        raise BioELError(Errors.E192.format(
            what="The ONNX runtime", why="its tokenizer reads the bare mention, not the "
            f"prompt template '{model.attrs['prompt']}'",
            fix="Keep runtime = spacy-bioel.TorchRuntime.v1 for a prompted encoder."))
    module = torch_module(model)
    device = next(module.parameters()).device

    class MentionGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.biencoder = module

        def forward(self, input_ids, attention_mask):
            return self.biencoder.encode(tower, input_ids, attention_mask)

    ids, mask = tokenize(model, PROBE_TEXTS, device)  # padded: the masking branch is traced
    data, reference = trace(MentionGraph(), (ids, mask), "embedding",
                            {"input_ids": {0: "batch", 1: "sequence"},
                             "attention_mask": {0: "batch", 1: "sequence"},
                             "embedding": {0: "batch"}})
    if quantize:
        data = quantize_int8(data, embeddings=quantize == "int8-all")
    check_export(data, ids.cpu().numpy(), mask.cpu().numpy(), reference, quantize)
    return data


def trace(graph, inputs: tuple, output: str, dynamic_axes: dict) -> Tuple[bytes, np.ndarray]:
    """`graph` (a torch module of (input_ids, attention_mask)) traced in eval mode
    to ONNX bytes (the TorchScript exporter, OPSET), and its float32 output on
    `inputs`, the reference an export is checked against. Each submodule's
    training mode is restored afterwards."""
    import torch

    modes = [(module, module.training) for module in graph.modules()]
    graph.eval()
    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
            torch.onnx.export(graph, inputs, buffer, input_names=["input_ids", "attention_mask"],
                              output_names=[output], opset_version=OPSET, dynamo=False,
                              dynamic_axes=dynamic_axes)
            reference = graph(*inputs).float().cpu().numpy()
    finally:
        for module, training in modes:
            module.training = training
    return buffer.getvalue(), reference


def quantize_int8(data: bytes, embeddings: bool = False) -> bytes:
    """ONNX Runtime dynamic quantisation: per-channel int8 MatMul weights (and,
    with `embeddings`, the Gather of the embedding tables)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        source.write_bytes(data)
        root = logging.getLogger()
        # it logs a pre-processing hint through `logging.info`, which also gives the root
        # logger a handler of its own (every later message of the process printed twice)
        previous, handlers, root.disabled = root.disabled, list(root.handlers), True
        try:
            quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8,
                             per_channel=True,
                             op_types_to_quantize=["MatMul", "Gather"] if embeddings else ["MatMul"])
        finally:
            root.disabled = previous
            for handler in [h for h in root.handlers if h not in handlers]:
                root.removeHandler(handler)
        return scale_rows(target.read_bytes())


def scale_rows(data: bytes) -> bytes:
    """The dynamically quantised graph `data` with each activation quantised per
    token row: every `DynamicQuantizeLinear` (one uint8 scale and zero point for
    the whole tensor, so a row's values depended on the other rows of the call)
    becomes a symmetric int8 quantisation with one scale per row (max |x| / 127,
    shifted to uint8 with zero point 128), and the scale products that followed
    it, (rows' scale x weight scale), are applied in turn: the int32 products
    times the weights' scales, then times the rows' scales. (ONNX Runtime fuses
    `MatMulInteger -> Cast -> Mul` with the product of both scales into a kernel
    that takes the activation's scale as one number: multiplied by a row scale
    there, its output was wrong.) Marked with `ROW_SCALES` in the metadata; a
    graph whose quantisation does not have this shape is returned as it is."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load_from_string(data)
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), OPSET)
    consumers: dict = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    quantizers = [n for n in graph.node if n.op_type == "DynamicQuantizeLinear"]
    if not quantizers:
        return data
    replaced, followers = {}, {}
    for node in quantizers:
        x, (q, scale, zero) = node.input[0], node.output
        products = consumers.get(scale, [])
        # each scale feeds Mul(scale, weight scale) nodes, each read by Mul(products, that)
        known = products and all(p.op_type == "Mul" and consumers.get(p.output[0]) and
                                 all(c.op_type == "Mul" for c in consumers[p.output[0]])
                                 for p in products)
        if not known:
            return data  # not the shape this rewrite knows: one scale a call stays
        tag = node.name or q
        reduce = (helper.make_node("ReduceMax", [f"{tag}/abs", "bioel_row_axes"], [f"{tag}/max"],
                                   keepdims=1) if opset >= 18 else
                  helper.make_node("ReduceMax", [f"{tag}/abs"], [f"{tag}/max"], axes=[-1], keepdims=1))
        replaced[id(node)] = [
            helper.make_node("Abs", [x], [f"{tag}/abs"]), reduce,
            helper.make_node("Div", [f"{tag}/max", "bioel_row_127"], [f"{tag}/step"]),
            helper.make_node("Max", [f"{tag}/step", "bioel_row_tiny"], [scale]),
            helper.make_node("Div", [x, scale], [f"{tag}/steps"]),
            helper.make_node("Round", [f"{tag}/steps"], [f"{tag}/rounded"]),
            helper.make_node("Add", [f"{tag}/rounded", "bioel_row_shift"], [f"{tag}/shifted"]),
            helper.make_node("Cast", [f"{tag}/shifted"], [q], to=TensorProto.UINT8),
            helper.make_node("Identity", ["bioel_row_zero"], [zero])]
        for product in products:
            weight_scale = next(i for i in product.input if i != scale)
            replaced[id(product)] = []
            for follower in consumers[product.output[0]]:
                out = follower.output[0]
                follower.input[:] = [i if i != product.output[0] else weight_scale
                                     for i in follower.input]
                follower.output[0] = f"{out}/by_weight"
                followers[id(follower)] = helper.make_node("Mul", [f"{out}/by_weight", scale], [out])
    nodes = []
    for node in graph.node:
        nodes.extend(replaced.get(id(node), [node]))
        if id(node) in followers:
            nodes.append(followers[id(node)])
    graph.ClearField("node")
    graph.node.extend(nodes)
    graph.initializer.extend([
        numpy_helper.from_array(np.array(127.0, dtype=np.float32), "bioel_row_127"),
        numpy_helper.from_array(np.array(1e-12, dtype=np.float32), "bioel_row_tiny"),
        numpy_helper.from_array(np.array(128.0, dtype=np.float32), "bioel_row_shift"),
        numpy_helper.from_array(np.array(128, dtype=np.uint8), "bioel_row_zero")])
    if opset >= 18:  # ReduceMax takes its axes as an input
        graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), "bioel_row_axes"))
    helper.set_model_props(model, {**{p.key: p.value for p in model.metadata_props},
                                   ROW_SCALES[0]: ROW_SCALES[1]})
    return model.SerializeToString()


def scales_rows(session) -> bool:
    """Whether the graph of an ONNX Runtime `session` quantises its activations
    per row (`scale_rows`), read from its metadata (no `onnx` needed)."""
    return session.get_modelmeta().custom_metadata_map.get(ROW_SCALES[0]) == ROW_SCALES[1]


def check_export(data: bytes, ids: np.ndarray, mask: np.ndarray, reference: np.ndarray,
                 quantize: Optional[str]) -> None:
    """E179 unless the ONNX graph reproduces PyTorch's embeddings of a padded
    batch (cosine >= 0.9999 in float32, >= 0.9 in int8), run as the runtime
    runs it (`onnx_sessions.new_session`: int8 products split where this CPU
    saturates them)."""
    from .onnx_sessions import new_session

    session = new_session(data)
    got = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    cosine = (got * reference).sum(1) / (np.linalg.norm(got, axis=1) *
                                         np.linalg.norm(reference, axis=1) + 1e-12)
    bound = 0.9 if quantize else 0.9999
    if not np.all(cosine >= bound):
        raise BioELError(Errors.E179.format(cosine=float(cosine.min()), bound=bound))


def save_split(data: bytes, graph: Path, weights: Path) -> None:
    """Write the graph `data` as two files: `graph` (the nodes, a few hundred KB)
    and `weights` (every initializer of 1 KB or more, in ONNX's external-data
    layout, named by `graph` relative to its folder). ONNX Runtime then maps the
    weights from the file instead of parsing them out of the graph and copying
    them, which doubled the peak memory of loading (docs/results/speed.md). Each
    file is replaced whole (weights first)."""
    import onnx
    from onnx.external_data_helper import (convert_model_to_external_data,
                                           write_external_data_tensors)

    model = onnx.load_from_string(data)
    convert_model_to_external_data(model, all_tensors_to_one_file=True,
                                   location=weights.name, size_threshold=1024)
    with tempfile.TemporaryDirectory(dir=graph.parent) as tmp:
        model = write_external_data_tensors(model, tmp)  # tmp/<weights.name>; clears raw data
        written = Path(tmp) / weights.name
        if not written.exists():  # a graph without large initializers
            written.write_bytes(b"")
        replace_file(weights, lambda p: shutil.copyfile(written, p))  # the umask's mode, not 0600
        replace_file(graph, lambda p: p.write_bytes(model.SerializeToString()))


def read_graph(graph: Path) -> bytes:
    """RETURNS (bytes): a saved graph with its external weights inlined (one
    buffer that `onnxruntime.InferenceSession` takes), whichever way it was saved."""
    import onnx

    return onnx.load(str(graph), load_external_data=True).SerializeToString()


__all__ = ["export_mention_encoder", "require_onnx", "trace", "quantize_int8", "scale_rows", "scales_rows", "check_export",
           "save_split", "read_graph", "QUANTIZATIONS", "OPSET", "ROW_SCALES"]

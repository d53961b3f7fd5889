"""An NER's in-context encoder served by ONNX Runtime: `spacy-bioel.OnnxTransformerTokens.v1`.

`spacy-bioel.TransformerTokens.v1` trains through PyTorch. To predict, a trained
pipeline is converted (`python -m spacy_bioel ner-onnx TRAINED OUTPUT`,
`convert_pipeline`): the encoder and its learned layer mix are exported as one
graph, (input_ids, attention_mask) of a batch of windows -> each piece's mixed
vector, optionally int8 (ONNX Runtime's dynamic quantisation, each activation
row with its own scale, `encoders.onnx_export.quantize_int8`); the layer is
swapped for this one in the model and in the saved config. The graph and the
tokenizer are saved inside the component's model (a thinc shim), so the
converted pipeline loads with spaCy, ONNX Runtime and `tokenizers` alone: no
PyTorch, no transformers.

At prediction the windows and the per-token means are those of the PyTorch
layer (`pieces`); windows of one length go to ONNX Runtime together (an int8
row's scale is its own), so a document's vectors do not depend on the
documents batched beside it. The layer does not train: its backward pass
passes no gradient.

On a CPU whose ONNX Runtime saturates uint8 x int8 products (AVX2 without VNNI,
`encoders.int8_exact`), the graph's int8 matmuls are rewritten before its
session opens, which needs `onnx` (its import was about 1 s of `link TEXT` on
an AMD EPYC). So the saved layer carries the rewrite's record beside the graph
(`int8_exact.inline_unsigned`: a small companion graph, and where in the
graph's bytes each weight it reads lies), written when the layer is saved, and
such a CPU opens that without `onnx`.
"""
from __future__ import annotations

import copy as copy_module
import logging
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import srsly
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.shims import Shim
from thinc.types import Floats2d

from ..errors import BioELError, Errors
from ..validation import as_int
from .pieces import WordPieces, piece_batch

logger = logging.getLogger(__name__)
TORCH_ARCHITECTURE = "spacy-bioel.TransformerTokens.v1"
ONNX_ARCHITECTURE = "spacy-bioel.OnnxTransformerTokens.v1"
TORCH_LAYER = "transformer_tokens"  # the thinc name of the PyTorch layer's model
ONNX_LAYER = "onnx_transformer_tokens"  # and of this one's
CONTEXT_LAYERS = (TORCH_LAYER, ONNX_LAYER)
TOKENS_PER_CALL = 2048  # pieces (padding included) in one ONNX Runtime call: its arena stays small
PROBE_TEXTS = ["Familial adenomatous polyposis (FAP) is an autosomal dominant colon cancer "
               "syndrome.", "Asthma", "Patients with BRCA1 mutations develop breast and "
               "ovarian cancers ; 12 % had no carcinoma ."]
FORMAT = 1


class OnnxPiecesShim(Shim):
    """Holds the exported graph, the word-piece tokenizer, what they were
    exported from (`info`) and the graph's inline record for CPUs that saturate
    (`unsigned`, see the module); serialised with the model; opens its ONNX
    Runtime session on first use (again in a forked worker)."""

    def __init__(self, threads: int = 0) -> None:
        from ..encoders.onnx_sessions import track

        super().__init__(None)
        self.threads = threads
        self.graph: bytes = b""
        self.pieces: Optional[WordPieces] = None
        self.info: Dict[str, Any] = {}
        self.unsigned: Optional[Dict[str, Any]] = None
        self._session = None
        track(self)

    def load(self, graph: bytes, pieces: WordPieces, info: Dict[str, Any],
             unsigned: Optional[Dict[str, Any]] = None) -> "OnnxPiecesShim":
        self.graph, self.pieces, self.info, self._session = graph, pieces, dict(info), None
        self.unsigned = unsigned if isinstance(unsigned, dict) else None
        return self

    def record(self) -> Optional[Dict[str, Any]]:
        """The graph's inline record (`int8_exact.inline_unsigned`): the one it
        was loaded with where that was written for these bytes, else written now
        (needs `onnx`; None without it, and the graph is rewritten where needed)."""
        from ..encoders.int8_exact import inline_matches, inline_unsigned

        if not self.graph:
            return None
        if not inline_matches(self.unsigned, self.graph):
            try:
                self.unsigned = inline_unsigned(self.graph)
            except ImportError:
                self.unsigned = None
        return self.unsigned

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """(windows, pieces, hidden) float32 mixed piece vectors."""
        if self._session is None:
            from ..encoders.onnx_sessions import new_session

            self._session = new_session(self.graph, self.threads, inline=self.unsigned)
        return self._session.run(None, {"input_ids": input_ids,
                                        "attention_mask": attention_mask})[0]

    def __call__(self, inputs, is_train: bool):
        return self.run(*inputs), lambda d_outputs: None

    def finish_update(self, optimizer) -> None:
        """Nothing trains here."""

    def to_device(self, device_type: str, device_id: int) -> None:
        """The graph runs on the CPU whatever the device of the layers after it."""

    def copy(self) -> "OnnxPiecesShim":
        other = OnnxPiecesShim(self.threads)
        return other.load(self.graph, copy_module.deepcopy(self.pieces), self.info, self.unsigned)

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps({"format": FORMAT, "graph": self.graph, "info": self.info,
                                    "pieces": self.pieces.to_dict() if self.pieces else None,
                                    "unsigned": self.record()})

    def from_bytes(self, data: bytes) -> "OnnxPiecesShim":
        msg = srsly.msgpack_loads(data)
        pieces = WordPieces.from_dict(msg["pieces"]) if msg.get("pieces") else None
        return self.load(msg.get("graph") or b"", pieces, msg.get("info") or {}, msg.get("unsigned"))


@registry.architectures(ONNX_ARCHITECTURE)
def build_onnx_transformer_tokens(width: int, window: int = 128, stride: int = 96,
                                  threads: int = 0) -> Model[List[Doc], List[Floats2d]]:
    """Docs -> (tokens, width) vectors of an encoder reading each document in
    context, served by ONNX Runtime: what `ner-onnx` puts in place of a trained
    `spacy-bioel.TransformerTokens.v1` (see the module). Its graph comes with the
    saved pipeline; a fresh one has none (E255 when called).

    width (int): The encoder's hidden size.
    window (int): Word pieces a window reads (without [CLS] and [SEP]).
    stride (int): Pieces between the starts of two windows.
    threads (int): ONNX Runtime's intra-op threads (0: every core).
    """
    width = as_int("width", width, 1, 1_000_000)
    window = as_int("window", window, 8, 100_000)
    stride = as_int("stride", stride, 1, window)
    threads = as_int("threads", threads, 0, 1024)
    return Model(ONNX_LAYER, _forward, shims=[OnnxPiecesShim(threads)],
                 dims={"nO": width}, attrs={"window": window, "stride": stride})


def _forward(model: Model, docs: List[Doc], is_train: bool
             ) -> Tuple[List[Floats2d], Callable[[List[Floats2d]], List[Doc]]]:
    shim: OnnxPiecesShim = model.shims[0]
    if not shim.graph or shim.pieces is None:
        raise BioELError(Errors.E255.format(where=f"layer '{model.name}'"))
    vectors = encode_tokens(shim, docs, model.attrs["window"], model.attrs["stride"])
    if vectors.shape[1] != model.get_dim("nO"):
        raise BioELError(Errors.E175.format(
            name="width", value=model.get_dim("nO"),
            expected=f"the graph's hidden size, {vectors.shape[1]}"))
    out = model.ops.unflatten(model.ops.asarray2f(vectors), [len(doc) for doc in docs])
    return out, lambda d_out: docs


def encode_tokens(shim: OnnxPiecesShim, docs: Sequence[Doc], window: int, stride: int
                  ) -> np.ndarray:
    """(tokens of all `docs`, hidden): each token's mean piece vector. Each call's
    pieces are added to their tokens' sums as they come back, so memory holds the
    output and one call's pieces, not every window of the batch."""
    input_ids, mask, index = piece_batch(shim.pieces, docs, window, stride)
    n_tokens = sum(len(doc) for doc in docs)
    lengths = mask.sum(axis=1)
    sums: Optional[np.ndarray] = None
    for length in np.unique(lengths):
        same = np.flatnonzero(lengths == length)
        per_call = max(1, TOKENS_PER_CALL // int(length))
        for first in range(0, len(same), per_call):
            rows = same[first:first + per_call]
            got = shim.run(np.ascontiguousarray(input_ids[rows, :length]),
                           np.ascontiguousarray(mask[rows, :length]))
            if sums is None:
                sums = np.zeros((n_tokens, got.shape[-1]), dtype=np.float32)
            owners = index[rows, :length].reshape(-1)
            keep = owners >= 0
            np.add.at(sums, owners[keep], got.reshape(-1, got.shape[-1])[keep])
    if sums is None:  # no document has a piece
        hidden = int(shim.info.get("hidden", 0)) or 1
        return np.zeros((n_tokens, hidden), dtype=np.float32)
    owners = index[index >= 0]
    counts = np.maximum(np.bincount(owners, minlength=n_tokens), 1).astype(np.float32)
    return sums / counts[:, None]


def export_pieces_graph(layer: Model, quantize: Optional[str] = None) -> bytes:
    """The ONNX bytes of a `spacy-bioel.TransformerTokens.v1` layer's encoder and
    layer mix: (input_ids, attention_mask) -> (windows, pieces, hidden), float32
    or int8 ('int8': the MatMul weights; 'int8-all': the embedding tables too).
    Checked on probe windows against PyTorch (E257 when a piece differs)."""
    import spacy
    import torch

    from ..encoders.onnx_export import QUANTIZATIONS, quantize_int8, require_onnx, trace

    require_onnx()
    if quantize not in QUANTIZATIONS:
        raise BioELError(Errors.E175.format(name="quantize", value=repr(quantize),
                                            expected="none, 'int8' or 'int8-all'"))
    module = layer.layers[0].shims[0]._model

    class PiecesGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mixed_pieces = module

        def forward(self, input_ids, attention_mask):
            return self.mixed_pieces.mixed(input_ids, attention_mask)

    nlp = spacy.blank("en")
    docs = [nlp(text) for text in PROBE_TEXTS]
    ids, mask, _ = piece_batch(layer.attrs["pieces"], docs, layer.attrs["window"],
                               layer.attrs["stride"])
    axes = {0: "windows", 1: "pieces"}
    data, reference = trace(PiecesGraph(), (torch.from_numpy(ids), torch.from_numpy(mask)),
                            "pieces", {"input_ids": axes, "attention_mask": axes, "pieces": axes})
    if quantize:
        data = quantize_int8(data, embeddings=quantize == "int8-all")
    check_pieces(data, ids, mask, reference, quantize)
    return data


def check_pieces(data: bytes, ids: np.ndarray, mask: np.ndarray, reference: np.ndarray,
                 quantize: Optional[str]) -> float:
    """E257 unless the graph reproduces `reference` at every real piece (cosine
    >= 0.9999 in float32, >= 0.9 in int8); RETURNS the lowest cosine."""
    from ..encoders.onnx_sessions import new_session

    got = new_session(data).run(None, {"input_ids": ids, "attention_mask": mask})[0]
    real = mask.astype(bool)
    a, b = got[real], reference[real]
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)
    bound = 0.9 if quantize else 0.9999
    lowest = float(cosine.min()) if len(cosine) else 1.0
    if lowest < bound:
        raise BioELError(Errors.E257.format(cosine=lowest, bound=bound,
                                            quantize=quantize or "float32"))
    return lowest


def convert_pipeline(nlp, quantize: Optional[str] = "int8", threads: int = 0,
                     source: str = "the pipeline", stride: Optional[int] = None
                     ) -> Dict[str, Dict[str, Any]]:
    """Swap every `spacy-bioel.TransformerTokens.v1` layer of `nlp`'s components
    for `spacy-bioel.OnnxTransformerTokens.v1` serving its export (needs PyTorch
    and onnx). `stride`: pieces between windows at prediction (None: the trained
    layer's; the shipped NER reads 128 without overlap, chosen on dev).
    RETURNS {component: the new layer's config block}: what `onnx_config` writes
    into the saved config (E256 names `source` when there is none)."""
    blocks: Dict[str, Dict[str, Any]] = {}
    for name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if not isinstance(model, Model):
            continue
        for node in [n for n in model.walk() if n.name == TORCH_LAYER]:
            window = node.attrs["window"]
            step = node.attrs["stride"] if stride is None else as_int("stride", stride, 1, window)
            graph = export_pieces_graph(node, quantize)
            width = node.get_dim("nO")
            block = {"@architectures": ONNX_ARCHITECTURE, "width": width,
                     "window": window, "stride": step, "threads": threads}
            onnx_layer = build_onnx_transformer_tokens(width, window, step, threads)
            onnx_layer.shims[0].load(graph, node.attrs["pieces"], {
                "encoder": node.attrs.get("encoder"), "quantize": quantize, "hidden": width,
                "window": window, "stride": step, "trained_stride": node.attrs["stride"]})
            model.replace_node(node, onnx_layer)
            blocks[name] = block
            logger.info("%s: the encoder exported to ONNX (%s, %.1f MB)", name,
                        quantize or "float32", len(graph) / 1e6)
    if not blocks:
        raise BioELError(Errors.E256.format(path=source, names=nlp.pipe_names))
    return blocks


def onnx_config(config: Dict[str, Any], blocks: Dict[str, Dict[str, Any]]) -> int:
    """Replace, in place, each converted component's TransformerTokens block of a
    pipeline's config (as read from its config.cfg) by its ONNX block; RETURNS
    how many were replaced."""
    def swap(node: Any, block: Dict[str, Any]) -> int:
        if not isinstance(node, dict):
            return 0
        count = 0
        for key, value in list(node.items()):
            if isinstance(value, dict) and value.get("@architectures") == TORCH_ARCHITECTURE:
                node[key] = dict(block)
                count += 1
            else:
                count += swap(value, block)
        return count

    return sum(swap(config["components"][name], block) for name, block in blocks.items())


__all__ = ["OnnxPiecesShim", "build_onnx_transformer_tokens", "convert_pipeline",
           "encode_tokens", "export_pieces_graph", "check_pieces", "onnx_config",
           "CONTEXT_LAYERS", "ONNX_ARCHITECTURE", "TORCH_ARCHITECTURE"]

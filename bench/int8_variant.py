"""The mention tower's int8 export with one side narrowed to 7 bits (issue 74, not
adopted): on AVX2 without VNNI, ONNX Runtime's uint8 x int8 kernel adds two
products in a saturating int16, and 2 x 255 x 127 does not fit. Narrowing one
side makes every pair sum fit, so that kernel is exact as it is (no uint8
weights, `spacy_bioel.encoders.int8_exact`):

- `w7`: the MatMul weights in [-64, 64] (ONNX Runtime's `reduce_range`):
  2 x 255 x 64 = 32,640;
- `a7`: the activations per row in [-64, 64] with zero point 64, so the uint8
  side is in [0, 128]: 2 x 128 x 127 = 32,512.

`init_pipeline(variant, ...)` builds a pipeline as `python -m spacy_bioel
init-pipeline` does, with the export so patched (its names are encoded by the
PyTorch concept tower, as the other pipelines of the comparison); `evaluate`
then reads it on dev (bench/project.yml, `int8-variants-dev`).
"""
from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List

import numpy as np

VARIANTS = ("w7", "a7")


def narrowed(data: bytes, variant: str, embeddings: bool, quantize_int8) -> bytes:
    """`quantize_int8(data, embeddings)` (`onnx_export.quantize_int8`) with
    `variant`'s side in 7 bits."""
    import onnx
    from onnx import numpy_helper

    if variant == "w7":  # the same dynamic quantisation, weights in [-64, 64]
        from onnxruntime.quantization import QuantType, quantize_dynamic

        from spacy_bioel.encoders.onnx_export import scale_rows

        with tempfile.TemporaryDirectory() as tmp:
            source, target = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
            source.write_bytes(data)
            quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True,
                             reduce_range=True,
                             op_types_to_quantize=["MatMul", "Gather"] if embeddings else ["MatMul"])
            return scale_rows(target.read_bytes())
    model = onnx.load_from_string(quantize_int8(data, embeddings))  # a7: scale_rows' constants
    values = {"bioel_row_127": np.array(64.0, np.float32), "bioel_row_shift": np.array(64.0, np.float32),
              "bioel_row_zero": np.array(64, np.uint8)}  # max |x| / 64, shifted by 64
    for tensor in model.graph.initializer:
        if tensor.name in values:
            tensor.CopyFrom(numpy_helper.from_array(values[tensor.name], tensor.name))
    return model.SerializeToString()


@contextmanager
def patched(variant: str) -> Iterator[None]:
    """Exports in this block quantise as `variant` does."""
    from spacy_bioel.encoders import onnx_export

    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
    original = onnx_export.quantize_int8
    onnx_export.quantize_int8 = lambda data, embeddings=False: narrowed(data, variant, embeddings, original)
    try:
        yield
    finally:
        onnx_export.quantize_int8 = original


def init_pipeline(variant: str, config: Path, output: Path, overrides: Dict[str, str]) -> None:
    """`init-pipeline CONFIG OUTPUT --paths.x y` with `variant`'s export."""
    from spacy.training.initialize import init_nlp
    from spacy.util import load_config

    with patched(variant):
        nlp = init_nlp(load_config(config, overrides=overrides, interpolate=False))
        output.parent.mkdir(parents=True, exist_ok=True)
        nlp.to_disk(output)


__all__: List[str] = ["VARIANTS", "narrowed", "patched", "init_pipeline"]

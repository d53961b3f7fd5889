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
`export_variant(variant, ...)` exports a trained pipeline's mention tower again
(`w8`: as the package does), everything else as saved, and `seeds_summary`
pairs the variants' dev scores seed by seed (`int8-variants-trained`).
"""
from __future__ import annotations

import json
import tempfile
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence

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


EXPORTS = ("w8",) + VARIANTS  # w8: the package's own export


def export_variant(variant: str, pipeline: Path, output: Path) -> int:
    """Save the trained `pipeline` to `output` with each linker's mention tower
    exported again as `variant` (`w8`: as the package exports it, through the
    same path): the name index, the kNN datastore (encoded by the PyTorch
    towers) and the weights are saved as they are. RETURNS the linkers exported."""
    import spacy
    from spacy_bioel.pipeline.linker import BioELLinker

    if variant not in EXPORTS:
        raise SystemExit(f"unknown variant {variant!r}: one of {', '.join(EXPORTS)}")
    nlp = spacy.load(pipeline)
    linkers = [pipe for _, pipe in nlp.pipeline if isinstance(pipe, BioELLinker)]
    if not linkers or any(getattr(pipe.runtime, "name", "") != "onnx" for pipe in linkers):
        raise SystemExit(f"{pipeline}: no bioel_linker served by the ONNX runtime to export")
    for pipe in linkers:
        pipe.require_model(f"exporting the mention tower as {variant}")  # a deferred module
        pipe.runtime.invalidate()  # exported again when saved
    output.parent.mkdir(parents=True, exist_ok=True)
    with nullcontext() if variant == "w8" else patched(variant):
        nlp.to_disk(output)
    return len(linkers)


def seeds_summary(scores: Dict[int, Dict[str, Dict[str, Any]]], baseline: str = "w8"
                  ) -> Dict[str, Any]:
    """{seed: {variant: evaluate's report}} -> each variant's dev Acc@1 and
    kb_id_ accuracy per seed, their mean and standard deviation (sample, over
    seeds) and each variant minus `baseline`, paired by seed (`bench.seeds.summarise`),
    in percent."""
    from .seeds import summarise

    variants = sorted({v for row in scores.values() for v in row}, key=lambda v: (v != baseline, v))
    seeds = sorted(scores)
    missing = [(seed, v) for seed in seeds for v in variants if v not in scores[seed]]
    if missing:
        raise SystemExit(f"no report for (seed, variant) {missing}")
    metrics = tuple((name, (name,)) for name in ("acc@1", "kb_id_acc"))
    rows = {row["system"]: row for row in summarise(
        {v: {str(seed): scores[seed][v] for seed in seeds} for v in variants}, baseline, metrics)}

    def percent(stat: Dict[str, Any]) -> Dict[str, float]:
        return {"mean": 100 * stat["mean"], "std": 100 * stat["std"] if stat["std"] is not None else 0.0}

    out: Dict[str, Any] = {"seeds": seeds, "baseline": baseline, "variants": {}}
    for variant in variants:
        row: Dict[str, Any] = {}
        for metric, _ in metrics:
            paired = rows[variant].get(f"{metric} diff", {"mean": 0.0, "std": None})  # the baseline: 0
            row[metric] = {"per_seed": [100 * float(scores[seed][variant][metric]) for seed in seeds],
                           **percent(rows[variant][metric]), "paired": percent(paired)}
        row["n"] = [int(scores[seed][variant]["n"]) for seed in seeds]
        out["variants"][variant] = row
    return out


def seeds_markdown(summary: Dict[str, Any], title: str) -> str:
    """The table of `seeds_summary`."""
    seeds = summary["seeds"]
    head = " | ".join(f"seed {s}" for s in seeds)
    lines = [f"# {title}", "",
             f"| tower | {head} | mean ± std | paired against {summary['baseline']} | kb_id_ accuracy, mean ± std |",
             "|---|" + "---:|" * (len(seeds) + 3)]
    for variant, row in summary["variants"].items():
        acc, kb = row["acc@1"], row["kb_id_acc"]
        paired = "-" if variant == summary["baseline"] else \
            f"{acc['paired']['mean']:+.2f} ± {acc['paired']['std']:.2f}"
        lines.append(f"| {variant} | " + " | ".join(f"{v:.2f}" for v in acc["per_seed"]) +
                     f" | {acc['mean']:.2f} ± {acc['std']:.2f} | {paired} | {kb['mean']:.2f} ± {kb['std']:.2f} |")
    lines += ["", f"Dev Acc@1 (%) of {summary['variants'][summary['baseline']]['n'][0]} mentions; "
              "each seed's pipeline trained once and its mention tower exported each way."]
    return "\n".join(lines) + "\n"


def read_seed_reports(folder: Path, corpus: str, seeds: Sequence[int], variants: Sequence[str]
                      ) -> Dict[int, Dict[str, Dict[str, Any]]]:
    """{seed: {variant: report}} from `folder`/{corpus}_s{seed}_dev_{variant}.json."""
    return {seed: {variant: json.loads((folder / f"{corpus}_s{seed}_dev_{variant}.json")
                                       .read_text(encoding="utf-8")) for variant in variants}
            for seed in seeds}


__all__: List[str] = ["VARIANTS", "EXPORTS", "narrowed", "patched", "init_pipeline", "export_variant",
                      "seeds_summary", "seeds_markdown", "read_seed_reports"]

"""Mention towers compared on the same texts (issue 46): each pipeline's runtime
encodes every distinct gold mention text of the data as it links (its own
calls), against a reference pipeline's runtime (e.g. the same weights restaged
with `spacy-bioel.TorchRuntime.v1`): cosine to the reference, texts a second
(pipelines alternating, best of `repeats`), and the largest change of an
embedding when the texts come in another order (0 when a text's embedding does
not depend on the texts beside it).

    python -m bench tower-probe DATA.spacy --reference PIPE \\
        --pipeline row-scaled=PIPE --pipeline call-scaled=PIPE2 --output OUT.json
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from .scan_probe import mention_texts


def encode(linker: Any, texts: List[str]) -> np.ndarray:
    """The texts' embeddings as the linker encodes mentions to link (`embed`)."""
    return np.asarray(linker.embed(texts, "mention"), dtype=np.float32)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)


def probe(data: Path, reference: Path, pipelines: Dict[str, Path], repeats: int = 3,
          seed: int = 0) -> Dict[str, Any]:
    """RETURNS: per pipeline, cosine to the reference (mean, least), texts a
    second and the largest change of an embedding in a shuffled order."""
    from spacy_bioel.pipeline.loading import load_pipeline

    ref_nlp = load_pipeline(reference)
    texts = mention_texts(ref_nlp, data)
    want = encode(ref_nlp.get_pipe("bioel_linker"), texts)
    linkers = {label: load_pipeline(path).get_pipe("bioel_linker") for label, path in pipelines.items()}
    for linker in linkers.values():
        encode(linker, texts[:1])  # sessions opened, graphs exported where needed
    seconds: Dict[str, List[float]] = {label: [] for label in linkers}
    got: Dict[str, np.ndarray] = {}
    for _ in range(repeats):
        for label, linker in linkers.items():
            start = time.perf_counter()
            got[label] = encode(linker, texts)
            seconds[label].append(round(time.perf_counter() - start, 3))
    order = np.random.default_rng(seed).permutation(len(texts))
    result: Dict[str, Any] = {"data": str(data), "reference": str(reference), "texts": len(texts),
                              "repeats": repeats, "pipelines": {}}
    for label, linker in linkers.items():
        shuffled = encode(linker, [texts[i] for i in order])[np.argsort(order)]
        close = cosine(got[label], want)
        result["pipelines"][label] = {
            "pipeline": str(pipelines[label]), "encode_s": seconds[label],
            "texts_per_s": round(len(texts) / min(seconds[label]), 1),
            "cosine_to_reference_mean": float(close.mean()), "cosine_to_reference_min": float(close.min()),
            "shuffled_max_change": float(np.abs(shuffled - got[label]).max())}
    return result


def markdown(result: Dict[str, Any]) -> str:
    rows = ["| pipeline | texts/s (best) | cosine to the reference, mean (least) | largest change, shuffled |",
            "|---|---:|---:|---:|"]
    for label, row in result["pipelines"].items():
        rows.append(f"| {label} | {row['texts_per_s']:,.1f} | {row['cosine_to_reference_mean']:.4f} "
                    f"({row['cosine_to_reference_min']:.4f}) | {row['shuffled_max_change']:.1e} |")
    return ("\n".join(rows) + f"\n\n{result['texts']:,} distinct mention texts of {result['data']}; "
            f"reference: {result['reference']}; best of {result['repeats']} alternating passes.\n")

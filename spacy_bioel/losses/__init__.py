"""Training losses, one per module, each with its paper and equation.

Every loss is called as `loss(mentions, positives, negatives, concept_ids, groups)`:
(batch, dim) mention and gold-name embeddings, (batch, p, dim) sampled negative
names or None, (batch,) gold concept ids and (batch,) document indices.
`MultiSimilarityLoss` (SapBERT pre-training, `pretrain-encoder`) instead takes
one set of name embeddings and their concept labels. The classes import torch;
they are loaded on first access, so that a pipeline that only predicts (e.g.
served by ONNX Runtime) never imports it.
"""
import importlib
from typing import Any

_MODULES = {"InfoNCELoss": ".info_nce", "ProxyLoss": ".proxy", "TripletLoss": ".triplet",
            "PrototypeTripletLoss": ".triplet", "MultiSimilarityLoss": ".multi_similarity",
            "mine_hard_pairs": ".multi_similarity"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["InfoNCELoss", "ProxyLoss", "TripletLoss", "PrototypeTripletLoss", "MultiSimilarityLoss",
           "mine_hard_pairs"]

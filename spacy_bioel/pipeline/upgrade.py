"""Configs and pipelines made before linking stages: detect their flat
`bioel_linker` settings and map them onto the stage blocks."""
from __future__ import annotations

from typing import Any, Dict, List

from thinc.api import Config

FLAT_KEYS = ("n_hard_negatives", "negative_sampling", "hard_fraction", "fgsm_epsilon",
             "fgsm_weight", "index_type", "index_backend", "use_knn", "knn_k", "knn_lambda",
             "knn_beta1", "knn_beta2", "nil_threshold", "embedding_cache")


def flat_keys(config: Config) -> Dict[str, List[str]]:
    """RETURNS (Dict[str, List[str]]): per bioel_linker component, its pre-stage keys."""
    out = {}
    for name, block in (config.get("components") or {}).items():
        if isinstance(block, dict) and block.get("factory") == "bioel_linker":
            old = [key for key in FLAT_KEYS if key in block]
            if old:
                out[name] = old
    return out


def upgrade_block(block: Dict[str, Any]) -> Dict[str, Any]:
    """One component block, flat settings replaced by stage blocks (same behaviour:
    the NIL stage stays `ThresholdNIL.v1`, 1 - similarity)."""
    old = {key: block.pop(key) for key in FLAT_KEYS if key in block}
    block["index"] = {"@misc": "spacy-bioel.NameIndex.v1",
                      "index_type": old.get("index_type", "flat"),
                      "backend": old.get("index_backend", "auto"),
                      "embedding_cache": old.get("embedding_cache")}
    block.setdefault("candidates", {"@misc": "spacy-bioel.DenseCandidates.v1"})
    block.setdefault("type_filter", None)
    block["ranker"] = {"@misc": "spacy-bioel.KNNRanker.v1", "use_knn": old.get("use_knn", True),
                       "knn_k": old.get("knn_k", 4), "knn_lambda": old.get("knn_lambda", 0.1),
                       "beta1": old.get("knn_beta1", 0.05), "beta2": old.get("knn_beta2", 1.0)}
    block["nil"] = {"@misc": "spacy-bioel.ThresholdNIL.v1", "threshold": old.get("nil_threshold")}
    sampling = old.get("negative_sampling", "hard")
    block["negatives"] = {"@misc": f"spacy-bioel.{sampling.capitalize()}Negatives.v1",
                          "n": old.get("n_hard_negatives", 4)}
    if sampling == "mixed":
        block["negatives"]["hard_fraction"] = old.get("hard_fraction", 0.5)
    epsilon = old.get("fgsm_epsilon", 0.0)
    block["fgsm"] = {"@misc": "spacy-bioel.FGSM.v1", "epsilon": epsilon,
                     "weight": old.get("fgsm_weight", 1.0)} if epsilon else None
    return block


def upgrade_config(config: Config) -> Config:
    """RETURNS (Config): a copy with every bioel_linker block upgraded."""
    config = Config(config).copy()
    for name in flat_keys(config):
        upgrade_block(config["components"][name])
    return config


__all__ = ["flat_keys", "upgrade_block", "upgrade_config", "FLAT_KEYS"]

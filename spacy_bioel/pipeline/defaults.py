"""The one default `bioel_linker`, defined once: what `nlp.add_pipe("bioel_linker")`
builds, what `configs/linker_cpu.cfg` writes out block by block (a test holds the
two equal), and what the default pipeline of `link` / `default_pipeline()` is
built with. It is the fast, light default measured in docs/results/speed.md
(issue 45):

- the embedded MiniLM in two towers, the concept tower frozen (the KB is encoded
  once and never goes stale; saved as a reference to the base model);
- the mention tower served by ONNX Runtime with int8 weights and embedding table
  (`OnnxRuntime.v1`, `quantize = "int8-all"`), exported from PyTorch on first use
  and saved with the pipeline, which then predicts without building PyTorch;
- every KB name scored by an int8 scan whose scores are final (`NameIndex.v2`,
  `index_type = "int8"`, float16 vectors kept for a GPU), the base model's name
  embeddings cached per KB (`embedding_cache = "auto"`);
- a mention that is exactly one concept's KB name linked without the encoder
  (`ExactShortcut.v1`, unless the training mentions link it elsewhere);
- 16 candidates retrieved, ranked and written per mention;
- InfoNCE with 4 dynamic hard negatives to train, the kNN datastore to rank, the
  shipped NIL threshold.
"""
from __future__ import annotations

import copy
from typing import Any, Dict

from ..nil.stages import DEFAULT_THRESHOLD
from .extensions import DEFAULT_ATTRS

ENCODER = "embedded:all-MiniLM-L6-v2"

MODEL: Dict[str, Any] = {
    "@architectures": "spacy-bioel.BiEncoder.v1",
    "encoder": ENCODER,
    "pooling": "mean",
    "similarity": "cosine",
    "shared_towers": False,
    "train_concept_tower": False,
    "max_length": 25,
    "mixed_precision": False,
    "cpu_length_chunks": 4,
}

STAGES: Dict[str, Any] = {
    "loss": {"@misc": "spacy-bioel.InfoNCELoss.v1", "temperature": 0.05, "in_batch": True},
    "index": {"@misc": "spacy-bioel.NameIndex.v2", "index_type": "int8", "backend": "auto",
              "embedding_cache": "auto", "vectors_dtype": "float16"},
    "candidates": {"@misc": "spacy-bioel.DenseCandidates.v1"},
    "type_filter": None,
    "ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "use_knn": True, "knn_k": 4,
               "knn_lambda": 0.1, "beta1": 0.05, "beta2": 1.0},
    "nil": {"@misc": "spacy-bioel.CalibratedNIL.v1", "threshold": DEFAULT_THRESHOLD,
            "calibration": None},
    "negatives": {"@misc": "spacy-bioel.HardNegatives.v1", "n": 4},
    "fgsm": None,
    "biofeg": None,
    "shortcut": {"@misc": "spacy-bioel.ExactShortcut.v1", "defer_to_training": True},
    "runtime": {"@misc": "spacy-bioel.OnnxRuntime.v1", "quantize": "int8-all", "threads": 0,
                "batch_size": 32},
}

SETTINGS: Dict[str, Any] = {
    "top_k": 16,
    "retrieve_k": 16,
    "context_window": 0,
    "abbreviations": True,
    "nil_without_alnum": True,
    "nil_undefined_abbreviations": True,
    "encode_batch_size": 256,
    "cache_size": 10000,
    "spans_key": None,
    "id_space": None,
    "xrefs_attr": "kb_xrefs",
}


def linker_config() -> Dict[str, Any]:
    """A fresh copy of the whole default config of a `bioel_linker` (the factory's
    `default_config`): model, stages, settings and extension names."""
    from thinc.api import Config

    model = Config({"model": copy.deepcopy(MODEL)})["model"]
    return {"model": model, **copy.deepcopy(STAGES), **copy.deepcopy(SETTINGS),
            **copy.deepcopy(DEFAULT_ATTRS)}


__all__ = ["ENCODER", "MODEL", "SETTINGS", "STAGES", "linker_config"]

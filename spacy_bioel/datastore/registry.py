"""Registered ranker stage (entry point in `spacy_misc`)."""
from __future__ import annotations

from spacy.util import registry


@registry.misc("spacy-bioel.KNNRanker.v1")
def create_knn_ranker(use_knn: bool = True, knn_k: int = 4, knn_lambda: float = 0.1,
                      beta1: float = 0.05, beta2: float = 1.0):
    """Bi-encoder candidate scores interpolated with the kNN datastore (kNN-BioEL
    eqs. 4-6); `python -m spacy_bioel tune` picks the values on dev."""
    from .ranker import KNNRanker
    return KNNRanker(use_knn, knn_k, knn_lambda, beta1, beta2)

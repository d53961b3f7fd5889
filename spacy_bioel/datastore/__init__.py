"""kNN datastore of training-mention embeddings (kNN-BioEL)."""
from .knn import DatastoreKNN, interpolate, knn_distribution, model_distribution

__all__ = ["DatastoreKNN", "interpolate", "knn_distribution", "model_distribution"]

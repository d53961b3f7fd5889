"""kNN datastore of training-mention embeddings (kNN-BioEL)."""
from .interpolation import interpolate, knn_distribution, model_distribution
from .knn import DatastoreKNN

__all__ = ["DatastoreKNN", "interpolate", "knn_distribution", "model_distribution"]

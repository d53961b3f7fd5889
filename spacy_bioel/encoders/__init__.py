"""Encoders: the PyTorch bi-encoder (`torch_biencoder`) and its Thinc wrapper
(`thinc_biencoder`). Importing this package does not import torch eagerly."""

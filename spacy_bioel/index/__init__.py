"""Candidate stores: exact dictionary match and sparse TF-IDF (dense FAISS later)."""
from .names import NameTable, top_k

__all__ = ["NameTable", "top_k"]

"""Batch tokenization straight through the `tokenizers` library.

A Hugging Face fast tokenizer is a thin Python layer over a `tokenizers.Tokenizer`
(the Rust backend that `tokenizer.json` holds). Calling the backend directly
gives the same ids for padded, truncated batches at a fraction of the cost
(transformers 5 spends most of a short batch's time in Python), and needs no
transformers import: an ONNX-exported linker loads with `tokenizers` alone.

`cache_key` is the text after the tokenizer's own normaliser (lowercasing,
accent stripping, ... for BERT): two texts with the same key get the same
ids, hence the same embedding, so a cache keyed by it is exact for the model.

Example:
    >>> batch = BatchTokenizer.from_file("encoder/tokenizer.json", max_length=25)
    >>> input_ids, attention_mask = batch(["colon cancer", "FAP"])
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Sequence, Tuple, Union

import numpy as np


class BatchTokenizer:
    """Padded, truncated batches of ids from a `tokenizers.Tokenizer`.

    backend (tokenizers.Tokenizer): The Rust tokenizer (copied, then configured).
    max_length (int): Tokens per text, special tokens included.
    copy (bool): False: configure `backend` itself (one nobody else holds, e.g.
        just read from a file: a copy of a vocabulary holds megabytes).
    """

    def __init__(self, backend, max_length: int, copy: bool = True) -> None:
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_str(backend.to_str()) if copy else backend
        self.max_length = int(max_length)
        padding = backend.padding or {}
        pad_id = padding.get("pad_id", 0)
        pad_token = padding.get("pad_token", "[PAD]")
        if self.backend.token_to_id(pad_token) is None:
            pad_token = next((t for t in ("[PAD]", "<pad>") if self.backend.token_to_id(t) is not None),
                             pad_token)
            pad_id = self.backend.token_to_id(pad_token) or 0
        self.backend.enable_truncation(max_length=self.max_length)
        self.backend.enable_padding(pad_id=pad_id, pad_token=pad_token)
        self._normalizer = self.backend.normalizer

    @classmethod
    def from_file(cls, path: Union[str, Path], max_length: int) -> "BatchTokenizer":
        """From a `tokenizer.json` (written by a fast tokenizer's save_pretrained)."""
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)), max_length, copy=False)

    @classmethod
    def from_hf(cls, tokenizer, max_length: int) -> "BatchTokenizer":
        """From a transformers fast tokenizer (its `backend_tokenizer`)."""
        return cls(tokenizer.backend_tokenizer, max_length)

    def __call__(self, texts: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """RETURNS: (input_ids, attention_mask), int64 arrays of (len(texts), longest)."""
        encodings = self.backend.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask

    def pairs(self, firsts: Sequence[str], seconds: Sequence[str]
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Encode text pairs as one sequence each (`[CLS] a [SEP] b [SEP]` for
        BERT), the longer of the two truncated first to fit `max_length`.
        RETURNS: (input_ids, attention_mask, token_type_ids), int64 arrays."""
        encodings = self.backend.encode_batch(list(zip(firsts, seconds)))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        return ids, mask, types

    def cache_keys(self, texts: Sequence[str]) -> List[str]:
        """The texts as the model sees them (after the normaliser)."""
        if self._normalizer is None:
            return list(texts)
        normalize = self._normalizer.normalize_str
        return [normalize(text) for text in texts]


def batch_tokenizer(tokenizer, max_length: int):
    """A `BatchTokenizer` for a transformers tokenizer, or None for a slow one
    (no Rust backend: callers keep the transformers call)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return BatchTokenizer(backend, max_length) if backend is not None else None


__all__ = ["BatchTokenizer", "batch_tokenizer"]

"""Word pieces of spaCy tokens in overlapping windows: what an encoder that reads
each document in context is fed (`spacy-bioel.TransformerTokens.v1` through
PyTorch, `spacy-bioel.OnnxTransformerTokens.v1` through ONNX Runtime; both cut
the same windows from the same pieces, so a pipeline converted from one to the
other reads the same inputs).

The pieces come straight from the `tokenizers` library (the Rust tokenizer a
transformers fast tokenizer wraps, fed the tokens as pre-split words, as
`is_split_into_words` does): no transformers import, so the ONNX path runs in
the base install.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc


def windows(n_pieces: int, window: int, stride: int) -> List[Tuple[int, int]]:
    """(start, end) piece ranges of at most `window` pieces, `stride` apart, the
    last one ending at `n_pieces`; every piece is in at least one range."""
    if n_pieces <= window:
        return [(0, n_pieces)]
    starts = list(range(0, n_pieces - window, stride)) + [n_pieces - window]
    return [(start, start + window) for start in starts]


class WordPieces:
    """Splits a document's tokens into word pieces, each knowing its token.

    backend (tokenizers.Tokenizer): The Rust tokenizer (copied: its truncation
        and padding are turned off, the windows cut the pieces instead).
    cls_id, sep_id, pad_id (int): The ids around and after each window.
    """

    def __init__(self, backend, cls_id: int, sep_id: int, pad_id: int) -> None:
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_str(backend.to_str())
        self.backend.no_truncation()
        self.backend.no_padding()
        self.cls_id, self.sep_id, self.pad_id = int(cls_id), int(sep_id), int(pad_id)

    @classmethod
    def from_hf(cls, tokenizer) -> "WordPieces":
        """From a transformers fast tokenizer (its `backend_tokenizer`)."""
        return cls(tokenizer.backend_tokenizer, tokenizer.cls_token_id, tokenizer.sep_token_id,
                   tokenizer.pad_token_id or 0)

    def to_dict(self) -> dict:
        """What `from_dict` rebuilds it from (the tokenizer as its JSON)."""
        return {"tokenizer": self.backend.to_str(), "cls_id": self.cls_id,
                "sep_id": self.sep_id, "pad_id": self.pad_id}

    @classmethod
    def from_dict(cls, data: dict) -> "WordPieces":
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_str(data["tokenizer"]), data["cls_id"], data["sep_id"],
                   data["pad_id"])

    def __call__(self, words: Sequence[str]) -> Tuple[List[int], List[int]]:
        """RETURNS: (piece ids, the index of each piece's word; -1 for none)."""
        if not words:
            return [], []
        encoding = self.backend.encode(list(words), is_pretokenized=True, add_special_tokens=False)
        owners = [w if w is not None else -1 for w in encoding.word_ids]
        return list(encoding.ids), owners


def piece_batch(pieces: WordPieces, docs: Sequence[Doc], window: int, stride: int
                ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """input_ids and attention_mask (windows, longest window + 2) and `index`,
    the row of each position's token in the concatenated tokens of `docs` (-1 for
    [CLS], [SEP] and padding). A document is split into pieces whole, then cut
    into `windows`."""
    ids: List[List[int]] = []
    rows: List[List[int]] = []
    offset = 0
    for doc in docs:
        piece_ids, owners = pieces([token.text for token in doc])
        owners = [offset + w if w >= 0 else -1 for w in owners]
        for start, end in windows(len(piece_ids), window, stride):
            ids.append([pieces.cls_id] + piece_ids[start:end] + [pieces.sep_id])
            rows.append([-1] + owners[start:end] + [-1])
        offset += len(doc)
    width = max((len(r) for r in ids), default=2)
    input_ids = np.full((len(ids), width), pieces.pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    index = np.full((len(ids), width), -1, dtype=np.int64)
    for i, (piece_ids, owners) in enumerate(zip(ids, rows)):
        input_ids[i, :len(piece_ids)] = piece_ids
        mask[i, :len(piece_ids)] = 1
        index[i, :len(owners)] = owners
    return input_ids, mask, index


__all__ = ["WordPieces", "piece_batch", "windows"]

"""The kNN datastore of training mentions (kNN-BioEL, Sec. 2.3): keys are
training-mention embeddings f(m_i), values their gold concept ids, searched by
cosine similarity; `interpolation` mixes its neighbours with the model's
candidates (eqs. 4-6).

Inputs:
    DatastoreKNN.add(keys (n, dim) float32 L2-normalised, values List[str],
                     groups (n,) int64 document keys, optional)
    DatastoreKNN.search(queries (batch, dim), k, exclude (batch,) document keys or
                        None) -> List[List[(concept_id, sim)]]

Example:
    >>> store = DatastoreKNN(dim=384); store.add(keys, ["D1", "D2"])
    >>> interpolate(model_candidates, store.search(q, k=4)[0], 0.1, 0.05, 1.0)
"""
from __future__ import annotations

import hashlib
import io
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import BioELError, Errors
from ..index.names import top_k
from .interpolation import Scored

# score cells per block of queries (`search`): the matrix, its negation and
# argpartition's int64 indices take 16 bytes a cell; a block bounds the peak memory
# that all queries at once would take (docs/results/speed.md)
SCORE_CELLS = 1 << 18


class DatastoreKNN:
    """Keys: training-mention embeddings; values: their gold concept ids.

    Exact inner-product search (cosine for normalised keys): one BLAS matmul
    per batch (a corpus' training mentions are thousands, not millions). Keys
    that tie exactly (the same text in two training mentions, linked to two
    concepts) are taken in training order, the earlier first, so results never
    depend on a search library's internal order.

    Groups (optional): the document key of every entry (`document_key`). A
    query given its own document's key in `exclude` does not see that
    document's entries (held-out kNN: a training document is linked as if it
    were unseen, as the reranker's training candidates need).
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        # each distinct key once (first-seen order) and every entry's row there: a
        # corpus repeats its mentions, so the keys and the matmul shrink; scores are
        # the same
        self._set(np.zeros((0, dim), dtype=np.float32), np.zeros(0, dtype=np.int64), [], None)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def keys(self) -> np.ndarray:
        """(n, dim) float32: every entry's key (a new array)."""
        return self._unique[self._rows]

    def add(self, keys: np.ndarray, values: Sequence[str],
            groups: Optional[Sequence[int]] = None) -> None:
        """Replace the datastore's content (groups: one document key per entry, or None)."""
        keys = np.ascontiguousarray(keys, dtype=np.float32)  # (n, dim)
        if not len(keys):
            keys = np.zeros((0, self.dim), dtype=np.float32)
        self._check(len(keys), keys.shape[1] if keys.ndim == 2 else -1, values, groups)
        self._set(*distinct_rows(keys), values, groups)

    def _check(self, n_keys: int, width: int, values: Sequence[str],
               groups: Optional[Sequence[int]]) -> None:
        """E155 unless there is one key of this datastore's dim, one value and (if
        any) one group per entry."""
        if n_keys != len(values) or width != self.dim or \
                (groups is not None and len(groups) != len(values)):
            raise BioELError(Errors.E155.format(
                n_keys=n_keys, n_values=len(values),
                n_groups="no" if groups is None else len(groups)))

    def _set(self, unique: np.ndarray, rows: np.ndarray, values: Sequence[str],
             groups: Optional[Sequence[int]]) -> None:
        self._unique, self._rows, self.values = unique, rows, list(values)
        self.groups = None if groups is None else np.asarray(groups, dtype=np.int64)
        self._key_values: List[List[str]] = [[] for _ in range(len(unique))]
        for value, row in zip(self.values, rows.tolist()):  # each key's values, training order
            self._key_values[row].append(value)

    def search(self, queries: np.ndarray, k: int,
               exclude: Optional[Sequence[Optional[int]]] = None) -> List[Scored]:
        """k nearest (value, similarity) per query; with `exclude`, query i does
        not see the entries of document key exclude[i] (None: sees all). Needs
        groups (E189 otherwise).

        RETURNS (List[List[Tuple[str, float]]]): per query, at most k neighbours.
        """
        k = min(k, len(self))
        if k < 1:
            return [[] for _ in range(len(queries))]
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if exclude is not None and any(key is not None for key in exclude) and self.groups is None:
            raise BioELError(Errors.E189)
        values, out = self.values, []
        rows = max(1, SCORE_CELLS // len(self))
        for first in range(0, len(queries), rows):  # blocks of queries: bounded score matrices
            distinct = queries[first:first + rows] @ self._unique.T  # (block, distinct keys)
            held = exclude[first:first + rows] if exclude is not None else [None] * len(distinct)
            found = self._nearest_distinct(distinct, k, held)
            each = [row for row, hits in enumerate(found) if hits is None]
            if each:  # scored entry by entry: a document left out, or an exact tie
                scores = distinct[each][:, self._rows]  # (rows, n)
                for at, row in enumerate(each):
                    if held[row] is not None:
                        scores[at, self.groups == held[row]] = -np.inf
                indices, sims = top_k(scores, k)  # ties by entry order
                for row, row_i, row_s in zip(each, indices, sims):
                    found[row] = [(values[i], s) for i, s in zip(row_i.tolist(), row_s.tolist())
                                  if s != -np.inf]
            out.extend(found)
        return out

    def _nearest_distinct(self, distinct: np.ndarray, k: int,
                          held: Sequence[Optional[int]]) -> List[Optional[Scored]]:
        """Each row's k nearest entries read off its distinct keys' scores: the best
        keys, each key's entries in training order (its entries share its score).
        None for a row that leaves a document out, or where two competing keys tie
        exactly (their entries would interleave): `search` scores those per entry."""
        found: List[Optional[Scored]] = [None] * len(distinct)
        open_rows = [row for row, key in enumerate(held) if key is None]
        if not open_rows:
            return found
        scored = distinct[open_rows]
        top, sims = top_k(scored, k)
        tied = ((scored >= sims[:, -1:]).sum(axis=1) > top.shape[1]) | \
            (sims[:, 1:] == sims[:, :-1]).any(axis=1)
        for row, keys, scores, tie in zip(open_rows, top.tolist(), sims.tolist(), tied):
            if tie:
                continue
            hits: Scored = []
            for key, score in zip(keys, scores):
                hits.extend((value, score) for value in self._key_values[key][:k - len(hits)])
                if len(hits) == k:
                    break
            found[row] = hits
        return found

    def to_bytes(self) -> bytes:
        import srsly
        buffer = io.BytesIO()
        np.save(buffer, self._unique)
        msg = {"dim": self.dim, "keys": buffer.getvalue(), "rows": self._rows.tolist(),
               "values": self.values}
        if self.groups is not None:
            msg["groups"] = self.groups.tolist()
        return srsly.msgpack_dumps(msg)

    @classmethod
    def from_bytes(cls, data: bytes) -> "DatastoreKNN":
        """A datastore saved by `to_bytes`: its distinct keys and each entry's row
        among them, or (saved by earlier versions) every entry's key. ValueError
        when the rows do not fit the keys."""
        import srsly
        msg = srsly.msgpack_loads(data)
        store = cls(msg["dim"])
        keys = np.load(io.BytesIO(msg["keys"]), allow_pickle=False)
        if "rows" not in msg:
            store.add(keys, msg["values"], msg.get("groups"))
            return store
        rows = np.asarray(msg["rows"], dtype=np.int64)
        if keys.ndim != 2 or (len(rows) and (rows.min() < 0 or rows.max() >= len(keys))):
            raise ValueError(f"entry rows outside the {len(keys)} keys")
        store._check(len(rows), keys.shape[1], msg["values"], msg.get("groups"))
        store._set(np.ascontiguousarray(keys, dtype=np.float32), rows, msg["values"],
                   msg.get("groups"))
        return store


def distinct_rows(keys: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """RETURNS: the distinct rows of (n, dim) `keys` in first-seen order, and
    each row's position among them ((n,) int64): `unique[rows]` equals `keys`.
    Rows are compared by their bytes, in a dict (faster than sorting them)."""
    keys = np.ascontiguousarray(keys)
    seen: Dict[bytes, int] = {}
    rows = np.fromiter((seen.setdefault(row.tobytes(), len(seen)) for row in keys),
                       dtype=np.int64, count=len(keys))
    first = np.unique(rows, return_index=True)[1]  # ids are numbered in first-seen order
    return np.ascontiguousarray(keys[first]), rows


# Doc.user_data flag: link this document with the kNN datastore's entries from
# it left out (set by `spacy-bioel.GoldEntsCorpus.v1` with held_out_knn = true)
HELD_OUT_KNN = "spacy_bioel.held_out_knn"


def held_out_key(doc) -> Optional[int]:
    """The document key whose datastore entries the mentions of `doc` (a spaCy
    Doc) must not see (`HELD_OUT_KNN` set), else None."""
    return document_key(doc.text) if doc.user_data.get(HELD_OUT_KNN) else None


def document_key(text: str) -> int:
    """A stable signed 64-bit key of a document's text (the datastore's groups)."""
    digest = hashlib.blake2b(text.encode("utf8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


__all__ = ["DatastoreKNN", "distinct_rows", "document_key", "held_out_key", "HELD_OUT_KNN"]

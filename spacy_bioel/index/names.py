"""The name table every candidate store indexes: (concept, name) rows grouped by
concept, built from a KB plus optional extra names (train/dev mention strings
under BioSyn's dictionary protocol)."""
from __future__ import annotations

import functools
import json
import zipfile
from array import array
from hashlib import blake2b
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import Warnings, warn
from ..files import replace_file
from ..kb.knowledge_base import KnowledgeBase
from ..kb.normalize import normalize_text


class PackedNames(Sequence):
    """A name table's names as one UTF-8 buffer, the names joined by newlines:
    name i is decoded from its bytes when read. 76,237 MEDIC names take 2.4 MB
    here against about 8 MB as Python strings, and loading a pipeline builds it
    name by name without holding every string (docs/results/speed.md).

    data (bytes): b"\\n".join of the names' UTF-8 bytes (what `joined_utf8` returns).
    starts (np.ndarray): (n + 1,) where each name starts; starts[n] is
        len(data) + 1 (a name ends one byte before the next one starts).
    """

    def __init__(self, data: bytes, starts: np.ndarray) -> None:
        self.data = data
        self.starts = starts

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, item):
        if isinstance(item, slice):
            return [self[i] for i in range(*item.indices(len(self)))]
        n = len(self)
        row = int(item) + n if int(item) < 0 else int(item)
        if not 0 <= row < n:
            raise IndexError("name index out of range")
        return self.data[self.starts[row]:self.starts[row + 1] - 1].decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        data, starts = self.data, self.starts.tolist()
        for start, end in zip(starts, starts[1:]):
            yield data[start:end - 1].decode("utf-8")


def joined_utf8(names: Sequence[str]) -> bytes:
    """RETURNS (bytes): "\\n".join(names).encode("utf-8") (a `PackedNames` holds it)."""
    if isinstance(names, PackedNames):
        return names.data
    return "\n".join(names).encode("utf-8")


class NameTable:
    """Names grouped by concept, so per-concept max aggregation is a `reduceat`.

    concept_ids (List[str]): Concepts in KB order (only those with names), then
        the concepts only extra names name.
    names (PackedNames): All names (a sequence of str); rows of one concept are
        contiguous: its KB names (`KnowledgeBase.keyed_names`), then its extra ones.
    owners (np.ndarray): (n_names,) concept index of each name.
    offsets (np.ndarray): (n_concepts,) first row of each concept.
    key_ids (np.ndarray): (n_names,) uint64 `key_id` of each name's
        `normalize_text` key (the exact-match lookup reads them instead of
        normalising the KB again; the key strings are not kept).
    """

    def __init__(self, kb: KnowledgeBase, extra_names: Iterable[Tuple[str, str]] = ()) -> None:
        extra: Dict[str, List[Tuple[str, str]]] = {}  # concept -> its extra (name, key) rows
        for concept_id, name in extra_names:
            key = normalize_text(name)
            if key:
                extra.setdefault(kb.resolve(concept_id) or concept_id, []).append((name, key))
        self.n_extra = 0
        self.concept_ids: List[str] = []
        counts: List[int] = []
        key_ids = array("Q")
        buffer, starts = bytearray(), array("q")  # the names, packed one at a time

        def add_concept(concept_id: str, rows: Sequence[Tuple[str, str, str]],
                        pairs: Sequence[Tuple[str, str]]) -> None:
            """Pack a concept's KB names (distinct keys) and its extra names."""
            names = [name for _, name, _ in rows]
            keys = [key for _, _, key in rows]
            if pairs:
                seen = set(keys)
                for name, key in pairs:
                    if key not in seen:  # an extra name whose key the concept has is left out
                        seen.add(key)
                        names.append(name)
                        keys.append(key)
                        self.n_extra += 1
            if not names:
                return
            for name in names:
                if starts:
                    buffer.extend(b"\n")
                starts.append(len(buffer))
                buffer.extend(name.encode("utf-8"))
            key_ids.extend(map(key_id, keys))
            self.concept_ids.append(concept_id)
            counts.append(len(names))

        for concept_id, group in groupby(kb.keyed_names(), key=itemgetter(0)):
            add_concept(concept_id, list(group), extra.pop(concept_id, ()))
        for concept_id, pairs in extra.items():  # concepts that only extra names name
            add_concept(concept_id, (), pairs)
        starts.append(len(buffer) + 1)
        self.names = PackedNames(bytes(buffer), np.array(starts, dtype=np.int64))
        self.key_ids = np.array(key_ids, dtype=np.uint64)
        self._finish(kb, np.array(counts, dtype=np.int64))

    def _finish(self, kb: KnowledgeBase, counts: np.ndarray) -> None:
        """Rows per concept (`counts`) -> owners and offsets; W007 for `kb`'s
        concepts no name of which is indexed."""
        indexed = set(self.concept_ids)
        unindexed = [cid for cid in kb.concept_ids if cid not in indexed]
        self.n_unindexed = len(unindexed)  # concepts whose every name is punctuation or blank
        if unindexed:
            warn(Warnings.W007.format(count=len(unindexed), kb=kb.name,
                                      examples=", ".join(unindexed[:3])))
        self.owners = np.repeat(np.arange(len(self.concept_ids)), counts)
        self.offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)

    def save(self, path: Union[str, Path], kb_digest: str) -> None:
        """Write the table to `path` (an .npz without pickles) for the KB file of
        SHA-256 `kb_digest`, so that loading the pipeline reads it instead of
        building it from the KB again (`load`: 0.28 of the 1.1 s of loading
        the MEDIC default on an AMD EPYC; docs/results/speed.md)."""
        counts = np.diff(np.r_[self.offsets, len(self.names)]).astype(np.int64)
        ids = "\n".join(self.concept_ids).encode("utf-8")
        meta = {"format": TABLE_FORMAT, "kb": kb_digest, "rules": rules_fingerprint(),
                "n_extra": self.n_extra}

        def write(target: Path) -> None:
            with open(target, "wb") as handle:
                np.savez(handle, names=np.frombuffer(self.names.data, dtype=np.uint8),
                         starts=self.names.starts, key_ids=self.key_ids, counts=counts,
                         concept_ids=np.frombuffer(ids, dtype=np.uint8),
                         meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8))
        replace_file(Path(path), write)

    @classmethod
    def load(cls, path: Union[str, Path], kb: KnowledgeBase, kb_digest: str) -> Optional["NameTable"]:
        """The table `save` wrote to `path` for `kb` (whose file's SHA-256 is
        `kb_digest`), where it was written for that KB by these normalisation
        rules (`rules_fingerprint`) and is whole; None otherwise (then the
        table is built from the KB, as before)."""
        try:
            with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as saved:
                arrays = {name: saved[name] for name in TABLE_ARRAYS}
            meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
            if meta.get("format") != TABLE_FORMAT or meta.get("kb") != kb_digest or \
                    meta.get("rules") != rules_fingerprint():
                return None
            names, starts, counts = arrays["names"].tobytes(), arrays["starts"], arrays["counts"]
            ids = arrays["concept_ids"].tobytes().decode("utf-8")
            concept_ids = ids.split("\n") if ids else []
            n = len(starts) - 1
            if starts.dtype != np.int64 or counts.dtype != np.int64 or \
                    arrays["key_ids"].dtype != np.uint64 or len(arrays["key_ids"]) != n or \
                    len(counts) != len(concept_ids) or int(counts.sum()) != n or \
                    (n and (starts[0] != 0 or starts[-1] != len(names) + 1 or
                            (np.diff(starts) < 1).any())):
                return None
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            return None  # absent, cut or not ours (UnicodeDecodeError is a ValueError)
        table = cls.__new__(cls)
        table.n_extra = int(meta.get("n_extra", 0))
        table.concept_ids = concept_ids
        table.names = PackedNames(names, starts)
        table.key_ids = arrays["key_ids"]
        table._finish(kb, counts)
        return table

    def __len__(self) -> int:
        return len(self.names)

    def end(self, concept: int) -> int:
        """RETURNS (int): one past the last name row of `concept`."""
        return int(self.offsets[concept + 1]) if concept + 1 < len(self.offsets) else len(self.names)

    def name_rows(self, concepts: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
        """The name rows of `concepts` and, for each row, the position of its
        concept in `concepts` (for a max per listed concept, see `best_per_listed`)."""
        counts = [self.end(c) - self.offsets[c] for c in concepts]
        rows = np.concatenate([np.arange(self.offsets[c], self.end(c)) for c in concepts])
        return rows, np.repeat(np.arange(len(concepts)), counts)

    def best_per_listed(self, concepts: Sequence[int], score_rows) -> List[float]:
        """The best name score of each listed concept; `score_rows(rows)` scores name rows."""
        if not len(concepts):
            return []
        rows, positions = self.name_rows(concepts)
        best = np.full(len(concepts), -np.inf, dtype=np.float32)
        np.maximum.at(best, positions, score_rows(rows))
        return best.tolist()

    @property
    def tie_rank(self) -> np.ndarray:
        """(n_concepts,) the order in which concepts win an exact score tie: fewer
        names first, then KB order. Under a model where a mention is one of its
        concept's names drawn uniformly, P(name | concept) = 1 / |names|, so a
        name shared by two concepts points to the one with fewer names (NCBI dev:
        6 of 6 tied mentions, as KB order; see docs/results/baselines.md)."""
        counts = np.diff(np.r_[self.offsets, len(self.names)])
        rank = np.empty(len(counts), dtype=np.int64)
        rank[np.lexsort((np.arange(len(counts)), counts))] = np.arange(len(counts))
        return rank

    def max_per_concept(self, scores: np.ndarray) -> np.ndarray:
        """(batch, n_names) -> (batch, n_concepts): the best name score per concept."""
        return np.maximum.reduceat(scores, self.offsets, axis=1)


def key_id(key: str) -> int:
    """RETURNS (int): a normalised name's 64-bit id (BLAKE2b of its UTF-8 bytes,
    8 bytes: the same in every process and on every platform, without spaCy,
    which the GPU check's environment lacks; about 0.5 us)."""
    return int.from_bytes(blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")


TABLE_FILE = "names_table.npz"  # in a saved linker's index folder (`NameTable.save`)
TABLE_FORMAT = 1
TABLE_ARRAYS = ("names", "starts", "key_ids", "counts", "concept_ids", "meta")
# strings whose keys and key ids change whenever the normalisation or key rules change
_RULE_PROBES = ("Crohn's  Disease", "type-2 diabetes_mellitus", "\u00c6sthetic \u00dcber", "\ufb01brosis",
                "\u03b2-thalassemia", "IL-2 (\u2460)", "  ", "ＡＢＣ\u3000def", "x")


@functools.lru_cache(maxsize=1)
def rules_fingerprint() -> str:
    """A digest of what `normalize_text` and `key_id` make of `_RULE_PROBES`: a
    saved table (`NameTable.save`) is read only by the rules that wrote it."""
    digest = blake2b(digest_size=16)
    for text in _RULE_PROBES:
        key = normalize_text(text)
        digest.update(f"{key}\t{key_id(key) if key else 0}\n".encode("utf-8"))
    return digest.hexdigest()


class KeyLookup:
    """Normalised name -> the concepts (rows of `NameTable.concept_ids`, KB order)
    that have it: the exact-match candidates and shortcut read it.

    Built at every load, as two arrays: the names' 64-bit key ids (`key_id`)
    sorted, and their concepts: a sixth of the memory of the key strings and a
    dict of them, built in milliseconds. A
    text whose id equals a name's without being that name would be read as it:
    about n / 2^64 per lookup (4e-15 for MEDIC).

    key_ids (Sequence[int]): Each name's `key_id` (`NameTable.key_ids`;
        distinct within a concept).
    owners (Sequence[int]): Each name's concept, grouped in concept order.
    """

    def __init__(self, key_ids: Sequence[int], owners: Sequence[int]) -> None:
        ids = np.asarray(key_ids, dtype=np.uint64)
        owners = np.asarray(owners, dtype=np.int64)
        order = np.argsort(ids, kind="stable")  # equal ids keep concept (KB) order
        self._ids, self._owners = ids[order], owners[order]

    def __len__(self) -> int:
        return len(self._ids)

    def get(self, key: str, default: Optional[List[int]] = None) -> Optional[List[int]]:
        """RETURNS: the concepts that have `key`, KB order (`default` when none)."""
        wanted, ids, n = key_id(key), self._ids, len(self._ids)
        first = int(ids.searchsorted(np.uint64(wanted)))  # about 2 us a lookup
        if first == n or int(ids[first]) != wanted:
            return default
        if first + 1 == n or int(ids[first + 1]) != wanted:  # most names: one concept
            return [int(self._owners[first])]
        last = int(ids.searchsorted(np.uint64(wanted), side="right"))
        return self._owners[first:last].tolist()  # keys are distinct within a concept


def top_k(scores: np.ndarray, k: int, tie_rank: Optional[np.ndarray] = None
          ) -> Tuple[np.ndarray, np.ndarray]:
    """Row-wise top-k of a (batch, n) matrix, by descending score; ties are broken
    by `tie_rank` (an (n,) rank per column), else by the lower index (KB order),
    whatever k is.

    A plain argpartition picks an arbitrary member of a tie at the k-th place,
    so results would depend on k; here every item scoring at least the k-th
    score competes, and the order is (score desc, tie rank asc, index asc).
    RETURNS (Tuple[np.ndarray, np.ndarray]): (indices, scores), each (batch, min(k, n)).
    """
    batch, n = scores.shape
    k = max(0, min(k, n))
    if k == 0:
        return np.empty((batch, 0), dtype=np.int64), np.empty((batch, 0), dtype=scores.dtype)
    if k < n:
        part = np.argpartition(scores, n - k, axis=1)[:, n - k:]  # (batch, k): the k largest
        kth = np.take_along_axis(scores, part, axis=1).min(axis=1)  # (batch,)
        boundary = (scores >= kth[:, None]).sum(axis=1) > k  # a tie reaches past the k-th
    else:
        part = np.broadcast_to(np.arange(n, dtype=np.int64), (batch, n))
        kth, boundary = scores.min(axis=1), np.zeros(batch, dtype=bool)
    indices = np.empty((batch, k), dtype=np.int64)
    plain = ~boundary  # the partition is the competing set: ordered for all rows at once
    if plain.any():
        rows = part[plain]
        values = np.take_along_axis(scores[plain], rows, axis=1)
        ties = tie_rank[rows] if tie_rank is not None else rows
        order = np.lexsort((rows, ties, -values), axis=-1)
        indices[plain] = np.take_along_axis(rows, order, axis=1)
    for row in np.flatnonzero(boundary):
        competing = np.flatnonzero(scores[row] >= kth[row])
        ties = tie_rank[competing] if tie_rank is not None else competing
        order = np.lexsort((competing, ties, -scores[row, competing]))[:k]
        indices[row] = competing[order]
    return indices, np.take_along_axis(scores, indices, axis=1)


__all__ = ["key_id", "NameTable", "KeyLookup", "top_k", "TABLE_FILE", "rules_fingerprint"]

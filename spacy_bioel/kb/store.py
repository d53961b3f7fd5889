"""The concepts of a knowledge base, held packed and decoded into a `Concept` when
one is read.

A loaded KB is read whole (`KnowledgeBase.from_bytes`) but used a few concepts at a
time when linking (the linked concept's cross-references, a type filter's types).
As objects, every name is a Python string with about 80 bytes of overhead, and a
KB file's strings were all alive at once while the KB was built from them, so the
memory they were read into stayed with the process. A loaded KB now keeps its
file's inflated payload (one `bytes`) and, per concept column, where each
concept's value starts in it (`PackedColumns`): reading the file unpacks one value
at a time to check it, and keeps none. MEDIC 2012 (11,915 concepts, 76,237 names):
docs/results/speed.md measures what this saves (issue 74's memory goal).

Reading a packed concept decodes its fields (a few microseconds); a new, equal
`Concept` comes back each time. A concept added or replaced (a KB being built from
its sources, or one added to a loaded KB) is held as the `Concept` it is.
"""
from __future__ import annotations

from typing import Dict, Iterable, Iterator, List, MutableMapping, Optional, Tuple, Union

import numpy as np

from .concept import Concept

# the payload's concept columns, in `Concept`'s field order after the id (`_packed` writes them)
FIELDS = ("names", "synonyms", "scopes", "types", "definitions", "alt_ids", "relations", "xrefs")
CONCEPT_FIELDS = ("canonical_name", "synonyms", "synonym_scopes", "types", "definition", "alt_ids",
                  "relations", "xrefs")  # the `Concept` field of each column
OPTIONAL = {"xrefs": ()}  # a KB without any cross-reference writes no xrefs column


def _msgpack():
    """srsly's compiled msgpack (Unpacker, unpackb, OutOfData), imported when a KB
    file is read: building a KB needs no srsly (the GPU check's environment has
    none). Its public `unpackb` looks up srsly's registered decoders at every call
    (about 150 us a value), which no value here needs."""
    from srsly.msgpack.exceptions import OutOfData

    try:
        from srsly.msgpack._unpacker import Unpacker, unpackb
    except ImportError:  # pragma: no cover - another srsly layout
        from srsly.msgpack import Unpacker, unpackb
    return Unpacker, unpackb, OutOfData


def _check_value(column: str, value, concept_id: str) -> None:
    """TypeError unless `value` is what `KnowledgeBase._packed` writes in `column`."""
    if column == "names":
        ok = isinstance(value, str)
    elif column == "definitions":
        ok = value is None or isinstance(value, str)
    elif column == "relations":
        ok = isinstance(value, list) and all(
            isinstance(r, list) and len(r) == 2 and all(isinstance(v, str) for v in r)
            for r in value)
    else:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if not ok:
        raise TypeError(f"the {column} value of concept {concept_id!r} is "
                        f"{type(value).__name__}, not what a KB file holds")


class PackedColumns:
    """A KB payload's concept columns, read where they lie: each concept's value of
    each column is decoded from the payload when asked for.

    payload (bytes): The inflated msgpack payload of a KB file.
    offsets (np.ndarray): (n_concepts + 1, len(FIELDS)) where each concept's value
        of each column starts; row n is where each column ends.
    missing (Dict[str, tuple]): Columns the payload lacks, with the value every
        concept has there.
    """

    def __init__(self, payload: bytes, offsets: np.ndarray, missing: Dict[str, tuple]) -> None:
        self.payload = payload
        self._view = memoryview(payload)
        self._unpackb = _msgpack()[1]
        self.offsets = offsets
        self.missing = missing

    def __getstate__(self) -> Tuple:  # a memoryview does not pickle: rebuilt from the payload
        return self.payload, self.offsets, self.missing

    def __setstate__(self, state: Tuple) -> None:
        self.__init__(*state)

    def value(self, row: int, field: int):
        """The value of concept `row` in column FIELDS[field]."""
        name = FIELDS[field]
        if name in self.missing:
            return self.missing[name]
        start, end = self.offsets[row, field], self.offsets[row + 1, field]
        return self._unpackb(self._view[start:end], raw=False, use_list=False)

    def fields(self, row: int) -> Tuple:
        """Concept `row`'s values, in FIELDS' order."""
        starts, ends = self.offsets[row].tolist(), self.offsets[row + 1].tolist()
        view, unpackb = self._view, self._unpackb
        return tuple(self.missing[name] if name in self.missing else
                     unpackb(view[start:end], raw=False, use_list=False)
                     for name, start, end in zip(FIELDS, starts, ends))


def read_payload(payload: bytes) -> Tuple[Dict[str, object], List[str], PackedColumns]:
    """Read a KB file's inflated msgpack payload (`KnowledgeBase._packed`) one value
    at a time, checking each: the header entries (name, prefixes, meta, alt_map),
    the concept ids and the packed columns. Raises TypeError or ValueError
    (a damaged file) with what is wrong."""
    Unpacker, _, OutOfData = _msgpack()
    unpacker = Unpacker(raw=False, max_buffer_size=len(payload) + 1, strict_map_key=False)
    unpacker.feed(payload)
    try:
        return _read(unpacker, payload)
    except OutOfData as err:
        raise ValueError("the payload ends inside a value") from err


def _read(unpacker, payload: bytes) -> Tuple[Dict[str, object], List[str], PackedColumns]:
    header: Dict[str, object] = {}
    ids: List[str] = []
    dtype = np.uint32 if len(payload) < 2 ** 32 else np.int64
    starts: Dict[str, np.ndarray] = {}
    for _ in range(unpacker.read_map_header()):
        key = unpacker.unpack()
        if key == "ids":
            ids = unpacker.unpack()
            if not isinstance(ids, list) or not all(isinstance(cid, str) for cid in ids):
                raise TypeError("the concept ids are not a list of strings")
        elif key in FIELDS:
            count = unpacker.read_array_header()
            column = np.empty(count + 1, dtype=dtype)
            for row in range(count):
                column[row] = unpacker.tell()
                _check_value(key, unpacker.unpack(), ids[row] if row < len(ids) else f"#{row}")
            column[count] = unpacker.tell()
            starts[key] = column
        else:
            header[key] = unpacker.unpack()
    lengths = {key: len(column) - 1 for key, column in starts.items()}
    if any(count != len(ids) for count in lengths.values()):
        raise ValueError(f"columns of different lengths (ids {len(ids)}, {lengths})")
    absent = [name for name in FIELDS if name not in starts and name not in OPTIONAL]
    if absent:
        raise KeyError(", ".join(absent))
    offsets = np.zeros((len(ids) + 1, len(FIELDS)), dtype=dtype)
    for field, name in enumerate(FIELDS):
        if name in starts:
            offsets[:, field] = starts[name]
    missing = {name: OPTIONAL[name] for name in OPTIONAL if name not in starts}
    return header, ids, PackedColumns(payload, offsets, missing)


class ConceptStore(MutableMapping):
    """Concept id -> `Concept`, in insertion order. A concept is a row of a loaded
    payload's `PackedColumns` (decoded when read), or the `Concept` itself where it
    was added or replaced (a KB being built holds its concepts as they are)."""

    __slots__ = ("_entries", "_columns")

    def __init__(self, columns: Optional[PackedColumns] = None,
                 ids: Optional[List[str]] = None) -> None:
        self._columns = columns
        self._entries: Dict[str, Union[int, Concept]] = {cid: row for row, cid in enumerate(ids or ())}

    def __getitem__(self, concept_id: str) -> Concept:
        entry = self._entries[concept_id]
        if isinstance(entry, Concept):
            return entry
        return Concept(concept_id, *self._columns.fields(entry))

    def __setitem__(self, concept_id: str, concept: Concept) -> None:
        self._entries[concept_id] = concept

    def __delitem__(self, concept_id: str) -> None:
        del self._entries[concept_id]

    def __contains__(self, concept_id: object) -> bool:
        return concept_id in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def values(self) -> Iterator[Concept]:  # type: ignore[override]
        """Yield every concept, decoded where it is packed, in insertion order."""
        return (self[cid] for cid in self._entries)

    def names(self) -> Iterator[Tuple[str, str, Tuple[str, ...]]]:
        """Yield (concept id, canonical name, synonyms) of every concept, decoding
        nothing else."""
        columns = self._columns
        if columns is not None:  # where the name and synonym values start, as Python ints
            view, unpackb, bounds = columns._view, columns._unpackb, columns.offsets[:, :2].tolist()
        for cid, entry in self._entries.items():
            if isinstance(entry, Concept):
                yield cid, entry.canonical_name, entry.synonyms
            else:
                (name_start, synonyms_start), (name_end, synonyms_end) = bounds[entry], bounds[entry + 1]
                yield (cid, unpackb(view[name_start:name_end], raw=False, use_list=False),
                       unpackb(view[synonyms_start:synonyms_end], raw=False, use_list=False))

    def field_values(self, field: str, concept_ids: Iterable[str]) -> List:
        """Each listed concept's value of one `Concept` field after the id (a FIELDS
        column: "types", "xrefs", ...), decoding nothing else (a type filter reads
        every concept's types when a pipeline loads)."""
        position = FIELDS.index(field)
        out = []
        for cid in concept_ids:
            entry = self._entries[cid]
            if isinstance(entry, Concept):
                out.append(getattr(entry, CONCEPT_FIELDS[position]))
            else:
                out.append(self._columns.value(entry, position))
        return out

    def copy_from(self, other: "ConceptStore", concept_id: str) -> None:
        """Add `other`'s concept `concept_id` (decoded once where it is packed)."""
        self._entries[concept_id] = other[concept_id]


__all__ = ["ConceptStore", "PackedColumns", "read_payload", "FIELDS"]

"""The prediction settings of a `bioel_linker`, typed and checked in one place.

`LinkerSettings` is the component's `cfg`: a dataclass that reads like the
mapping spaCy components keep (`linker.cfg["top_k"]`, `dict(linker.cfg)`),
whose every write goes through `set` and its check (E175 for a bad value;
E172 for an unknown name is the component's, which also knows stage params).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Callable, Dict, Iterator, Optional

from ..validation import MAX_BATCH, MAX_TOP_K, as_bool, as_int, as_optional_name

CHECKS: Dict[str, Callable[[str, Any], Any]] = {
    "top_k": lambda k, v: as_int(k, v, 1, MAX_TOP_K),
    "retrieve_k": lambda k, v: as_int(k, v, 1, MAX_TOP_K),
    "context_window": lambda k, v: as_int(k, v, 0, 10 ** 6),
    "abbreviations": as_bool,
    "nil_without_alnum": as_bool,
    "nil_undefined_abbreviations": as_bool,
    "encode_batch_size": lambda k, v: as_int(k, v, 1, MAX_BATCH),
    "cache_size": lambda k, v: as_int(k, v, 0, 10 ** 8),
    "spans_key": lambda k, v: as_optional_name(k, v, "the name of a span group (doc.spans[name])"),
    "id_space": lambda k, v: as_optional_name(k, v, "a vocabulary of the KB's cross-references "
                                                    "(e.g. 'UMLS', 'MESH', 'OMIM', 'ICD10CM')"),
}


@dataclass
class LinkerSettings(Mapping):
    """top_k (int): Candidates written to `Span._.<kb_ents_attr>`, best first.
    retrieve_k (int): Candidates retrieved from the name index and ranked per
        mention (the ranker's probabilities are over these; at least `top_k`
        for a full written list).
    context_window (int): Tokens of context each side of a mention (0: the span).
    abbreviations (bool): Also score a defined short form through its long form.
    nil_without_alnum (bool): A mention without a letter or digit is NIL, unencoded.
    nil_undefined_abbreviations (bool): Without training mentions, a mention that
        reads as an abbreviation (`mentions.looks_like_abbreviation`), that its
        document does not define and that is no KB name is NIL (its candidates
        are still written); counted in `linker.counts['nil_undefined_abbreviation']`.
    encode_batch_size (int): Texts per encoder pass at prediction and refresh.
    cache_size (int): Decisions remembered within one call (0: no cache).
    spans_key (Optional[str]): Link `doc.spans[spans_key]` (e.g. a spancat's
        overlapping mentions) instead of `doc.ents` (None, the default).
    id_space (Optional[str]): Write `kb_id_` in this vocabulary of the KB's
        cross-references ('UMLS', 'MESH', 'OMIM', ...; `kb.xrefs.id_in_space`):
        a concept without an id there is written 'NIL' and counted in
        `linker.counts['id_space_unmapped']`. None: the KB's own ids.
    kb_ents_attr, is_nil_attr, nil_score_attr, similarity_attr, probability_attr,
        xrefs_attr (str): The Span extensions written (two linkers can share a
        pipeline); `xrefs_attr` holds the linked concept's cross-references.
    """

    top_k: int = 64
    retrieve_k: int = 64
    context_window: int = 0
    abbreviations: bool = True
    nil_without_alnum: bool = True
    nil_undefined_abbreviations: bool = True
    encode_batch_size: int = 256
    cache_size: int = 10000
    spans_key: Optional[str] = None
    id_space: Optional[str] = None
    kb_ents_attr: str = "kb_ents"
    is_nil_attr: str = "is_nil"
    nil_score_attr: str = "nil_score"
    similarity_attr: str = "kb_similarity"
    probability_attr: str = "kb_prob"
    xrefs_attr: str = "kb_xrefs"

    def __post_init__(self) -> None:
        for name, check in CHECKS.items():
            setattr(self, name, check(name, getattr(self, name)))

    def set(self, key: str, value: Any) -> None:
        """Set a checked setting (E175 for a bad value); KeyError for an unknown
        or unchecked name (the extension names are fixed at construction)."""
        if key not in CHECKS:
            raise KeyError(key)
        setattr(self, key, CHECKS[key](key, value))

    def __getitem__(self, key: str) -> Any:
        if key not in NAMES:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(NAMES)

    def __len__(self) -> int:
        return len(NAMES)


NAMES = tuple(f.name for f in fields(LinkerSettings))  # read on every prediction: computed once


__all__ = ["LinkerSettings", "CHECKS"]

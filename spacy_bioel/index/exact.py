"""Exact dictionary match: a mention links to every concept having a name equal
to it after normalisation (case, Unicode, punctuation, whitespace)."""
from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple

from ..errors import BioELError, Errors
from ..kb.knowledge_base import KnowledgeBase
from ..kb.normalize import normalize_text
from .names import KeyLookup, NameTable

Candidates = List[Tuple[str, float]]


class ExactMatchCandidates:
    """Candidate generator by exact normalised-name lookup.

    Every matching concept scores 1.0, in KB order (so Acc@1 on an ambiguous
    name counts the first concept only); a mention without match gets [].

    Example:
        >>> gen = ExactMatchCandidates(kb)
        >>> gen(["Colorectal Cancer"], k=5)
        [[('D1', 1.0)]]
    """

    name = "exact"

    def __init__(self, kb: KnowledgeBase, extra_names: Iterable[Tuple[str, str]] = ()) -> None:
        table = NameTable(kb, extra_names)
        if not len(table):
            raise BioELError(Errors.E105)
        self.lookup = KeyLookup(table.key_ids, table.owners)  # the exact stage's lookup
        self.concept_ids = table.concept_ids
        self.n_names = len(table)

    def __call__(self, mentions: Sequence[str], k: int = 10) -> List[Candidates]:
        if k < 1:
            raise BioELError(Errors.E104.format(k=k))
        return [[(self.concept_ids[c], 1.0) for c in self.lookup.get(normalize_text(m), [])[:k]]
                for m in mentions]


__all__ = ["ExactMatchCandidates"]

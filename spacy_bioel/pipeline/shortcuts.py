"""Entities the linker decides before the encoder reads them (`retrieve`
consults this first):

- a mention with no letter or digit in any script (punctuation, symbols,
  whitespace, NUL, zero-width characters) is NIL (`nil_without_alnum`);
- a mention whose normalised text is a KB name of exactly one concept, that the
  type filter allows, links to it with no encoder and no datastore
  (`exact_shortcut`, the `ExactCandidates` lookup), unless it is an abbreviation
  defined in its document, which is read through its long form.

Both are counted by reason (`BioELLinker.counts`).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.tokens import Span

from ..index.candidates import ExactCandidates
from ..index.name_index import NameIndex
from ..kb.knowledge_base import KnowledgeBase
from ..kb.normalize import normalize_text
from .decisions import Retrieved
from .mentions import SpanKey, has_alnum


class Shortcuts:
    """The exact-name lookup is built on first use and dropped with `reset` (new KB)."""

    def __init__(self) -> None:
        self.exact: Optional[ExactCandidates] = None

    def reset(self) -> None:
        self.exact = None

    def split(self, spans: Sequence[Tuple[int, Span]], forms: Dict[SpanKey, str],
              cfg: Dict[str, Any], kb: Optional[KnowledgeBase], index: NameIndex, type_filter
              ) -> Tuple[List[int], List[Retrieved]]:
        """RETURNS: (positions in `spans` the encoder must read, per span the
        alternatives decided here: none for a NIL, one for an exact shortcut)."""
        out: List[Retrieved] = [[] for _ in spans]
        keep = []
        for k, (i, ent) in enumerate(spans):
            if cfg["nil_without_alnum"] and not has_alnum(ent.text):
                continue
            if cfg["exact_shortcut"] and kb is not None and \
                    (i, ent.start_char, ent.end_char) not in forms:
                concept_id = self._exact_concept(ent, kb, index, type_filter)
                if concept_id is not None:
                    out[k].append({"candidates": [(concept_id, 1.0, 1.0)], "neighbours": [],
                                   "shortcut": True})
                    continue
            keep.append(k)
        return keep, out

    def _exact_concept(self, ent: Span, kb: KnowledgeBase, index: NameIndex,
                       type_filter) -> Optional[str]:
        if self.exact is None:
            self.exact = ExactCandidates()
            self.exact.initialize(kb, index)
        concepts = self.exact.lookup.get(normalize_text(ent.text), [])
        mask = type_filter.masks([ent.label_])[0] if type_filter is not None else None
        if len(concepts) != 1 or (mask is not None and not mask[concepts[0]]):
            return None
        return index.names.concept_ids[concepts[0]]


__all__ = ["Shortcuts"]

"""The texts a cross-encoder pair is made of: the mention marked inside a
window of its sentence, and a candidate concept as its canonical name, a few
synonyms and the start of its definition (BioFEG Sec. 3.6, eq. 2: mention with
context / entity with description, concatenated)."""
from __future__ import annotations

from typing import Dict, Optional

from spacy.tokens import Span

from ..encoders.common import MENTION_END, MENTION_START
from ..kb.knowledge_base import KnowledgeBase


def query_text(ent: Span, window: int) -> str:
    """`left [M] mention [/M] right`: up to `window` tokens each side, inside the
    entity's sentence when the doc has sentence boundaries (else the doc)."""
    doc = ent.doc
    start, end = 0, len(doc)
    if doc.has_annotation("SENT_START"):
        sentence = ent.sent
        start, end = sentence.start, sentence.end
    left = doc[max(start, ent.start - window):ent.start].text if window > 0 else ""
    right = doc[ent.end:min(end, ent.end + window)].text if window > 0 else ""
    return f"{left} {MENTION_START} {ent.text} {MENTION_END} {right}".strip()


class CandidateTexts:
    """The candidate side of a pair, built once per concept.

    kb (KnowledgeBase): Where names and definitions come from.
    n_synonyms (int): Synonyms after the canonical name.
    definition_chars (int): Characters of the definition (0: none), cut at a word.
    """

    def __init__(self, kb: KnowledgeBase, n_synonyms: int = 3, definition_chars: int = 120) -> None:
        self.kb, self.n_synonyms, self.definition_chars = kb, n_synonyms, definition_chars
        self._cache: Dict[str, str] = {}
        self.unknown = 0  # candidate ids the KB does not have (their id is the text)

    def __call__(self, concept_id: str) -> str:
        text = self._cache.get(concept_id)
        if text is None:
            text = self._build(concept_id)
            self._cache[concept_id] = text
        return text

    def _build(self, concept_id: str) -> str:
        primary = self.kb.resolve(concept_id)
        concept = self.kb.get(primary) if primary is not None else None
        if concept is None:
            self.unknown += 1
            return concept_id
        names = [concept.canonical_name, *concept.synonyms[:self.n_synonyms]]
        text = " ; ".join(names)
        definition = _cut(concept.definition, self.definition_chars)
        return f"{text} | {definition}" if definition else text


def _cut(text: Optional[str], limit: int) -> str:
    if not text or limit <= 0:
        return ""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut or text[:limit]


__all__ = ["query_text", "CandidateTexts"]

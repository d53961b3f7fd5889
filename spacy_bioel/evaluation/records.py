"""Per-mention evaluation records: gold ids, the ranked candidates a linker
returned, and the subsets the mention belongs to."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Set, Tuple

from spacy.tokens import Doc

from ..corpora.documents import DOC_ID_KEY, split_gold_ids
from ..kb.knowledge_base import NIL, KnowledgeBase
from ..kb.normalize import normalize_text


@dataclass
class MentionRecord:
    """One gold mention and a linker's output for it.

    gold (Tuple[str, ...]): Acceptable concept ids (any one counts); () for NIL.
    candidates (List[str]): Ranked concept ids, best first.
    scores (List[float]): Scores aligned with `candidates`.
    predicted (str): The linker's answer (a concept id or 'NIL').
    nil_score (Optional[float]): Higher = more likely NIL (for NIL average precision).
    seen / predicted_seen (Optional[bool]): The gold / the top candidate is a
        concept of a training mention (set by `annotate_subsets`).
    """

    text: str
    label: str
    gold: Tuple[str, ...]
    doc_id: str = ""
    candidates: List[str] = field(default_factory=list)
    scores: List[float] = field(default_factory=list)
    predicted: str = NIL
    nil_score: Optional[float] = None
    seen: Optional[bool] = None
    predicted_seen: Optional[bool] = None
    refined: Optional[bool] = None
    gold_in_kb: bool = True

    @property
    def is_nil(self) -> bool:
        return not self.gold

    def rank(self) -> Optional[int]:
        """RETURNS (Optional[int]): 1-based rank of the first gold concept, or None."""
        gold = set(self.gold)
        for position, concept_id in enumerate(self.candidates, start=1):
            if concept_id in gold:
                return position
        return None


def records_from_docs(docs: Iterable[Doc]) -> List[MentionRecord]:
    """Gold records (no predictions yet) for every `doc.ents` entry with a kb_id_."""
    records = []
    for doc in docs:
        doc_id = str(doc.user_data.get(DOC_ID_KEY, ""))
        for ent in doc.ents:
            if not ent.kb_id_:
                continue
            records.append(MentionRecord(ent.text, ent.label_, split_gold_ids(ent.kb_id_), doc_id))
    return records


def annotate_subsets(records: Sequence[MentionRecord], kb: Optional[KnowledgeBase],
                     train_docs: Sequence[Doc] = (), seen_docs: Optional[Sequence[Doc]] = None
                     ) -> None:
    """Mark each record's `seen`, `refined` and `gold_in_kb` in place.

    seen: a gold id is a gold id of a mention in `seen_docs` (default: train_docs);
        predicted_seen likewise for the top candidate (read at call time: call
        it after linking).
    refined: the normalised mention text is neither a mention string of
        `train_docs` (train and dev) nor a KB name (Tutubalina et al. 2020).
    """
    train_strings: Set[str] = set()
    train_ids: Set[str] = set()
    for doc in (seen_docs if seen_docs is not None else train_docs):
        for ent in doc.ents:
            train_ids.update(split_gold_ids(ent.kb_id_))
    for doc in train_docs:
        for ent in doc.ents:
            train_strings.add(normalize_text(ent.text))
    kb_names = set(kb.alias_index) if kb is not None else set()
    have_train = bool(train_docs) or bool(seen_docs)
    resolved = {kb.resolve(i) or i for i in train_ids} if kb is not None else train_ids
    for record in records:
        key = normalize_text(record.text)
        if have_train:
            record.seen = any(g in train_ids for g in record.gold)
            top = record.candidates[0] if record.candidates else record.predicted
            record.predicted_seen = bool(top) and top != NIL and (
                top in train_ids or (kb is not None and (kb.resolve(top) or top) in resolved))
            record.refined = key not in train_strings and key not in kb_names
        elif kb is not None:
            record.refined = key not in kb_names
        if kb is not None and record.gold:
            record.gold_in_kb = any(kb.resolve(g) is not None for g in record.gold)


__all__ = ["MentionRecord", "records_from_docs", "annotate_subsets"]

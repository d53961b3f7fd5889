"""What kind of error each wrong linkable mention is, beside where it failed
(`metrics.failure_stages`): counts a reader can act on.

- `seen`: BioFEG's Table 4 kinds (Sui et al., paper 001, Sec. 4.5): the gold
  concept seen or unseen in training, and the wrong prediction seen or unseen
  (`unseen_to_wrong_seen` is the error a linker biased to training concepts
  makes). Needs `annotate_subsets` with training documents.
- `hierarchy`: the wrong prediction is an `is_a` ancestor of the gold (too
  general), a descendant (too specific), a sibling (the same parent) or
  unrelated. Near misses in the hierarchy are where gold annotation itself is
  least consistent. Needs a KB with `is_a` relations (MEDIC / CTD with parents,
  OBO).
- `mention`: abbreviations (a short, mostly upper-case token: "CD", "AAPC") and
  composite gold (several ids for one mention) against the rest.

The wrong answer is the top candidate, as Acc@1 scores it; a linkable mention
with no candidate at all counts as `predicted_nil` in every table.
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, Optional, Sequence, Set

from ..kb.knowledge_base import NIL, KnowledgeBase
from .records import MentionRecord

MAX_DEPTH = 32  # is_a hops followed upwards (real ontologies are far shallower)


def predicted_id(record: MentionRecord) -> str:
    """The linker's answer as scored: its top candidate, else its prediction."""
    return record.candidates[0] if record.candidates else record.predicted


def is_abbreviation(text: str) -> bool:
    """A short single token whose letters are mostly upper case ("CD", "SCA1", "HbS")."""
    letters = [c for c in text if c.isalpha()]
    return (0 < len(text) <= 8 and " " not in text.strip() and bool(letters)
            and sum(c.isupper() for c in letters) * 2 >= len(letters) + 1)


def ancestors(kb: KnowledgeBase, concept_id: str) -> Set[str]:
    """Every `is_a` ancestor of a concept (resolved ids), cycles and depth bounded."""
    seen: Set[str] = set()
    frontier = [concept_id]
    for _ in range(MAX_DEPTH):
        nxt = []
        for cid in frontier:
            concept = kb.get(cid)
            for parent in (concept.parents() if concept is not None else ()):
                parent = kb.resolve(parent) or parent
                if parent not in seen:
                    seen.add(parent)
                    nxt.append(parent)
        if not nxt:
            break
        frontier = nxt
    return seen


def hierarchy_kind(kb: KnowledgeBase, gold: Sequence[str], predicted: str) -> str:
    """'ancestor' | 'descendant' | 'sibling' | 'unrelated' of `predicted` to any gold id."""
    predicted = kb.resolve(predicted) or predicted
    above_predicted = ancestors(kb, predicted)
    direct = kb.get(predicted)
    predicted_parents = {kb.resolve(p) or p for p in (direct.parents() if direct else ())}
    kinds = set()
    for gold_id in gold:
        gold_id = kb.resolve(gold_id) or gold_id
        concept = kb.get(gold_id)
        if predicted in ancestors(kb, gold_id):
            kinds.add("ancestor")
        elif gold_id in above_predicted:
            kinds.add("descendant")
        elif concept is not None and predicted_parents & {kb.resolve(p) or p
                                                          for p in concept.parents()}:
            kinds.add("sibling")
    for kind in ("ancestor", "descendant", "sibling"):
        if kind in kinds:
            return kind
    return "unrelated"


def error_kinds(records: Sequence[MentionRecord], kb: Optional[KnowledgeBase] = None
                ) -> Dict[str, Dict[str, int]]:
    """Counts of the wrong linkable mentions by kind (see the module docstring).
    `hierarchy` is present only when `kb` has `is_a` relations, `seen` only
    when the records carry seen / predicted_seen."""
    wrong = [r for r in records if not r.is_nil and r.rank() != 1 and r.gold_in_kb]
    has_hierarchy = kb is not None and any(c.parents() for c in kb)
    has_seen = any(r.seen is not None for r in records)
    tables: Dict[str, Counter] = {"mention": Counter()}
    if has_seen:
        tables["seen"] = Counter()
    if has_hierarchy:
        tables["hierarchy"] = Counter()
    for record in wrong:
        predicted = predicted_id(record)
        nil = predicted in ("", NIL)
        tables["mention"]["abbreviation" if is_abbreviation(record.text) else
                          "composite_gold" if len(record.gold) > 1 else "other"] += 1
        if has_seen:
            tables["seen"]["predicted_nil" if nil else
                           f"{'seen' if record.seen else 'unseen'}_to_wrong_"
                           f"{'seen' if record.predicted_seen else 'unseen'}"] += 1
        if has_hierarchy:
            tables["hierarchy"]["predicted_nil" if nil else
                                hierarchy_kind(kb, record.gold, predicted)] += 1
    return {name: dict(table.most_common()) for name, table in tables.items()}


__all__ = ["error_kinds", "hierarchy_kind", "ancestors", "is_abbreviation", "predicted_id"]

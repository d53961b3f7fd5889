"""Scores of the linker: spaCy's `Scorer.score_links` (micro P/R/F of kb_id_)
plus Acc@k over the ranked `Span._.kb_ents`, any id of a composite counting."""
from __future__ import annotations

from typing import Any, Dict, Iterable

from spacy.scorer import Scorer
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import registry

from ..kb.ids import split_gold_ids
from ..kb.knowledge_base import NIL


def score_linking(examples: Iterable[Example], kb_ents_attr: str = "kb_ents",
                  ks: Iterable[int] = (1, 5), **kwargs: Any) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): nel_micro_p/r/f (spaCy) and bioel_acc@k, bioel_n."""
    examples = list(examples)
    scores: Dict[str, Any] = Scorer.score_links(examples, negative_labels=[NIL])
    ks = tuple(ks)
    hits = {k: 0 for k in ks}
    total = 0
    for eg in examples:
        predicted = {(e.start_char, e.end_char): e for e in eg.predicted.ents}
        for gold in eg.reference.ents:
            gold_ids = set(split_gold_ids(gold.kb_id_))
            if not gold_ids:
                continue
            total += 1
            span = predicted.get((gold.start_char, gold.end_char))
            ranked = getattr(span._, kb_ents_attr, None) if span is not None and \
                Span.has_extension(kb_ents_attr) else None
            ranked_ids = [cid for cid, _ in (ranked or [])]
            for k in ks:
                hits[k] += any(cid in gold_ids for cid in ranked_ids[:k])
    for k in ks:
        scores[f"bioel_acc@{k}"] = hits[k] / total if total else None
    scores["bioel_n"] = total
    return scores


@registry.scorers("spacy-bioel.linker_scorer.v1")
def make_linker_scorer():
    return score_linking


__all__ = ["score_linking", "make_linker_scorer"]

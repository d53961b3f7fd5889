"""Scores of the linker: micro P/R/F of kb_id_ over the spans present in both
the reference and the prediction (spaCy's `Scorer.score_links` for `doc.ents`,
the same counts for a span group), plus Acc@k over the ranked
`Span._.kb_ents`, any id of a composite counting."""
from __future__ import annotations

from typing import Any, Dict, Iterable, Optional

from spacy.scorer import Scorer
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import registry

from ..kb.ids import split_gold_ids
from ..kb.knowledge_base import NIL
from .mentions import mention_spans


def score_span_links(examples: Iterable[Example], spans_key: str) -> Dict[str, Any]:
    """`Scorer.score_links` over `doc.spans[spans_key]`: spans of both docs with
    the same offsets; a right id is a true positive, a wrong one a false
    positive and a false negative, NIL for a concept a false negative, a concept
    for NIL a false positive."""
    tp = fp = fn = 0
    for eg in examples:
        gold_by_offset = {(s.start_char, s.end_char): s.kb_id_
                          for s in mention_spans(eg.reference, spans_key)}
        for span in mention_spans(eg.predicted, spans_key):
            gold = gold_by_offset.get((span.start_char, span.end_char))
            if gold is None or (gold == NIL and span.kb_id_ == NIL):
                continue
            if gold == span.kb_id_:
                tp += 1
            else:
                fp += span.kb_id_ != NIL
                fn += gold != NIL
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"nel_score": f, "nel_score_desc": "micro F", "nel_micro_p": p, "nel_micro_r": r,
            "nel_micro_f": f}


def score_linking(examples: Iterable[Example], kb_ents_attr: str = "kb_ents",
                  ks: Iterable[int] = (1, 5), spans_key: Optional[str] = None,
                  **kwargs: Any) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): nel_micro_p/r/f and bioel_acc@k, bioel_n, over
    `doc.ents` or, with `spans_key`, `doc.spans[spans_key]`."""
    examples = list(examples)
    scores: Dict[str, Any] = Scorer.score_links(examples, negative_labels=[NIL]) \
        if spans_key is None else score_span_links(examples, spans_key)
    ks = tuple(ks)
    hits = {k: 0 for k in ks}
    total = 0
    for eg in examples:
        predicted = {(e.start_char, e.end_char): e for e in mention_spans(eg.predicted, spans_key)}
        for gold in mention_spans(eg.reference, spans_key):
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


__all__ = ["score_linking", "score_span_links", "make_linker_scorer"]

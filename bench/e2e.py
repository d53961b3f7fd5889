"""End-to-end evaluation (issue 44): raw text in, linked concepts out, scored
three ways with bootstrap intervals over documents.

- **NER, strict**: a predicted mention is right when its span and label are a
  gold mention's (`ner`).
- **Mention-level linking**: a predicted mention with a concept (not NIL) is
  right when its span is a gold mention's exactly and its id is one of that
  mention's gold ids (a composite's parts each count; BioSyn's rule); gold
  mentions without an id (NIL) are left out (`mentions`).
- **Document-level concepts**: per document, the set of concept ids predicted
  against the set of the gold mentions' ids (a composite adds each part): the
  protocol of the BioCreative V CDR disease task, TaggerOne and DNorm;
  micro-averaged over documents (`documents`).

Gold mentions are `doc.ents` plus the overlapping ones the corpora keep in
`doc.spans["bioel_overlaps"]`: a flat NER cannot find both of two overlapping
mentions, and that loss is counted, not hidden (`unrepresentable`, with the
gold mentions whose edges are not token edges of the pipeline's tokenizer).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence, Set, Tuple

import numpy as np

Mention = Tuple[int, int, str]  # start char, end char, label
NIL = "NIL"


@dataclass
class DocResult:
    """What one document holds: gold mentions with their ids, predicted mentions
    with their id (NIL when the linker said no concept)."""

    gold: Dict[Mention, Set[str]]
    predicted: Dict[Mention, str]
    gold_concepts: Set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.gold_concepts:
            self.gold_concepts = {c for ids in self.gold.values() for c in ids}


def counts(doc: DocResult) -> Dict[str, Tuple[int, int, int]]:
    """(true positives, false positives, false negatives) of each measure."""
    gold_spans, predicted_spans = set(doc.gold), set(doc.predicted)
    ner_tp = len(gold_spans & predicted_spans)
    linked = {m: c for m, c in doc.predicted.items() if c != NIL}
    gold_linkable = {m for m, ids in doc.gold.items() if ids}
    right = sum(1 for m, c in linked.items() if c in doc.gold.get(m, ()))
    concepts = set(linked.values())
    return {"ner": (ner_tp, len(predicted_spans) - ner_tp, len(gold_spans) - ner_tp),
            "mentions": (right, len(linked) - right, len(gold_linkable) - right),
            "documents": (len(concepts & doc.gold_concepts), len(concepts - doc.gold_concepts),
                          len(doc.gold_concepts - concepts))}


DOCUMENT_ERRORS = ("missed: no predicted span touches it", "missed: only overlapping spans",
                   "missed: an exact span linked to another id or NIL",
                   "wrong: from a spurious span", "wrong: from an overlapping span",
                   "wrong: from an exact gold span")


def _overlaps(a: Mention, b: Mention) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def document_errors(doc: DocResult) -> Dict[str, int]:
    """Why each gold concept of a document was missed, and where each wrong
    concept came from: the NER's share (no span, a span with other edges, a
    spurious span) against the linker's (an exact span, another id)."""
    out = dict.fromkeys(DOCUMENT_ERRORS, 0)
    linked = {m: c for m, c in doc.predicted.items() if c != NIL}
    concepts = set(linked.values())
    for concept in doc.gold_concepts - concepts:
        gold = [m for m, ids in doc.gold.items() if concept in ids]
        if any(m[:2] == g[:2] for m in doc.predicted for g in gold):
            out["missed: an exact span linked to another id or NIL"] += 1
        elif any(_overlaps(m, g) for m in doc.predicted for g in gold):
            out["missed: only overlapping spans"] += 1
        else:
            out["missed: no predicted span touches it"] += 1
    gold_spans = {m[:2] for m in doc.gold}
    for concept in concepts - doc.gold_concepts:
        spans = [m for m, c in linked.items() if c == concept]
        if any(m[:2] in gold_spans for m in spans):
            out["wrong: from an exact gold span"] += 1
        elif any(_overlaps(m, g) for m in spans for g in doc.gold):
            out["wrong: from an overlapping span"] += 1
        else:
            out["wrong: from a spurious span"] += 1
    return out


def total_document_errors(docs: Sequence[DocResult]) -> Dict[str, int]:
    """`document_errors` summed over documents (each kind, in DOCUMENT_ERRORS order)."""
    total = dict.fromkeys(DOCUMENT_ERRORS, 0)
    for doc in docs:
        for kind, n in document_errors(doc).items():
            total[kind] += n
    return total


def prf(tp: int, fp: int, fn: int) -> Dict[str, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"p": p, "r": r, "f": 2 * p * r / (p + r) if p + r else 0.0}


def scores(docs: Sequence[DocResult], n_bootstrap: int = 1000, seed: int = 0
           ) -> Dict[str, Dict[str, object]]:
    """Micro P/R/F of each measure and 95% bootstrap intervals over documents."""
    table = np.array([[counts(doc)[m] for m in ("ner", "mentions", "documents")] for doc in docs],
                     dtype=np.int64).reshape(len(docs), 3, 3)  # (doc, measure, tp/fp/fn)
    out: Dict[str, Dict[str, object]] = {}
    rng = np.random.default_rng(seed)
    samples = [rng.integers(0, len(docs), len(docs)) for _ in range(n_bootstrap)] if len(docs) else []
    for k, measure in enumerate(("ner", "mentions", "documents")):
        tp, fp, fn = (int(v) for v in table[:, k].sum(axis=0)) if len(docs) else (0, 0, 0)
        point = prf(tp, fp, fn)
        resampled = [prf(*(int(v) for v in table[s, k].sum(axis=0))) for s in samples]
        intervals = {key: [float(np.percentile([r[key] for r in resampled], q)) for q in (2.5, 97.5)]
                     for key in ("p", "r", "f")} if resampled else {}
        out[measure] = {**point, "tp": tp, "fp": fp, "fn": fn, "ci95": intervals}
    return out


def gold_result(doc, predicted: Dict[Mention, str], label: Optional[str] = None) -> DocResult:
    """A DocResult of a gold Doc (its ents and overlapping mentions) and a
    prediction; with `label`, every gold mention carries that label (an NER
    trained with one label, `spacy-bioel.one_label.v1`)."""
    from spacy_bioel.corpora.documents import OVERLAPS_SPANS_KEY
    from spacy_bioel.kb.ids import split_gold_ids

    gold: Dict[Mention, Set[str]] = {}
    spans = list(doc.ents) + list(doc.spans.get(OVERLAPS_SPANS_KEY, []))
    for span in spans:
        gold.setdefault((span.start_char, span.end_char, label or span.label_), set()).update(
            split_gold_ids(span.kb_id_))
    return DocResult(gold, predicted)


def predicted_mentions(doc, spans_key: Optional[str] = None, label: Optional[str] = None
                       ) -> Dict[Mention, str]:
    """(start, end, label) -> concept id or NIL of the mentions a pipeline linked
    (with `label`, each carries that label)."""
    from spacy_bioel.pipeline.mentions import mention_spans

    return {(s.start_char, s.end_char, label or s.label_): (s.kb_id_ or NIL)
            for s in mention_spans(doc, spans_key)}


def unrepresentable(gold_docs: Sequence, make_doc) -> Dict[str, int]:
    """Gold mentions a flat, token-based NER cannot produce: those overlapping
    another gold mention (kept beside `doc.ents`) and those whose edges are not
    token edges of `make_doc`'s tokenisation of the same text."""
    from spacy_bioel.corpora.documents import OVERLAPS_SPANS_KEY

    out = {"gold_mentions": 0, "overlapping": 0, "not_token_aligned": 0}
    for doc in gold_docs:
        overlaps = list(doc.spans.get(OVERLAPS_SPANS_KEY, []))
        out["gold_mentions"] += len(doc.ents) + len(overlaps)
        out["overlapping"] += len(overlaps)
        tokens = make_doc(doc.text)
        starts, ends = {t.idx for t in tokens}, {t.idx + len(t.text) for t in tokens}
        out["not_token_aligned"] += sum(1 for s in list(doc.ents) + overlaps
                                        if s.start_char not in starts or s.end_char not in ends)
    return out


__all__ = ["DocResult", "counts", "document_errors", "total_document_errors", "DOCUMENT_ERRORS",
           "prf", "scores", "gold_result", "predicted_mentions", "unrepresentable"]

"""What the linker reads from a Doc: the spans it links (`doc.ents`, or a span
group with `spans_key`), mention inputs (with optional context), linkable gold
mentions, and the long forms of abbreviations defined in the text."""
from __future__ import annotations

import re
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from spacy.tokens import Doc, Span, SpanGroup
from spacy.training import Example

from ..encoders.common import span_of_input  # noqa: F401 - re-exported
from ..kb.ids import split_gold_ids
from ..datastore.knn import HELD_OUT_KNN, held_out_key
from .abbreviations import find_abbreviations, is_short_form

SpanKey = Tuple[int, int, int]  # (doc index, start char, end char)


def mention_spans(doc: Doc, spans_key: Optional[str] = None) -> List[Span]:
    """The spans a linker links: `doc.ents`, or `doc.spans[spans_key]` (none
    when the doc has no such group), in order."""
    if spans_key is None:
        return list(doc.ents)
    return list(doc.spans[spans_key]) if spans_key in doc.spans else []


def set_mentions(doc: Doc, spans: List[Span], spans_key: Optional[str] = None) -> None:
    """Give `doc` the mentions a linker with `spans_key` reads: `doc.ents`, or the
    span group `doc.spans[spans_key]` (which may hold overlapping spans)."""
    if spans_key is None:
        doc.ents = spans
    else:
        doc.spans[spans_key] = spans


def for_linker(doc: Doc, spans_key: Optional[str] = None) -> Doc:
    """`doc` with the mentions it brings where a linker with `spans_key` reads them:
    its span group `spans_key` where it has one, else its `doc.ents` copied into that
    group (a DocBin converted for another linker; `link-corpus` reads a shard's
    documents the same way, `corpus_linking.records.record_mentions`)."""
    if spans_key is not None and spans_key not in doc.spans:
        doc.spans[spans_key] = list(doc.ents)
    return doc


def write_spans(doc: Doc, spans_key: Optional[str], spans: List[Span]) -> None:
    """Store `spans` (copies whose kb_id_ was set) back where they came from: a
    Span read from `doc.ents` or a span group is a copy, so its id is written by
    assigning the list again (a group keeps its name and attrs)."""
    if spans_key is None:
        doc.ents = spans
    elif spans_key in doc.spans:
        group = doc.spans[spans_key]
        doc.spans[spans_key] = SpanGroup(doc, name=group.name, attrs=dict(group.attrs), spans=spans)


def has_alnum(text: str) -> bool:
    """True when `text` has a letter or digit (in any script)."""
    return any(char.isalnum() for char in text)


def mention_input(ent: Span, context_window: int) -> str:
    """The text the mention tower reads: the span, or with `context_window` > 0
    that many tokens each side and [M] ... [/M] markers."""
    if context_window <= 0:
        return ent.text
    doc = ent.doc
    left = doc[max(0, ent.start - context_window):ent.start].text
    right = doc[ent.end:ent.end + context_window].text
    return f"{left} [M] {ent.text} [/M] {right}".strip()


def gold_mentions(examples: Iterable[Example], resolve: Callable[[str], Optional[int]],
                  context_window: int, spans_key: Optional[str] = None
                  ) -> List[Tuple[str, int, int]]:
    """(mention input, gold concept index, example index) of every reference
    mention with a gold id that `resolve` maps to a concept of the index (a
    composite mention counts under its first resolvable id)."""
    return [(mention_input(ent, context_window), concept, doc_index)
            for doc_index, ent, concept in linkable_gold(examples, resolve, spans_key)]


def linkable_gold(examples: Iterable[Example], resolve: Callable[[str], Optional[int]],
                  spans_key: Optional[str] = None) -> Iterator[Tuple[int, Span, int]]:
    """(example index, reference mention, gold concept index) of every reference
    mention (`mention_spans`) with a gold id that `resolve` maps to a concept (a
    composite under its first resolvable id): the walk behind `gold_mentions`."""
    for doc_index, eg in enumerate(examples):
        for ent in mention_spans(eg.reference, spans_key):
            for concept_id in split_gold_ids(ent.kb_id_):
                concept = resolve(concept_id)
                if concept is not None:
                    yield doc_index, ent, concept
                    break


def training_spans(examples, resolve: Callable[[str], Optional[int]],
                   spans_key: Optional[str] = None) -> Tuple[List[Doc], List[List[Tuple[int, int]]]]:
    """The predicted docs of the batch (all of them, in order, as the upstream
    component's listener checks) and, per doc, the (start, end) tokens of its
    linkable reference mentions, in the order of `mentions.gold_mentions`."""
    docs = [eg.predicted for eg in examples]
    rows: List[List[Tuple[int, int]]] = [[] for _ in docs]
    for doc_index, ent, _ in linkable_gold(examples, resolve, spans_key):
        span = docs[doc_index].char_span(ent.start_char, ent.end_char, alignment_mode="expand")
        rows[doc_index].append((span.start, span.end) if span is not None and len(span)
                               else (ent.start, ent.end))  # same tokens (gold spans)
    return docs, rows


# one word of letters, digits and hyphens with two capitals or more: APC, FAP, DM, SCA1, IgA
_ABBREVIATION = re.compile(r"^(?=(?:[^A-Z]*[A-Z]){2})[A-Za-z0-9-]{2,10}$")


def looks_like_abbreviation(text: str) -> bool:
    """Whether `text` reads as an abbreviation: one word of 2-10 letters, digits
    or hyphens, two or more of them capitals ('APC', 'DM', 'SCA1', 'IgA'; not
    'Asthma', 'colon cancer')."""
    return bool(_ABBREVIATION.match(text))


def long_forms(docs: List[Doc], spans_key: Optional[str] = None) -> Dict[SpanKey, str]:
    """(doc index, start, end) of short-form mentions -> their long form
    (Schwartz & Hearst 2003 definitions found in the same document)."""
    out = {}
    for i, doc in enumerate(docs):
        short = [ent for ent in mention_spans(doc, spans_key) if is_short_form(ent.text)]
        if not short:  # no mention can be a defined short form: the doc's text is not built
            continue   # (spaCy joins it token by token at each `doc.text`)
        pairs = find_abbreviations(doc.text)
        for ent in short:
            long_form = pairs.get(ent.text)
            if long_form:
                out[(i, ent.start_char, ent.end_char)] = long_form
    return out


# every batch of `BioELLinker.pipe` scores its distinct mentions against all KB names, one pass
# over the (float16) vectors: 64 abstracts hold ~550 mentions, and the pass cost as much as
# scoring them (natural corpus, docs/results/speed.md)
PIPE_MENTIONS = 1024
PIPE_MAX_FACTOR = 8


def mention_batches(stream: Iterable[Doc], batch_size: int, spans_key: Optional[str]
                    ) -> Iterator[List[Doc]]:
    """Docs in order, in batches that end once they hold `batch_size` docs and
    `PIPE_MENTIONS` mentions, or `PIPE_MAX_FACTOR * batch_size` docs."""
    batch: List[Doc] = []
    mentions = 0
    for doc in stream:
        batch.append(doc)
        mentions += len(mention_spans(doc, spans_key))
        if (len(batch) >= batch_size and mentions >= PIPE_MENTIONS) or \
                len(batch) >= PIPE_MAX_FACTOR * batch_size:
            yield batch
            batch, mentions = [], 0
    if batch:
        yield batch


def mention_alternatives(spans: List[Tuple[int, Span]], context_window: int,
                         forms: Dict[SpanKey, str]) -> Tuple[List[str], List[str], List[int]]:
    """The texts to embed for `spans` ((doc index, entity) pairs): each entity's
    mention input, then the long form (`forms`, see `long_forms`) of each entity
    that is an abbreviation defined in its document.
    RETURNS: (texts, entity labels, entity index of each text)."""
    texts = [mention_input(ent, context_window) for _, ent in spans]
    labels = [ent.label_ for _, ent in spans]
    owner = list(range(len(spans)))
    for k, (i, ent) in enumerate(spans):
        if (i, ent.start_char, ent.end_char) in forms:
            texts.append(forms[(i, ent.start_char, ent.end_char)])
            labels.append(ent.label_)
            owner.append(k)
    return texts, labels, owner


__all__ = ["mention_spans", "set_mentions", "for_linker", "write_spans", "HELD_OUT_KNN", "held_out_key", "has_alnum", "mention_input", "span_of_input",
           "gold_mentions", "linkable_gold", "training_spans", "long_forms", "mention_alternatives", "mention_batches", "PIPE_MENTIONS", "PIPE_MAX_FACTOR"]

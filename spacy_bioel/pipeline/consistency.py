"""Document-level consistency of an NER's mentions (issue 73): what one sentence
says about a string holds in the rest of its document.

- **Abbreviations** (on by default): where a document defines a short form
  ("Stevens-Johnson syndrome (SJS)", Schwartz & Hearst 2003), the short form is a
  mention wherever its long form is one (or a mention ends the long form and
  covers more than half of it), and the long form wherever the short form is one.
- **Repeats** (off by default): every other occurrence of a mention's exact text
  is a mention too.

Spans are only added, never removed or changed: an occurrence that overlaps a
mention, or whose edges are not token edges, is left alone (and counted). The
added span carries the label of the mention that implied it. Chosen on dev with
the NER trained on train only (docs/results/e2e.md, "Document consistency and the
linker's score"):
abbreviations help both corpora, repeats do not add to them.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import filter_spans

from .abbreviations import find_abbreviations
from ..validation import as_bool

# a long form is a mention when a mention is its tail and covers more than this share of it
# ("familial [adenomatous polyposis]")
TAIL_SHARE = 0.5


def occurrences(text: str, string: str, ignore_case: bool) -> Iterator[Tuple[int, int]]:
    """(start, end) characters of each occurrence of `string` in `text` that is not
    inside a longer word (any white space between its words: a line break too)."""
    words = r"\s+".join(re.escape(word) for word in string.split())
    if not words:
        return
    pattern = re.compile(r"(?<!\w)" + words + r"(?!\w)", re.IGNORECASE if ignore_case else 0)
    for match in pattern.finditer(text):
        yield match.start(), match.end()


def long_form_label(long_form: str, labels: Dict[str, str]) -> Optional[str]:
    """The label of the mention that makes `long_form` one (lower-cased texts ->
    labels in `labels`): the long form itself, or a mention that ends it and covers
    more than TAIL_SHARE of it; None when none does."""
    lowered = long_form.lower()
    if lowered in labels:
        return labels[lowered]
    tails = [text for text in labels
             if lowered.endswith(text) and len(text) > TAIL_SHARE * len(lowered)
             and (len(text) == len(lowered) or not lowered[-len(text) - 1].isalnum())]
    return labels[max(tails, key=len)] if tails else None


def implied_spans(doc: Doc, abbreviations: bool = True, repeats: bool = False
                  ) -> List[Tuple[int, int, str, str]]:
    """(start char, end char, label, why) of the occurrences `doc.ents` imply, in
    order found; the mentions themselves and the occurrences overlapping them are
    among them (the component leaves those out)."""
    out: List[Tuple[int, int, str, str]] = []
    ents = list(doc.ents)
    if abbreviations and ents:
        lowered = {ent.text.lower(): ent.label_ for ent in ents}
        exact = {ent.text: ent.label_ for ent in ents}
        for short_form, long_form in find_abbreviations(doc.text).items():
            label = long_form_label(long_form, lowered)
            if label is not None:
                out += [(s, e, label, "short_form") for s, e in occurrences(doc.text, short_form, False)]
            elif short_form in exact:
                out += [(s, e, exact[short_form], "long_form")
                        for s, e in occurrences(doc.text, long_form, True)]
    if repeats:
        for text, label in {ent.text: ent.label_ for ent in ents}.items():
            if any(c.isalnum() for c in text):
                out += [(s, e, label, "repeat") for s, e in occurrences(doc.text, text, False)]
    return out


class MentionConsistency:
    """The component: adds to `doc.ents` the spans its mentions imply (see the
    module); `counts` holds what it added and what it left out, and why."""

    def __init__(self, nlp: Language, name: str = "bioel_mention_consistency",
                 abbreviations: bool = True, repeats: bool = False) -> None:
        self.name = name
        self.abbreviations = as_bool("abbreviations", abbreviations)
        self.repeats = as_bool("repeats", repeats)
        self.counts: Counter = Counter()

    def __call__(self, doc: Doc) -> Doc:
        implied = implied_spans(doc, self.abbreviations, self.repeats)
        if not implied:
            return doc
        existing = {(ent.start, ent.end) for ent in doc.ents}
        taken = {i for ent in doc.ents for i in range(ent.start, ent.end)}
        candidates: Dict[Tuple[int, int], Tuple[Span, str]] = {}
        seen = set()
        for start, end, label, why in implied:
            if (start, end) in seen:  # implied twice: the first reason counts
                continue
            seen.add((start, end))
            span = doc.char_span(start, end, label=label)
            if span is None:
                self.counts["skipped_not_token_aligned"] += 1
                continue
            key = (span.start, span.end)
            if key in existing or key in candidates:
                continue
            if any(i in taken for i in range(span.start, span.end)):
                self.counts["skipped_overlapping_a_mention"] += 1
            else:
                candidates[key] = (span, why)
        kept = filter_spans([span for span, _ in candidates.values()])
        if len(kept) < len(candidates):  # implied spans that overlap each other: the longest kept
            self.counts["skipped_overlapping_a_mention"] += len(candidates) - len(kept)
        for span in kept:
            self.counts[f"added_{candidates[(span.start, span.end)][1]}"] += 1
        if kept:
            doc.ents = sorted(list(doc.ents) + kept, key=lambda s: s.start)
        return doc

    def pipe(self, stream: Iterable[Doc], batch_size: int = 128) -> Iterator[Doc]:
        for doc in stream:
            yield self(doc)


@Language.factory("bioel_mention_consistency", assigns=["doc.ents"], requires=["doc.ents"],
                  default_config={"abbreviations": True, "repeats": False})
def make_mention_consistency(nlp: Language, name: str, abbreviations: bool,
                             repeats: bool) -> MentionConsistency:
    """Document-level consistency of the mentions an NER before it found: see
    `spacy_bioel.pipeline.consistency`."""
    return MentionConsistency(nlp, name, abbreviations=abbreviations, repeats=repeats)


__all__ = ["MentionConsistency", "implied_spans", "long_form_label", "occurrences",
           "make_mention_consistency"]

"""Source-independent mention/document records, the conversion report and the
Doc builder that guarantees every gold mention aligns with tokens."""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple, Union

from ..kb.ids import COMPOSITE_SEPARATORS, parse_gold_ids, split_gold_ids
from ..kb.knowledge_base import NIL, KnowledgeBase

if TYPE_CHECKING:  # the records and the report need no spaCy (the pure-torch GPU check reads them)
    from spacy.language import Language
    from spacy.tokens import Doc, Span

logger = logging.getLogger(__name__)

OVERLAPS_SPANS_KEY = "bioel_overlaps"
DOC_ID_KEY = "bioel_doc_id"


@dataclass(frozen=True)
class Mention:
    """A gold mention: character offsets, text, type and gold concept id(s).

    concept_ids (Tuple[str, ...]): Atomic ids; empty for NIL.
    composite (str): '' for one id, '|' for alternatives, '+' for a conjunction.
    line (int): Source line, for messages.
    """

    start: int
    end: int
    text: str
    label: str
    concept_ids: Tuple[str, ...]
    composite: str = ""
    line: int = 0

    @property
    def kb_id(self) -> str:
        """RETURNS (str): The `Span.kb_id_` string: 'NIL', 'D1', 'D1|D2' or 'D1+D2'."""
        if not self.concept_ids:
            return NIL
        return (self.composite or "|").join(self.concept_ids)


@dataclass
class SourceDocument:
    doc_id: str
    text: str
    mentions: List[Mention] = field(default_factory=list)
    line: int = 0


class ConversionReport:
    """Counts (and a few examples) of everything a converter kept, repaired or
    skipped; written as JSON next to the converted corpus."""

    def __init__(self, source: str = "") -> None:
        self.source = source
        self.counts: Counter = Counter()
        self.examples: Dict[str, List[str]] = {}

    def add(self, kind: str, example: Optional[str] = None, n: int = 1) -> None:
        self.counts[kind] += n
        if example is not None:
            bucket = self.examples.setdefault(kind, [])
            if len(bucket) < 10:
                bucket.append(example)

    def merge(self, other: "ConversionReport") -> None:
        self.counts.update(other.counts)
        for kind, examples in other.examples.items():
            bucket = self.examples.setdefault(kind, [])
            bucket.extend(examples[: max(0, 10 - len(bucket))])

    def to_dict(self) -> Dict[str, object]:
        return {"source": self.source, "counts": dict(sorted(self.counts.items())),
                "examples": self.examples}


MISSING_POLICIES = ("keep", "nil", "error")


def normalize_mention_ids(mention: Mention, kb: Optional[KnowledgeBase], missing: str,
                          report: ConversionReport, where: str) -> Optional[Mention]:
    """Resolve a mention's ids against the KB under the `missing` policy.

    missing (str): 'keep' (keep unknown ids as written, counted), 'nil'
        (drop unknown ids; a mention left without ids becomes NIL, counted) or
        'error' (raise E055).
    """
    from ..errors import CorpusFormatError, Errors

    if kb is None or not mention.concept_ids:
        return mention
    resolved: List[str] = []
    for concept_id in mention.concept_ids:
        primary = kb.resolve(concept_id)
        if primary is None:
            report.add("ids_missing_from_kb", f"{where}: {concept_id}")
            if missing == "error":
                raise CorpusFormatError(Errors.E055.format(path=where.rsplit(":", 1)[0],
                                                           line=mention.line, concept_id=concept_id))
            if missing == "keep":
                resolved.append(concept_id)
        else:
            if primary != concept_id:
                report.add("ids_resolved_to_primary", f"{concept_id}->{primary}")
            resolved.append(primary)
    deduped = tuple(dict.fromkeys(resolved))
    if not deduped:
        report.add("mentions_relabelled_nil", f"{where}: {mention.text}")
    composite = mention.composite if len(deduped) > 1 else ""
    return Mention(mention.start, mention.end, mention.text, mention.label, deduped, composite,
                   mention.line)


def align_mention(text: str, mention: Mention, path: Union[str, Path], window: int,
                  misaligned: str, report: ConversionReport) -> Optional[Mention]:
    """`mention` checked against the document `text` it annotates: every reader's
    one check of offsets against text (`convert pubtator`, `link-corpus`).

    Offsets outside the text are E058. Where the text at the offsets differs from
    the mention's only by white space the mention is kept (offsets covering
    surrounding white space are trimmed to it, counted); otherwise the mention is
    searched for within `window` characters and moved to the nearest match
    (counted as 'offsets_repaired'); if none, `misaligned` = 'error' is E051 and
    'skip' returns None (counted as 'misaligned_mentions_skipped').
    """
    from ..errors import CorpusFormatError
    from ..errors import Errors as E

    if mention.start >= mention.end or mention.end > len(text) or mention.start < 0:
        raise CorpusFormatError(E.E058.format(path=f"{path}, line {mention.line}",
                                              start=mention.start, end=mention.end,
                                              length=len(text)))
    found = text[mention.start:mention.end]
    if found == mention.text or found.strip() == mention.text.strip():
        if found != mention.text:
            report.add("mention_whitespace_differs", f"line {mention.line}: {mention.text!r}")
        stripped = found.strip()
        if stripped == found:
            return mention
        # Offsets that include surrounding whitespace cannot be token boundaries:
        # trim them to the mention's text (counted).
        start = mention.start + len(found) - len(found.lstrip())
        report.add("mention_whitespace_trimmed",
                   f"line {mention.line}: {mention.start}-{mention.end}->"
                   f"{start}-{start + len(stripped)}")
        return Mention(start, start + len(stripped), stripped, mention.label,
                       mention.concept_ids, mention.composite, mention.line)
    target = mention.text.strip()
    lo = max(0, mention.start - window)
    hits = []
    position = text.find(target, lo)
    while position != -1 and position <= mention.start + window:
        hits.append(position)
        position = text.find(target, position + 1)
    if hits:
        best = min(hits, key=lambda p: abs(p - mention.start))
        report.add("offsets_repaired", f"line {mention.line}: {mention.start}->{best}")
        return Mention(best, best + len(target), target, mention.label, mention.concept_ids,
                       mention.composite, mention.line)
    if misaligned == "skip":
        report.add("misaligned_mentions_skipped", f"line {mention.line}: {mention.text!r}")
        return None
    raise CorpusFormatError(E.E051.format(path=path, line=mention.line, mention=mention.text,
                                          start=mention.start, end=mention.end, found=found))


def tokens_aligned_to(nlp: Language, text: str, boundaries: Iterable[int]) -> Doc:
    """Tokenise `text` so that every offset in `boundaries` is a token boundary.

    The text is cut at the boundaries, each piece is tokenised with the
    pipeline's tokenizer, and the pieces are joined; `doc.text == text` holds.
    """
    from spacy.tokens import Doc

    cuts = sorted({b for b in boundaries if 0 < b < len(text)})
    words: List[str] = []
    spaces: List[bool] = []
    previous = 0
    for cut in cuts + [len(text)]:
        piece = text[previous:cut]
        previous = cut
        if not piece:
            continue
        for token in nlp.tokenizer(piece):
            words.append(token.text)
            spaces.append(bool(token.whitespace_))
    doc = Doc(nlp.vocab, words=words, spaces=spaces)
    if doc.text != text:  # pragma: no cover - guarded invariant
        raise AssertionError("tokenisation changed the document text")
    return doc


def build_doc(nlp: Language, document: SourceDocument, report: ConversionReport) -> Doc:
    """Make a Doc whose `ents` carry the mentions (label = type, kb_id_ = gold id).

    Mentions that overlap an earlier (longer-first) mention cannot be
    `doc.ents` entries; they go to `doc.spans['bioel_overlaps']` and are counted.
    """
    boundaries = [b for m in document.mentions for b in (m.start, m.end)]
    doc = tokens_aligned_to(nlp, document.text, boundaries)
    doc.user_data[DOC_ID_KEY] = document.doc_id
    ordered = sorted(document.mentions, key=lambda m: (m.start, -(m.end - m.start)))
    ents: List[Span] = []
    overlaps: List[Span] = []
    last_end = -1
    for mention in ordered:
        span = doc.char_span(mention.start, mention.end, label=mention.label, kb_id=mention.kb_id)
        if span is None:  # pragma: no cover - tokens_aligned_to guarantees alignment
            raise AssertionError(f"unaligned span {mention}")
        if mention.start < last_end:
            overlaps.append(span)
            report.add("overlapping_mentions", f"{document.doc_id}:{mention.start}-{mention.end}")
            continue
        ents.append(span)
        last_end = mention.end
    doc.ents = ents
    if overlaps:
        doc.spans[OVERLAPS_SPANS_KEY] = overlaps
    report.add("documents")
    report.add("mentions", n=len(ents))
    report.add("nil_mentions", n=sum(1 for e in ents if e.kb_id_ == NIL))
    report.add("composite_mentions", n=sum(1 for e in ents if len(split_gold_ids(e.kb_id_)) > 1))
    return doc


def single_mention_doc(nlp: Language, doc_id: str, text: str, label: str, kb_id: str) -> Doc:
    """A doc whose one entity spans its whole (stripped) text: a normalisation query."""
    from spacy.tokens import Span

    text = text.strip()
    doc = nlp.make_doc(text)
    doc.user_data[DOC_ID_KEY] = doc_id
    doc.ents = [Span(doc, 0, len(doc), label=label, kb_id=kb_id)]
    return doc


__all__ = ["MISSING_POLICIES", "Mention", "SourceDocument", "ConversionReport", "parse_gold_ids", "split_gold_ids",
           "normalize_mention_ids", "align_mention", "tokens_aligned_to", "build_doc", "single_mention_doc",
           "OVERLAPS_SPANS_KEY", "DOC_ID_KEY"]

"""Linking a piece of text whose mentions are marked in [brackets], or found by
the pipeline's own NER: what `link` and `visualize` share. The mentions go
where the pipeline's linker reads them (`doc.ents`, or its span group)."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from ..errors import BioELError, Errors
from .mentions import mention_spans, set_mentions

_BRACKETED = re.compile(r"\[([^\[\]]+)\]")


def parse_bracketed(text: str) -> Tuple[str, List[Tuple[int, int]]]:
    """Remove [brackets] from `text` and return the plain text with the
    character spans of the bracketed mentions: white space just inside a
    bracket stays in the text and out of the span ('[colon cancer ]' marks
    'colon cancer'); E198 for a bracket that holds only white space."""
    plain: List[str] = []
    spans: List[Tuple[int, int]] = []
    position = 0
    cursor = 0
    for match in _BRACKETED.finditer(text):
        plain.append(text[cursor:match.start()])
        position += match.start() - cursor
        mention = match.group(1)
        if not mention.strip():
            raise BioELError(Errors.E198.format(text=preview(text), why=(
                f"the brackets at character {match.start()} hold only white space")))
        lead = len(mention) - len(mention.lstrip())
        spans.append((position + lead, position + lead + len(mention.strip())))
        plain.append(mention)
        position += len(mention)
        cursor = match.end()
    plain.append(text[cursor:])
    return "".join(plain), spans


def preview(text: str, size: int = 60) -> str:
    return text if len(text) <= size else text[:size - 3] + "..."


def check_label(label: str) -> str:
    """E175 for an entity label that is empty or only white space."""
    if not isinstance(label, str) or not label.strip():
        raise BioELError(Errors.E175.format(name="--label", value=repr(label),
                                            expected="a non-empty entity label, e.g. Disease"))
    return label


def bracketed_doc(nlp: Language, text: str, label: str = "Disease",
                  spans_key: Optional[str] = None) -> Doc:
    """An unprocessed Doc of `text` without its brackets, the bracketed mentions
    as its entities, or as the span group `spans_key` (tokens cut at their edges);
    E198 when there is none."""
    from ..corpora.documents import tokens_aligned_to

    check_label(label)
    plain, spans = parse_bracketed(text)
    if not spans:
        raise BioELError(Errors.E198.format(text=preview(text), why="no [bracketed] mention"))
    doc = tokens_aligned_to(nlp, plain, [b for s in spans for b in s])
    set_mentions(doc, [doc.char_span(s, e, label=label) for s, e in spans], spans_key)
    return doc


def link_text(nlp: Language, text: str, label: str = "Disease") -> Doc:
    """Run `nlp` on `text`: the [bracketed] mentions are the mentions its linker
    reads where there are any (and only they: the pipeline's mention finders do
    not run), else the pipeline's own NER finds them (E198 when it has none or
    finds none, E249 when it writes them where the linker does not read, E248 for
    a text over `nlp.max_length`)."""
    from .loading import find_linker, mention_finders

    linker = find_linker(nlp)
    spans_key = linker.cfg["spans_key"]
    if _BRACKETED.search(text):
        with nlp.select_pipes(disable=mention_finders(nlp, linker)):
            return nlp(bracketed_doc(nlp, text, label, spans_key))
    raise_without_finder(nlp, text)
    doc = nlp(text)
    if not mention_spans(doc, spans_key):
        raise BioELError(Errors.E198.format(text=preview(text),
                                            why="the pipeline's own NER found none"))
    return doc


def raise_without_finder(nlp: Language, text: str, where: str = "The text") -> None:
    """E198 when `nlp` has no NER (or ruler, span categoriser) before its linker
    that writes where the linker reads (E249 when it writes elsewhere): it cannot
    find mentions in plain text, so they must be marked. E248 when `text` is longer
    than `nlp.max_length`, which its NER refuses."""
    from .loading import check_mention_finders, find_linker

    if not check_mention_finders(nlp, find_linker(nlp)):
        raise BioELError(Errors.E198.format(text=preview(text), why=(
            "the pipeline has no NER before its linker, so it cannot find mentions itself")))
    check_length(nlp, text, where)


def check_length(nlp: Language, text: str, where: str = "The text") -> None:
    """E248 when `text` is longer than `nlp.max_length` (spaCy refuses it then)."""
    if len(text) > nlp.max_length:
        raise BioELError(Errors.E248.format(where=where, length=len(text),
                                            max_length=nlp.max_length))


__all__ = ["bracketed_doc", "check_label", "check_length", "link_text", "parse_bracketed",
           "preview", "raise_without_finder"]

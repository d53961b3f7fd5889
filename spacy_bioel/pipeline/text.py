"""Linking a piece of text whose mentions are marked in [brackets], or found by
the pipeline's own NER: what `link` and `visualize` share."""
from __future__ import annotations

import re
from typing import List, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from ..errors import BioELError, Errors

_BRACKETED = re.compile(r"\[([^\[\]]+)\]")


def parse_bracketed(text: str) -> Tuple[str, List[Tuple[int, int]]]:
    """Remove [brackets] from `text` and return the plain text with the
    character spans of the bracketed mentions."""
    plain: List[str] = []
    spans: List[Tuple[int, int]] = []
    position = 0
    cursor = 0
    for match in _BRACKETED.finditer(text):
        plain.append(text[cursor:match.start()])
        position += match.start() - cursor
        mention = match.group(1)
        spans.append((position, position + len(mention)))
        plain.append(mention)
        position += len(mention)
        cursor = match.end()
    plain.append(text[cursor:])
    return "".join(plain), spans


def preview(text: str, size: int = 60) -> str:
    return text if len(text) <= size else text[:size - 3] + "..."


def bracketed_doc(nlp: Language, text: str, label: str = "Disease") -> Doc:
    """An unprocessed Doc of `text` without its brackets, the bracketed mentions
    as its entities (tokens cut at their edges); E198 when there is none."""
    from ..corpora.documents import tokens_aligned_to

    plain, spans = parse_bracketed(text)
    if not spans:
        raise BioELError(Errors.E198.format(text=preview(text), why="no [bracketed] mention"))
    doc = tokens_aligned_to(nlp, plain, [b for s in spans for b in s])
    doc.ents = [doc.char_span(s, e, label=label) for s, e in spans]
    return doc


def link_text(nlp: Language, text: str) -> Doc:
    """Run `nlp` on `text`: the [bracketed] mentions are its entities where there
    are any, else the pipeline's own NER finds them (E198 when it finds none)."""
    if _BRACKETED.search(text):
        return nlp(bracketed_doc(nlp, text))
    raise_without_finder(nlp, text)
    doc = nlp(text)
    if not doc.ents:
        raise BioELError(Errors.E198.format(text=preview(text),
                                            why="the pipeline's own NER found none"))
    return doc


def raise_without_finder(nlp: Language, text: str) -> None:
    """E198 when `nlp` has no NER (or ruler, span categoriser) before its linker:
    it cannot find mentions in plain text, so they must be marked."""
    from .loading import find_linker, mention_finders

    if not mention_finders(nlp, find_linker(nlp)):
        raise BioELError(Errors.E198.format(text=preview(text), why=(
            "the pipeline has no NER before its linker, so it cannot find mentions itself")))


__all__ = ["bracketed_doc", "link_text", "parse_bracketed", "preview", "raise_without_finder"]

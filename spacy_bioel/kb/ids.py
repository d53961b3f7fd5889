"""Gold concept-id fields: atomic ids and composite mentions ('D1|D2'
alternatives, 'D1+D2' conjunctions; '-1' and 'NIL' mean no concept). Shared by
the corpus converters, the linker and the evaluation."""
from __future__ import annotations

from typing import Tuple

from .knowledge_base import NIL

COMPOSITE_SEPARATORS = ("|", "+")


def parse_gold_ids(raw: str) -> Tuple[Tuple[str, ...], str]:
    """Split a gold id field into atomic ids and the composite kind.

    '-1' parts mean "no concept" and are dropped; an id field of only '-1'
    (or 'NIL') is NIL. Whitespace is stripped.
    RETURNS (Tuple[Tuple[str, ...], str]): (ids, '' | '|' | '+').
    """
    value = raw.strip()
    composite = ""
    parts = [value]
    for separator in COMPOSITE_SEPARATORS:
        if separator in value:
            composite = separator
            parts = value.replace("+" if separator == "|" else "|", separator).split(separator)
            break
    ids = tuple(p.strip() for p in parts if p.strip() and p.strip() not in ("-1", NIL))
    if len(ids) < 2:
        composite = ""
    return ids, composite


def split_gold_ids(kb_id: str) -> Tuple[str, ...]:
    """RETURNS (Tuple[str, ...]): the atomic ids of a `Span.kb_id_` ('' or NIL: ())."""
    if not kb_id or kb_id == NIL:
        return ()
    return parse_gold_ids(kb_id)[0]


__all__ = ["COMPOSITE_SEPARATORS", "parse_gold_ids", "split_gold_ids"]

"""The linked concept's cross-references on each decision, and its id in the
vocabulary the linker's `id_space` names (`kb.xrefs.id_in_space`)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Optional

from ..kb.xrefs import id_in_space


def with_xrefs(predictions: List[List[Dict[str, Any]]], kb, id_space: Optional[str],
               counts: Counter) -> List[List[Dict[str, Any]]]:
    """Each decision with `xrefs` (the linked concept's cross-references; none
    for NIL) and, with an `id_space`, `space_id` (its id there, or None: written
    'NIL', counted in `counts['id_space_unmapped']`). The decisions themselves
    are not changed (they may be cached)."""
    out: List[List[Dict[str, Any]]] = []
    for decisions in predictions:
        row = []
        for result in decisions:
            concept = None if result["is_nil"] or not result["candidates"] else \
                kb.get(result["candidates"][0][0])
            extra: Dict[str, Any] = {"xrefs": concept.xrefs if concept is not None else ()}
            if id_space and concept is not None:
                extra["space_id"] = id_in_space(concept, id_space)
                if extra["space_id"] is None:
                    counts["id_space_unmapped"] += 1
            row.append({**result, **extra})
        out.append(row)
    return out


__all__ = ["with_xrefs"]

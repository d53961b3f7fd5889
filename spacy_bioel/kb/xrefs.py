"""Ids in another vocabulary: reading a concept's cross-references.

A KB's concepts carry the cross-references of their source (`Concept.xrefs`,
'PREFIX:ID': OBO `xref` clauses, MEDIC / CTD alternative ids, UMLS atoms' source
codes). An *id space* names a vocabulary ('MESH', 'UMLS', 'OMIM', 'ICD10CM',
'NCI', 'SNOMEDCT_US', 'ORDO', 'DOID', ...); `id_in_space` returns a concept's id in
it: its first cross-reference whose prefix is that space (prefixes are compared
after `space_of`, so DOID's 'UMLS_CUI:' and UMLS's own concepts, HP's 'UMLS:',
'MSH:' and 'MESH:', and dated SNOMED prefixes meet), without the prefix; or the
concept's own id when it is in that space; or None.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence

from .concept import Concept

# spellings of one vocabulary across sources -> the name `space_of` gives it
ALIASES: Dict[str, str] = {
    "UMLS_CUI": "UMLS", "CUI": "UMLS", "UMLS": "UMLS",
    "MSH": "MESH", "MESH": "MESH",
    "NCIT": "NCI", "NCI": "NCI",
    "ORPHA": "ORDO", "ORPHANET": "ORDO", "ORDO": "ORDO",
    "ICD-10": "ICD10", "ICD10": "ICD10", "ICD10CM": "ICD10CM", "ICD-10-CM": "ICD10CM",
    "ICD9CM": "ICD9CM", "ICD-9-CM": "ICD9CM",
    "MIM": "OMIM", "OMIM": "OMIM",
    "DO": "DOID", "DOID": "DOID",
}
_DATED = re.compile(r"^(SNOMEDCT(?:_US)?)(?:_\d{4}_\d{2}_\d{2})?$")
_CUI = re.compile(r"^C\d{7}$")


def space_of(prefix: str) -> str:
    """The id space a prefix (or a user's `--id-space`) names: upper case, the
    spellings of `ALIASES` and dated SNOMED CT prefixes read as one."""
    key = prefix.strip().upper()
    dated = _DATED.match(key)
    if dated:
        return "SNOMEDCT_US"
    return ALIASES.get(key, key)


def split_xref(xref: str) -> tuple:
    """'PREFIX:ID' -> (space_of(PREFIX), ID); ('', xref) without a prefix."""
    prefix, sep, local = xref.partition(":")
    return (space_of(prefix), local.strip()) if sep else ("", xref)


def id_in_space(concept: Concept, space: str) -> Optional[str]:
    """The id of `concept` in the vocabulary `space` (see the module), or None."""
    return id_of(concept.concept_id, concept.xrefs, space)


def id_of(concept_id: str, xrefs: Sequence[str], space: str) -> Optional[str]:
    """`id_in_space` of a concept given by its id and cross-references."""
    wanted = space_of(space)
    for xref in xrefs:
        prefix, local = split_xref(xref)
        if prefix == wanted and local:
            return local
    prefix, local = split_xref(concept_id)
    if prefix == wanted:
        return local
    if wanted == "UMLS" and _CUI.match(concept_id):
        return concept_id
    if wanted == "MESH" and re.match(r"^[CD]\d{6,9}$", concept_id):
        return concept_id
    return None


def check_space(kb, space: str) -> None:
    """E261 when no concept of `kb` has an id in `space` (`id_in_space`): a
    misspelt `id_space` would otherwise write every mention as NIL. Stops at the
    first concept that has one; an empty KB passes."""
    from ..errors import BioELError, Errors

    for concept in kb:
        if id_in_space(concept, space) is not None:
            return
    if not len(kb):
        return
    found = spaces(kb)
    ranked = sorted(found.items(), key=lambda item: (-item[1], item[0]))[:12]  # most first, then by name
    listed = ", ".join(f"{name} ({count:,})" for name, count in ranked) or "none"
    raise BioELError(Errors.E261.format(space=space, kb=kb.name, n=f"{len(kb):,}", spaces=listed))


def spaces(concepts: Iterable[Concept]) -> Counter:
    """How many concepts have at least one cross-reference in each space."""
    out: Counter = Counter()
    for concept in concepts:
        out.update({split_xref(x)[0] for x in concept.xrefs if ":" in x})
    return out


def coverage(kb, space: str, concept_ids: Optional[Sequence[str]] = None) -> Dict[str, object]:
    """The share of `kb`'s concepts (or of `concept_ids`, e.g. a corpus' gold
    concepts, resolved through the KB's alternative ids) that have an id in
    `space`, and how many have more than one."""
    ids: List[str] = list(concept_ids) if concept_ids is not None else [c.concept_id for c in kb]
    mapped = several = unknown = 0
    wanted = space_of(space)
    for cid in ids:
        concept = kb.get(kb.resolve(cid)) if kb.resolve(cid) else None
        if concept is None:
            unknown += 1
            continue
        if id_in_space(concept, space) is not None:
            mapped += 1
            several += sum(1 for x in concept.xrefs if split_xref(x)[0] == wanted) > 1
    known = len(ids) - unknown
    return {"space": wanted, "concepts": len(ids), "not_in_kb": unknown, "mapped": mapped,
            "share": round(mapped / known, 4) if known else 0.0, "several": several}


def reachable(kb, space: str) -> set:
    """Every id of `space` that some concept of `kb` is written as (`id_in_space`)
    or cross-references."""
    wanted = space_of(space)
    out = {local for c in kb for prefix, local in map(split_xref, c.xrefs) if prefix == wanted}
    out.update(i for i in (id_in_space(c, space) for c in kb) if i)
    return out


def gold_coverage(kb, space: str, gold_ids: Sequence[str]) -> Dict[str, object]:
    """How many of a corpus' gold ids the linker can write in `space`: a gold id
    of the KB (or an alternative id of one) whose concept has an id there, or an
    id of that space some KB concept maps to (a MeSH gold id against DOID: 'D003110'
    or 'MESH:D003110')."""
    wanted = space_of(space)
    ids = sorted(set(gold_ids))
    ends = reachable(kb, space)
    hit = 0
    for gold in ids:
        primary = kb.resolve(gold)
        if primary is not None:
            hit += id_in_space(kb.get(primary), space) is not None
            continue
        prefix, local = split_xref(gold)
        hit += (local if prefix == wanted else gold) in ends
    return {"space": wanted, "gold_ids": len(ids), "mapped": hit,
            "share": round(hit / len(ids), 4) if ids else 0.0}


__all__ = ["ALIASES", "check_space", "coverage", "gold_coverage", "reachable", "id_in_space", "id_of", "space_of", "spaces", "split_xref"]

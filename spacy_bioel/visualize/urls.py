"""Where a concept id can be looked up: one URL template per id prefix.

A CURIE `PREFIX:LOCAL` uses DEFAULT_URLS[PREFIX] when the prefix is known
(MeSH, OMIM, UMLS, MedDRA, SNOMED CT, Orphanet, ...), else the OBO Foundry PURL
`http://purl.obolibrary.org/obo/PREFIX_LOCAL`, which resolves for every OBO
ontology (DOID, HP, MONDO, CL, UBERON, GO, ...). Bare ids are recognised by
shape: a MeSH descriptor or supplementary record (`D003110`, `C535575`,
`C000656484`; MEDIC strips the `MESH:` prefix) and a UMLS CUI (`C0009402`,
C + 7 digits). Anything else has no URL (None). A user's own templates
(`{id}`: the local part, `{curie}`: the whole id) override or extend these.
"""
from __future__ import annotations

import re
from typing import Dict, Mapping, Optional
from urllib.parse import quote

OBO_PURL = "http://purl.obolibrary.org/obo/{prefix}_{id}"
DEFAULT_URLS: Dict[str, str] = {
    "MESH": "https://meshb.nlm.nih.gov/record/ui?ui={id}",
    "OMIM": "https://omim.org/entry/{id}",
    "UMLS": "https://uts.nlm.nih.gov/uts/umls/concept/{id}",
    "MEDDRA": "https://identifiers.org/meddra:{id}",
    "SNOMEDCT": "http://snomed.info/id/{id}",
    "SNOMEDCT_US": "http://snomed.info/id/{id}",
    "ORPHANET": "https://www.orpha.net/en/disease/detail/{id}",
    "ORDO": "http://www.orpha.net/ORDO/Orphanet_{id}",
    "NCBIGENE": "https://www.ncbi.nlm.nih.gov/gene/{id}",
    "NCIT": OBO_PURL,
}
_MESH = re.compile(r"^(?:D\d{6}|D\d{9}|C\d{6}|C\d{9})$")
_CUI = re.compile(r"^C\d{7}$")
SAFE = ":_.-~"  # kept as they are in an id; anything else is %-encoded
_CURIE = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*):(\S+)$")


def concept_url(concept_id: str, templates: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The URL of `concept_id`, or None (NIL, or an id of no known shape)."""
    if not concept_id or concept_id == "NIL":
        return None
    urls = {**DEFAULT_URLS, **{k.upper(): v for k, v in (templates or {}).items()}}
    match = _CURIE.match(concept_id)
    if match:
        prefix, local = match.group(1), match.group(2)
        template = urls.get(prefix.upper())
        if template is None:
            if not re.match(r"^[A-Za-z0-9_]+$", local):
                return None
            template = OBO_PURL
        return template.format(prefix=quote(prefix, safe=""), id=quote(local, safe=SAFE),
                               curie=quote(concept_id, safe=SAFE))
    if _CUI.match(concept_id):
        return urls["UMLS"].format(prefix="UMLS", id=concept_id, curie=concept_id)
    if _MESH.match(concept_id):
        return urls["MESH"].format(prefix="MESH", id=concept_id, curie=concept_id)
    return None


def parse_url_options(values) -> Dict[str, str]:
    """`PREFIX=TEMPLATE` command-line values as a template map."""
    out: Dict[str, str] = {}
    for value in values or ():
        prefix, sep, template = value.partition("=")
        if not sep or "{id}" not in template and "{curie}" not in template:
            from ..errors import BioELError, Errors

            raise BioELError(Errors.E175.format(name="--url", value=repr(value),
                                                expected="PREFIX=TEMPLATE with {id} or {curie}"))
        out[prefix.strip().upper()] = template.strip()
    return out


__all__ = ["DEFAULT_URLS", "OBO_PURL", "concept_url", "parse_url_options"]

"""Loaders for CTD's MEDIC disease vocabulary in its two common forms.

* the DNorm / BioSyn dictionary file, one concept a line:
  ``ID[|ALT_ID...]||Preferred Name|Synonym|...`` (e.g. ``medic_06Jul2012.txt``);
* CTD's ``CTD_diseases.tsv(.gz)`` report (``DiseaseName, DiseaseID, AltDiseaseIDs,
  Definition, ParentIDs, TreeNumbers, ParentTreeNumbers, Synonyms, SlimMappings``).

Id policy (both forms): MeSH ids are stored without prefix ('D009203', as the
NCBI Disease and BC5CDR corpora write them), OMIM ids with the 'OMIM:' prefix
('OMIM:215600'); the KB strips a 'MESH:' prefix when resolving a query id.
When a DNorm line lists several ids, the first MeSH (C/D) id is the primary
id and the others are alternate ids that resolve to it.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..errors import Errors, KBFormatError
from ..progress import progress_bar
from .concept import Concept, unique_names
from .io import iter_lines
from .knowledge_base import KnowledgeBase

logger = logging.getLogger(__name__)

_MESH_ID = re.compile(r"^[CD]\d{6,9}$")
_OMIM_NUMBER = re.compile(r"^\d+$")
MEDIC_STRIP_PREFIXES = ("MESH:",)


def normalize_medic_id(raw: str) -> str:
    """Normalise a MEDIC / MeSH / OMIM id: strip whitespace and 'MESH:', prefix
    bare OMIM numbers with 'OMIM:'.

    raw (str): e.g. ' MESH:C535662', '277900', 'OMIM:215600', 'D009203'.
    RETURNS (str): e.g. 'C535662', 'OMIM:277900', 'OMIM:215600', 'D009203'.
    """
    value = raw.strip()
    if value.startswith("MESH:"):
        value = value[5:].strip()
    if _OMIM_NUMBER.match(value):
        value = "OMIM:" + value
    return value


def medic_xrefs(concept_id: str, alt_ids: Sequence[str]) -> Tuple[str, ...]:
    """The cross-references of a MEDIC / CTD concept: its MeSH id as 'MESH:ID'
    (a MeSH primary id), then its alternative ids ('OMIM:ID'; CTD's 'DO:DOID:ID'
    read as 'DOID:ID'), in the source's order."""
    out = [f"MESH:{concept_id}"] if _MESH_ID.match(concept_id) else []
    for alt in alt_ids:
        alt = alt[3:] if alt.startswith("DO:DOID:") else alt
        if _MESH_ID.match(alt):
            alt = f"MESH:{alt}"
        if ":" in alt and alt not in out:
            out.append(alt)
    return tuple(out)


def load_medic_dictionary(path: Union[str, Path], *, name: Optional[str] = None,
                          progress: bool = True, encoding: Optional[str] = None) -> KnowledgeBase:
    """Load MEDIC in the DNorm / BioSyn dictionary form.

    path (Union[str, Path]): The dictionary file (plain or .gz).
    name (Optional[str]): Label for the KB (default: the file name).
    progress (bool): Show a progress bar.
    RETURNS (KnowledgeBase): MeSH-primary concepts with OMIM / MeSH alt ids.

    Raises E001 for a line without the empty id/name separator or without a
    name, E002 for a duplicate primary id.
    """
    kb = KnowledgeBase(strip_prefixes=MEDIC_STRIP_PREFIXES, name=name or Path(path).name)
    first_line: Dict[str, int] = {}
    expected = "'ID[|ALT_ID...]||Preferred Name|Synonym|...'"
    for number, line in progress_bar(iter_lines(path, encoding), desc=f"MEDIC {Path(path).name}",
                                     unit=" lines", disable=not progress):
        if not line.strip():
            continue
        fields = line.split("|")
        try:
            separator = fields.index("")
        except ValueError:
            raise KBFormatError(Errors.E001.format(path=path, line=number, fmt="MEDIC dictionary",
                                                   problem="no '||' between ids and names",
                                                   expected=expected))
        ids = [normalize_medic_id(f) for f in fields[:separator] if f.strip()]
        names = fields[separator + 1:]
        if not ids:
            raise KBFormatError(Errors.E001.format(path=path, line=number, fmt="MEDIC dictionary",
                                                   problem="no concept id", expected=expected))
        if not names or not names[0].strip():
            raise KBFormatError(Errors.E003.format(path=path, line=number, concept_id=ids[0]))
        mesh = [i for i in ids if _MESH_ID.match(i)]
        primary = mesh[0] if mesh else ids[0]
        alt_ids = tuple(i for i in ids if i != primary)
        canonical = names[0].strip()
        kb.add(Concept(primary, canonical, synonyms=unique_names(names[1:], canonical), alt_ids=alt_ids,
                       xrefs=medic_xrefs(primary, alt_ids)),
               path=path, line=number, first_line=first_line.get(primary))
        first_line[primary] = number
    kb.finish_loading(path, "medic")
    return kb


CTD_COLUMNS = ("DiseaseName", "DiseaseID", "AltDiseaseIDs", "Definition", "ParentIDs",
               "TreeNumbers", "ParentTreeNumbers", "Synonyms", "SlimMappings")


def _split_multi(value: str) -> List[str]:
    return [v for v in (part.strip() for part in value.split("|")) if v]


def load_ctd_diseases(path: Union[str, Path], *, name: Optional[str] = None,
                      progress: bool = True, encoding: Optional[str] = None) -> KnowledgeBase:
    """Load CTD's ``CTD_diseases.tsv(.gz)`` report.

    Names, synonyms, definitions, alt ids (OMIM, DO) and ParentIDs (as 'is_a'
    relations) are kept; SlimMappings become the concept's types.

    path (Union[str, Path]): The TSV report (plain or .gz), '#' header lines allowed.
    RETURNS (KnowledgeBase): One concept per row.
    """
    kb = KnowledgeBase(strip_prefixes=MEDIC_STRIP_PREFIXES, name=name or Path(path).name)
    first_line: Dict[str, int] = {}
    expected = f"{len(CTD_COLUMNS)} tab-separated columns: {', '.join(CTD_COLUMNS)}"
    for number, line in progress_bar(iter_lines(path, encoding), desc=f"CTD {Path(path).name}",
                                     unit=" lines", disable=not progress):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < len(CTD_COLUMNS) - 1 or len(fields) > len(CTD_COLUMNS):
            raise KBFormatError(Errors.E001.format(path=path, line=number, fmt="CTD diseases TSV",
                                                   problem=f"{len(fields)} columns",
                                                   expected=expected))
        fields += [""] * (len(CTD_COLUMNS) - len(fields))
        disease_name, disease_id, alt_ids, definition, parents = fields[:5]
        synonyms, slims = fields[7], fields[8]
        if not disease_id.strip():
            raise KBFormatError(Errors.E001.format(path=path, line=number, fmt="CTD diseases TSV",
                                                   problem="empty DiseaseID", expected=expected))
        concept_id = normalize_medic_id(disease_id)
        if not disease_name.strip():
            raise KBFormatError(Errors.E003.format(path=path, line=number, concept_id=concept_id))
        relations = tuple(("is_a", normalize_medic_id(p)) for p in _split_multi(parents))
        if any(target == concept_id for _, target in relations):
            raise KBFormatError(Errors.E014.format(path=path, line=number, concept_id=concept_id,
                                                   relation="is_a"))
        canonical = disease_name.strip()
        alt_list = tuple(normalize_medic_id(a) for a in _split_multi(alt_ids))
        kb.add(Concept(concept_id, canonical,
                       synonyms=unique_names(_split_multi(synonyms), canonical),
                       types=tuple(_split_multi(slims)),
                       definition=definition.strip() or None,
                       alt_ids=alt_list,
                       relations=relations, xrefs=medic_xrefs(concept_id, alt_list)),
               path=path, line=number, first_line=first_line.get(concept_id))
        first_line[concept_id] = number
    kb.finish_loading(path, "ctd")
    return kb


__all__ = ["medic_xrefs", "load_medic_dictionary", "load_ctd_diseases", "normalize_medic_id"]

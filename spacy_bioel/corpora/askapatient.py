"""AskAPatient fold files (Limsopatham & Collier 2016) -> one Doc per query, and
the KB of the dataset's own concepts (SNOMED CT / AMT ids with descriptions).

Rows are ``concept_id<TAB>concept_description<TAB>social-media phrase``. The
released train file is not valid UTF-8 (Latin-1 bytes): each line is decoded
as UTF-8 and, failing that, as Latin-1; such lines are counted.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc

from ..errors import CorpusFormatError, Errors, KBFormatError
from ..kb.concept import Concept
from ..kb.knowledge_base import KnowledgeBase
from .documents import ConversionReport, single_mention_doc

logger = logging.getLogger(__name__)
DEFAULT_LABEL = "MedicalConcept"


def read_askapatient(path: Union[str, Path], report: Optional[ConversionReport] = None
                     ) -> Iterator[Tuple[int, str, str, str]]:
    """Yield (line, concept_id, description, phrase). Raises E053 on a bad row."""
    path = Path(path)
    if not path.exists():
        from ..errors import BioELError
        raise BioELError(Errors.E008.format(path=path))
    report = report if report is not None else ConversionReport(str(path))
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line = raw.decode("latin-1")
                report.add("latin1_lines", f"line {number}")
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 3:
                raise CorpusFormatError(Errors.E053.format(path=path, line=number,
                                                           problem=f"{len(fields)} fields"))
            concept_id, description, phrase = (f.strip() for f in fields)
            if not concept_id or not phrase:
                raise CorpusFormatError(Errors.E053.format(
                    path=path, line=number, problem="empty concept id" if not concept_id
                    else "empty phrase"))
            yield number, concept_id, description, phrase


def convert_askapatient(nlp: Language, path: Union[str, Path], *, label: str = DEFAULT_LABEL
                        ) -> Tuple[List[Doc], ConversionReport]:
    """Convert one fold file: one Doc per row, its single entity spanning the phrase."""
    report = ConversionReport(str(path))
    docs = []
    for number, concept_id, _description, phrase in read_askapatient(path, report):
        docs.append(single_mention_doc(nlp, f"{Path(path).name}:{number}", phrase, label,
                                       concept_id))
        report.add("documents")
        report.add("mentions")
    return docs, report


def load_askapatient_kb(paths: Sequence[Union[str, Path]], *, name: str = "AskAPatient concepts"
                        ) -> KnowledgeBase:
    """Build the KB of AskAPatient concepts from fold files (id -> description).

    A concept seen with several descriptions keeps the first as canonical name
    and the others as synonyms. Raises KBFormatError E003 on an empty description.
    """
    names: Dict[str, List[str]] = {}
    first_line: Dict[str, str] = {}
    for path in paths:
        for number, concept_id, description, _phrase in read_askapatient(path):
            if not description:
                raise KBFormatError(Errors.E003.format(path=path, line=number,
                                                       concept_id=concept_id))
            bucket = names.setdefault(concept_id, [])
            first_line.setdefault(concept_id, f"{path}:{number}")
            if description not in bucket:
                bucket.append(description)
    kb = KnowledgeBase(name=name)
    for concept_id, descriptions in names.items():
        kb.add(Concept(concept_id, descriptions[0], tuple(descriptions[1:])))
    kb.meta.update({"source": [str(p) for p in paths], "format": "askapatient"})
    return kb


__all__ = ["read_askapatient", "convert_askapatient", "load_askapatient_kb", "DEFAULT_LABEL"]

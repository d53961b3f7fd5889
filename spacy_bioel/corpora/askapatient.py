"""AskAPatient fold files (Limsopatham & Collier 2016) -> one Doc per query, and
the KB of the dataset's own concepts (SNOMED CT / AMT ids with descriptions).

Rows are ``concept_id<TAB>concept_description<TAB>social-media phrase``. The
released train file is not valid UTF-8 (Latin-1 bytes): each line is decoded
as UTF-8 and, failing that, as Latin-1; such lines are counted.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc

from ..kb.askapatient import load_askapatient_kb, read_askapatient_rows
from .documents import ConversionReport, single_mention_doc

logger = logging.getLogger(__name__)
DEFAULT_LABEL = "MedicalConcept"


def read_askapatient(path: Union[str, Path], report: Optional[ConversionReport] = None,
                     encoding: Optional[str] = None) -> Iterator[Tuple[int, str, str, str]]:
    """Yield (line, concept_id, description, phrase); Latin-1 lines are counted
    in `report`. Raises E053 on a bad row."""
    report = report if report is not None else ConversionReport(str(path))
    return read_askapatient_rows(path, on_latin1=lambda where: report.add("latin1_lines", where),
                                 encoding=encoding)


def convert_askapatient(nlp: Language, path: Union[str, Path], *, label: str = DEFAULT_LABEL,
                        encoding: Optional[str] = None) -> Tuple[List[Doc], ConversionReport]:
    """Convert one fold file: one Doc per row, its single entity spanning the phrase."""
    report = ConversionReport(str(path))
    docs = []
    for number, concept_id, _description, phrase in read_askapatient(path, report, encoding):
        docs.append(single_mention_doc(nlp, f"{Path(path).name}:{number}", phrase, label,
                                       concept_id))
        report.add("documents")
        report.add("mentions")
    return docs, report


__all__ = ["read_askapatient", "convert_askapatient", "load_askapatient_kb", "DEFAULT_LABEL"]

"""The AskAPatient knowledge base: the dataset's own concepts (SNOMED CT / AMT
ids with descriptions), read from its fold files (Limsopatham & Collier 2016).

Rows are ``concept_id<TAB>concept_description<TAB>social-media phrase``. The
released train file is not valid UTF-8 (Windows-1252 / Latin-1 bytes): each line
is decoded as UTF-8 and, failing that, as Windows-1252 (which agrees with Latin-1
on letters and also reads curly quotes), reported to the caller, who counts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ..errors import CorpusFormatError, Errors, KBFormatError
from .io import iter_lines
from .concept import Concept
from .knowledge_base import KnowledgeBase


def read_askapatient_rows(path: Union[str, Path],
                          on_latin1: Optional[Callable[[str], None]] = None,
                          encoding: Optional[str] = None) -> Iterator[Tuple[int, str, str, str]]:
    """Yield (line, concept_id, description, phrase). A line that is not UTF-8 (or
    `encoding`) is decoded as Latin-1 and reported to `on_latin1` ('line N').
    Raises E053 on a bad row, E021 for a file without rows (E016-E020: see `io`)."""
    rows = 0
    for number, line in iter_lines(path, encoding, fallback="cp1252",
                                   on_fallback=lambda n: on_latin1 and on_latin1(f"line {n}")):
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
        rows += 1
        yield number, concept_id, description, phrase
    if not rows:
        raise CorpusFormatError(Errors.E021.format(path=path, what="AskAPatient row"))


def load_askapatient_kb(paths: Sequence[Union[str, Path]], *, name: str = "AskAPatient concepts",
                        encoding: Optional[str] = None) -> KnowledgeBase:
    """Build the KB of AskAPatient concepts from fold files (id -> description).

    A concept seen with several descriptions keeps the first as canonical name
    and the others as synonyms. Raises KBFormatError E003 on an empty description.
    """
    names: Dict[str, List[str]] = {}
    first_line: Dict[str, str] = {}
    for path in paths:
        for number, concept_id, description, _phrase in read_askapatient_rows(path, encoding=encoding):
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


__all__ = ["read_askapatient_rows", "load_askapatient_kb"]

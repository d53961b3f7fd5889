"""scispaCy's knowledge-base JSONL format, read and written.

One JSON object a line, as scispaCy's ``KnowledgeBase`` reads it::

    {"concept_id": "C0011849", "canonical_name": "Diabetes Mellitus",
     "aliases": ["DM", "diabetes"], "types": ["T047"], "definition": "..."}

`aliases`, `types` and `definition` may be missing (or null). Plain or gzipped
(``*.gz``) files. scispaCy has no alternate ids, relations or synonym scopes,
so `write_scispacy_jsonl` drops them.
"""
from __future__ import annotations

import gzip
import json
import re
import logging
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import srsly

from ..errors import Errors, KBFormatError
from ..progress import progress_bar
from .concept import Concept, unique_names
from .io import iter_lines
from .knowledge_base import KnowledgeBase

logger = logging.getLogger(__name__)

_EXPECTED = ('one JSON object a line: {"concept_id": str, "canonical_name": str, '
             '"aliases": [str, ...], "types": [str, ...], "definition": str or null}')


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _malformed(path: Union[str, Path], line: int, problem: str) -> KBFormatError:
    return KBFormatError(Errors.E001.format(path=path, line=line, fmt="scispaCy JSONL",
                                            problem=problem, expected=_EXPECTED))


def _string_list(record: Dict[str, Any], key: str, path: Union[str, Path],
                 line: int) -> List[str]:
    value = record.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _malformed(path, line, f"'{key}' is not a list of strings")
    return value


def load_scispacy_jsonl(path: Union[str, Path], *, name: Optional[str] = None,
                        progress: bool = True, encoding: Optional[str] = None) -> KnowledgeBase:
    """Load a KB from scispaCy's JSONL format.

    Aliases become synonyms (stripped, deduplicated, the canonical name left
    out), types stay as given (UMLS TUIs for scispaCy's UMLS KBs). Blank lines
    are skipped.

    path (Union[str, Path]): The JSONL file (plain or .gz).
    name (Optional[str]): Label for the KB (default: the file name).
    progress (bool): Show a progress bar (tqdm, on stderr).
    RETURNS (KnowledgeBase): One concept per line.

    Raises E001 for a line that is not a JSON object, lacks `concept_id` or
    `canonical_name`, or has fields of the wrong type; E002 for a duplicate
    concept id; E003 for an empty canonical name; E012 if the file has no
    concept.
    """
    kb = KnowledgeBase(name=name or Path(path).name)
    first_line: Dict[str, int] = {}
    for number, line in progress_bar(iter_lines(path, encoding), desc=f"scispaCy KB {Path(path).name}",
                                     unit=" lines", disable=not progress):
        if not line.strip():
            continue
        try:
            record = srsly.json_loads(line)
        except ValueError as err:
            raise _malformed(path, number, f"invalid JSON: {err}")
        if not isinstance(record, dict):
            raise _malformed(path, number, f"a JSON {type(record).__name__}, not an object")
        if _SURROGATE_ESCAPE.search(line):  # a \ud800-\udfff escape may stand alone
            try:
                json.dumps(record, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError as err:
                raise _malformed(path, number, f"a string holds a lone surrogate "
                                               f"({err.object[err.start]!r}), which is not Unicode text")
        for key in ("concept_id", "canonical_name"):
            if key not in record:
                raise _malformed(path, number, f"no '{key}'")
            if not isinstance(record[key], str):
                raise _malformed(path, number, f"'{key}' is not a string")
        concept_id = record["concept_id"].strip()
        if not concept_id:
            raise _malformed(path, number, "empty 'concept_id'")
        canonical = record["canonical_name"].strip()
        definition = record.get("definition")
        if definition is not None and not isinstance(definition, str):
            raise _malformed(path, number, "'definition' is not a string or null")
        kb.add(Concept(concept_id, canonical,
                       synonyms=unique_names(_string_list(record, "aliases", path, number), canonical),
                       types=tuple(_string_list(record, "types", path, number)),
                       definition=(definition.strip() or None) if definition else None),
               path=path, line=number, first_line=first_line.get(concept_id))
        first_line[concept_id] = number
    kb.finish_loading(path, "scispacy")
    return kb


def write_scispacy_jsonl(kb: KnowledgeBase, path: Union[str, Path]) -> int:
    """Export a KB to scispaCy's JSONL format (gzipped if `path` ends in .gz),
    readable by scispaCy's ``KnowledgeBase`` and by `load_scispacy_jsonl`.

    Synonyms become `aliases`; alternate ids, relations and synonym scopes
    have no place in the format and are not written.

    kb (KnowledgeBase): The KB to export.
    path (Union[str, Path]): The output file; parent directories are created.
    RETURNS (int): The number of concepts written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        handle = gzip.open(path, "wt", encoding="utf-8", newline="\n")
    else:
        handle = open(path, "w", encoding="utf-8", newline="\n")
    count = 0
    with handle:
        for concept in kb:
            record = {
                "concept_id": concept.concept_id,
                "canonical_name": concept.canonical_name,
                "aliases": list(concept.synonyms),
                "types": list(concept.types),
                "definition": concept.definition,
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    logger.info("Wrote %d concepts to scispaCy JSONL %s", count, path)
    return count


__all__ = ["load_scispacy_jsonl", "write_scispacy_jsonl"]

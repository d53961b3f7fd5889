"""Loader for a UMLS Metathesaurus release (the RRF files of its META directory).

* ``MRCONSO.RRF`` (required): one atom (a name from one source) a line,
  ``CUI|LAT|TS|LUI|STT|SUI|ISPREF|AUI|SAUI|SCUI|SDUI|SAB|TTY|CODE|STR|SRL|SUPPRESS|CVF|``;
* ``MRSTY.RRF`` (optional): semantic types, ``CUI|TUI|STN|STY|ATUI|CVF|``;
* ``MRDEF.RRF`` (optional): definitions, ``CUI|AUI|ATUI|SATUI|SAB|DEF|SUPPRESS|CVF|``.

Each file may also be gzipped (``MRCONSO.RRF.gz``). A full release is many GB,
so the files are streamed line by line and only per-CUI records are kept.
Concept ids are CUIs ('C0011849'); the KB strips a 'UMLS:' prefix when
resolving a query id (MedMentions writes 'UMLS:C0011849').
"""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple, Union

from ..errors import BioELError, Errors, KBFormatError
from ..progress import progress_bar
from .concept import Concept
from .io import iter_lines
from .knowledge_base import KnowledgeBase

logger = logging.getLogger(__name__)

UMLS_STRIP_PREFIXES = ("UMLS:",)
MRCONSO_COLUMNS = ("CUI", "LAT", "TS", "LUI", "STT", "SUI", "ISPREF", "AUI", "SAUI", "SCUI",
                   "SDUI", "SAB", "TTY", "CODE", "STR", "SRL", "SUPPRESS", "CVF")
MRSTY_COLUMNS = ("CUI", "TUI", "STN", "STY", "ATUI", "CVF")
MRDEF_COLUMNS = ("CUI", "AUI", "ATUI", "SATUI", "SAB", "DEF", "SUPPRESS", "CVF")

# Preference tiers for the canonical name (lower is better): the UMLS preferred
# atom (TS=P, STT=PF, ISPREF=Y); the preferred string of the preferred term
# (TS=P, STT=PF: same string, its ISPREF=Y atom was filtered out); any other atom.
_TIER_PREFERRED_ATOM = 0
_TIER_PREFERRED_STRING = 1
_TIER_OTHER = 2


def _find_rrf(meta_dir: Path, stem: str) -> Optional[Path]:
    for candidate in (meta_dir / stem, meta_dir / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _resolve_meta_dir(meta_dir: Union[str, Path]) -> Tuple[Path, Path]:
    """Find MRCONSO in `meta_dir` (the META directory) or in `meta_dir`/META
    (a release root). Raises E008 if `meta_dir` does not exist, E009 if it has
    no MRCONSO.RRF(.gz).

    RETURNS (Tuple[Path, Path]): The META directory and its MRCONSO file.
    """
    meta_dir = Path(meta_dir)
    if not meta_dir.exists():
        raise BioELError(Errors.E008.format(path=meta_dir))
    if not meta_dir.is_dir():
        raise BioELError(Errors.E009.format(path=meta_dir, found="a file, not a directory"))
    for directory in (meta_dir, meta_dir / "META"):
        mrconso = _find_rrf(directory, "MRCONSO.RRF")
        if mrconso is not None:
            return directory, mrconso
    found = sorted(p.name for p in meta_dir.iterdir())
    shown = ", ".join(found[:20]) + (f", ... ({len(found)} entries)" if len(found) > 20 else "")
    raise BioELError(Errors.E009.format(path=meta_dir, found=shown or "nothing"))


def _as_filter(values: Optional[Union[str, Iterable[str]]]) -> Optional[FrozenSet[str]]:
    if values is None:
        return None
    if isinstance(values, str):  # languages="ENG" must not become {'E', 'N', 'G'}
        return frozenset((values,))
    return frozenset(values)


def _split_rrf(line: str, path: Path, number: int, fmt: str,
               columns: Tuple[str, ...]) -> List[str]:
    """Split one RRF line into its columns. Raises E001 on a wrong field count."""
    fields = line.split("|")
    if len(fields) != len(columns) + 1 or fields[-1] != "":
        if fields[-1] == "":
            problem = f"{len(fields) - 1} fields"
        else:
            problem = f"{len(fields)} fields and no trailing '|'"
        raise KBFormatError(Errors.E001.format(
            path=path, line=number, fmt=fmt, problem=problem,
            expected=f"{len(columns)} '|'-separated fields and a trailing '|': "
                     f"{'|'.join(columns)}|"))
    fields.pop()
    return fields


def load_umls(meta_dir: Union[str, Path], *, languages: Optional[Iterable[str]] = ("ENG",),
              sources: Optional[Iterable[str]] = None, include_suppressed: bool = False,
              name: str = "UMLS", progress: bool = True,
              encoding: Optional[str] = None) -> KnowledgeBase:
    """Load concepts (CUIs) from a UMLS release's META directory, streamed.

    Atoms (MRCONSO rows) are kept when their language is in `languages`, their
    source (SAB) is in `sources`, and they are not suppressible (SUPPRESS 'N';
    'O', 'E' and 'Y' are kept only with `include_suppressed`). The canonical
    name is the UMLS preferred name (the first kept atom with TS='P', STT='PF',
    ISPREF='Y'); when a filter removed that atom, a kept atom with TS='P' and
    STT='PF' (the same string) is used, else the first kept atom. All other
    distinct strings of kept atoms are synonyms, in file order. CUIs without a
    kept atom are left out, so their types and definitions are ignored too.

    meta_dir (Union[str, Path]): The META directory (or the release root that
        contains META/), with MRCONSO.RRF and optionally MRSTY.RRF and MRDEF.RRF,
        plain or gzipped.
    languages (Optional[Iterable[str]]): LAT values to keep (None: all).
    sources (Optional[Iterable[str]]): SAB values to keep, for names and for
        definitions (None: all sources).
    include_suppressed (bool): Also keep suppressible atoms and definitions.
    name (str): A label for the KB.
    progress (bool): Show progress bars (tqdm, on stderr).
    RETURNS (KnowledgeBase): One concept per CUI with a kept name; types are
        TUIs (e.g. 'T047') from MRSTY, the definition is the first kept MRDEF
        row, the cross-references are the kept atoms' source codes as 'SAB:CODE'
        (e.g. 'MSH:D003920', 'SNOMEDCT_US:73211009'; 'NOCODE' left out). Row
        counts are in `kb.meta["load_report"]`.

    Raises E008 if `meta_dir` does not exist, E009 if it has no MRCONSO.RRF,
    E001 for a line with the wrong number of fields, E012 if no concept passed
    the filters.
    """
    meta_dir, mrconso = _resolve_meta_dir(meta_dir)
    mrsty = _find_rrf(meta_dir, "MRSTY.RRF")
    mrdef = _find_rrf(meta_dir, "MRDEF.RRF")
    keep_languages = _as_filter(languages)
    keep_sources = _as_filter(sources)
    report: Counter = Counter()

    # MRCONSO: per CUI, the distinct names (dict as an ordered set) and the best
    # canonical-name candidate as (tier, name).
    names: Dict[str, Dict[str, None]] = {}
    codes: Dict[str, Dict[str, None]] = {}  # per CUI, its atoms' 'SAB:CODE' (the cross-references)
    canonical: Dict[str, Tuple[int, str]] = {}
    for number, line in progress_bar(iter_lines(mrconso, encoding), desc=f"UMLS {mrconso.name}",
                                     unit=" lines", disable=not progress):
        if not line:
            continue
        report["mrconso_rows"] += 1
        (cui, lat, ts, _lui, stt, _sui, ispref, _aui, _saui, _scui, _sdui, sab, _tty, code,
         string, _srl, suppress, _cvf) = _split_rrf(line, mrconso, number, "MRCONSO",
                                                    MRCONSO_COLUMNS)
        if not cui.strip():
            raise KBFormatError(Errors.E001.format(
                path=mrconso, line=number, fmt="MRCONSO", problem="an empty CUI",
                expected="a CUI (e.g. C0011849) in the first field"))
        if keep_languages is not None and lat not in keep_languages:
            report["skipped_language"] += 1
            continue
        if keep_sources is not None and sab not in keep_sources:
            report["skipped_source"] += 1
            continue
        if suppress != "N" and not include_suppressed:
            report["skipped_suppressed"] += 1
            continue
        string = string.strip()
        if not string:
            report["skipped_empty_name"] += 1
            continue
        report["mrconso_kept"] += 1
        names.setdefault(cui, {})[string] = None
        code = code.strip()
        if code and code != "NOCODE" and sab.strip():
            codes.setdefault(cui, {})[f"{sab.strip()}:{code}"] = None
        if ts == "P" and stt == "PF":
            tier = _TIER_PREFERRED_ATOM if ispref == "Y" else _TIER_PREFERRED_STRING
        else:
            tier = _TIER_OTHER
        best = canonical.get(cui)
        if best is None or tier < best[0]:
            canonical[cui] = (tier, string)

    # MRSTY: semantic types (TUIs) of the kept CUIs, file order, deduplicated.
    types: Dict[str, Dict[str, None]] = {}
    if mrsty is not None:
        for number, line in progress_bar(iter_lines(mrsty, encoding), desc=f"UMLS {mrsty.name}",
                                         unit=" lines", disable=not progress):
            if not line:
                continue
            report["mrsty_rows"] += 1
            cui, tui = _split_rrf(line, mrsty, number, "MRSTY", MRSTY_COLUMNS)[:2]
            if cui in names and tui:
                types.setdefault(cui, {})[tui] = None
    else:
        logger.info("No MRSTY.RRF in %s: concepts get no semantic types", meta_dir)

    # MRDEF: the first kept definition per kept CUI.
    definitions: Dict[str, str] = {}
    if mrdef is not None:
        for number, line in progress_bar(iter_lines(mrdef, encoding), desc=f"UMLS {mrdef.name}",
                                         unit=" lines", disable=not progress):
            if not line:
                continue
            report["mrdef_rows"] += 1
            fields = _split_rrf(line, mrdef, number, "MRDEF", MRDEF_COLUMNS)
            cui, sab, definition, suppress = fields[0], fields[4], fields[5].strip(), fields[6]
            if cui not in names or cui in definitions or not definition:
                continue
            if keep_sources is not None and sab not in keep_sources:
                report["mrdef_skipped_source"] += 1
                continue
            if suppress != "N" and not include_suppressed:
                report["mrdef_skipped_suppressed"] += 1
                continue
            definitions[cui] = definition
    else:
        logger.info("No MRDEF.RRF in %s: concepts get no definitions", meta_dir)

    filters = (f"languages={sorted(keep_languages) if keep_languages is not None else 'all'}, "
               f"sources={sorted(keep_sources) if keep_sources is not None else 'all'}, "
               f"include_suppressed={include_suppressed}")
    if not names:
        raise BioELError(Errors.E012.format(path=mrconso, filters=filters))

    kb = KnowledgeBase(strip_prefixes=UMLS_STRIP_PREFIXES, name=name)
    for cui, cui_names in names.items():
        preferred = canonical[cui][1]
        kb.add(Concept(cui, preferred,
                       synonyms=tuple(n for n in cui_names if n != preferred),
                       types=tuple(types.get(cui, ())),
                       definition=definitions.get(cui), xrefs=tuple(codes.get(cui, ()))),
               path=mrconso)
    kb.finalize_alt_ids(mrconso)

    report["concepts"] = len(kb)
    report["with_types"] = len(types)
    report["with_definition"] = len(definitions)
    load_report = {key: int(report[key]) for key in (
        "mrconso_rows", "mrconso_kept", "skipped_language", "skipped_source",
        "skipped_suppressed", "skipped_empty_name", "mrsty_rows", "mrdef_rows",
        "mrdef_skipped_source", "mrdef_skipped_suppressed", "concepts", "with_types",
        "with_definition")}
    kb.meta.update({
        "source": str(meta_dir),
        "format": "umls",
        "filters": {"languages": sorted(keep_languages) if keep_languages is not None else None,
                    "sources": sorted(keep_sources) if keep_sources is not None else None,
                    "include_suppressed": include_suppressed},
        "load_report": load_report,
    })
    logger.info("MRCONSO %s: %d rows read, %d kept, skipped %d by language, %d by source, "
                "%d suppressible, %d empty names",
                mrconso, load_report["mrconso_rows"], load_report["mrconso_kept"],
                load_report["skipped_language"], load_report["skipped_source"],
                load_report["skipped_suppressed"], load_report["skipped_empty_name"])
    logger.info("Loaded %d UMLS concepts from %s (%d with types, %d with a definition)",
                len(kb), meta_dir, load_report["with_types"], load_report["with_definition"])
    return kb


__all__ = ["load_umls", "UMLS_STRIP_PREFIXES"]

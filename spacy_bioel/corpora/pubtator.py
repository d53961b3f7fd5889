"""PubTator reader (NCBI Disease, BC5CDR, ...) -> Docs with gold concept ids.

Policies (each counted in the ConversionReport, none silent):
* composite mentions: '|' alternatives and '+' conjunctions keep one span
  whose kb_id_ lists the atomic ids ('D1|D2', 'D1+D2'); evaluation accepts any
  of them (BioSyn's protocol). The optional 7th column of BC5CDR (individual
  mentions of a composite) has no offsets and is counted, not used.
* '-1' ids: 'NIL'.
* ids missing from the KB: `missing` = 'keep' | 'nil' | 'error'.
* offsets whose text differs from the mention: whitespace-only differences
  are accepted (offsets that cover surrounding whitespace are trimmed to the
  text, counted as 'mention_whitespace_trimmed'); otherwise the mention is
  searched for within `repair_window` characters and moved there; if not found, `misaligned` = 'error' | 'skip'.
* relation lines (CID) are counted and skipped; mentions of types not in
  `types` are counted and skipped; duplicate document ids are kept (warned).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ..errors import CorpusFormatError, Errors, Warnings, warn
from ..kb.io import iter_lines
from ..kb.knowledge_base import KnowledgeBase
from ..progress import progress_bar
from ..validation import as_choice
from .documents import (MISSING_POLICIES, ConversionReport, Mention, SourceDocument, align_mention,
                        build_doc, normalize_mention_ids, parse_gold_ids)

if TYPE_CHECKING:  # `read_pubtator` needs no spaCy
    from spacy.language import Language
    from spacy.tokens import Doc

logger = logging.getLogger(__name__)


def _is_offset(value: str) -> bool:
    """ASCII digits only ('²' passes str.isdigit but is no offset)."""
    return value.isascii() and value.isdigit()


def read_pubtator(path: Union[str, Path], report: Optional[ConversionReport] = None,
                  encoding: Optional[str] = None) -> Iterator[SourceDocument]:
    """Parse a PubTator file into SourceDocuments (offsets not yet checked).

    Text is `title + ' ' + abstract`, the convention of the PubTator offsets.
    Raises E050 for a malformed line, E052 for an annotation before its text and
    E021 for a file without documents (see `kb.io.iter_lines` for E016-E020).
    """
    report = report if report is not None else ConversionReport(str(path))
    current: Optional[SourceDocument] = None
    title: Optional[str] = None
    abstract_line: Optional[int] = None
    for number, line in iter_lines(path, encoding):
        if not line.strip():
            continue
        if "\t" not in line and "|" in line:
            parts = line.split("|", 2)
            if len(parts) != 3 or parts[1] not in ("t", "a"):
                raise CorpusFormatError(Errors.E050.format(path=path, line=number, what="text line",
                                                           problem=f"'{line[:40]}'"))
            doc_id, kind, text = parts
            if kind == "t":
                if current is not None:
                    yield current
                current = SourceDocument(doc_id, text, [], number)
                title = text
                abstract_line = None
            else:
                if current is None or current.doc_id != doc_id:
                    raise CorpusFormatError(Errors.E050.format(
                        path=path, line=number, what="abstract line",
                        problem=f"abstract of {doc_id} without its title line"))
                if abstract_line is not None:
                    raise CorpusFormatError(Errors.E050.format(
                        path=path, line=number, what="abstract line", problem=(
                            f"a second abstract of {doc_id} (the first is on line "
                            f"{abstract_line}); a document has one title and one abstract line")))
                current.text = f"{title} {text}"
                abstract_line = number
            continue
        fields = line.split("\t")
        if len(fields) == 4 and not _is_offset(fields[1]):
            report.add("relation_lines")
            continue
        if len(fields) not in (6, 7) or not _is_offset(fields[1]) or not _is_offset(fields[2]):
            raise CorpusFormatError(Errors.E050.format(path=path, line=number, what="annotation",
                                                       problem=f"{len(fields)} tab-separated fields"))
        if not fields[3].strip():
            raise CorpusFormatError(Errors.E050.format(path=path, line=number, what="annotation",
                                                       problem="empty mention text"))
        if current is None or current.doc_id != fields[0]:
            raise CorpusFormatError(Errors.E052.format(path=path, line=number, doc_id=fields[0]))
        ids, composite = parse_gold_ids(fields[5])
        if len(fields) == 7:
            report.add("composite_individual_mention_columns", f"line {number}: {fields[6]}")
        current.mentions.append(Mention(int(fields[1]), int(fields[2]), fields[3], fields[4],
                                        ids, composite, number))
    if current is None:
        raise CorpusFormatError(Errors.E021.format(path=path, what="PubTator document"))
    yield current


def convert_pubtator(nlp: Language, path: Union[str, Path], *,
                     types: Optional[Sequence[str]] = None, kb: Optional[KnowledgeBase] = None,
                     missing: str = "keep", misaligned: str = "error", repair_window: int = 50,
                     progress: bool = True, encoding: Optional[str] = None
                     ) -> Tuple[List[Doc], ConversionReport]:
    """Convert a PubTator file to Docs.

    nlp (Language): Provides the tokenizer and vocab (e.g. spacy.blank('en')).
    path (Union[str, Path]): The PubTator file (plain or .gz).
    types (Optional[Sequence[str]]): Entity types to keep (None: all).
    kb (Optional[KnowledgeBase]): Resolve alt ids to primary ids and check coverage.
    missing (str): Policy for ids missing from the KB: 'keep', 'nil' or 'error'.
    misaligned (str): Policy for unrepairable offsets: 'error' or 'skip'.
    encoding (Optional[str]): The file's encoding without a byte-order mark (None: UTF-8).
    RETURNS (Tuple[List[Doc], ConversionReport]): The docs and what was done.
    """
    as_choice("missing", missing, MISSING_POLICIES)
    as_choice("misaligned", misaligned, ("error", "skip"))
    report = ConversionReport(str(path))
    keep_types = set(types) if types else None
    docs: List[Doc] = []
    seen_ids: Dict[str, int] = {}
    for document in progress_bar(read_pubtator(path, report, encoding),
                                 desc=f"PubTator {Path(path).name}",
                                 unit=" docs", disable=not progress):
        if document.doc_id in seen_ids:
            report.add("duplicate_document_ids", document.doc_id)
            warn(Warnings.W003.format(doc_id=document.doc_id, path=path, line=document.line))
        seen_ids[document.doc_id] = document.line
        kept: List[Mention] = []
        for mention in document.mentions:
            if keep_types is not None and mention.label not in keep_types:
                report.add(f"skipped_type:{mention.label}")
                continue
            aligned = align_mention(document.text, mention, path, repair_window, misaligned, report)
            if aligned is None:
                continue
            resolved = normalize_mention_ids(aligned, kb, missing, report,
                                             f"{path}:{mention.line}")
            if resolved is not None:
                kept.append(resolved)
        docs.append(build_doc(nlp, SourceDocument(document.doc_id, document.text, kept,
                                                  document.line), report))
    if report.counts.get("offsets_repaired"):
        example = report.examples["offsets_repaired"][0]  # 'line N: start->new'
        line, detail = example.replace("line ", "", 1).split(": ", 1)
        warn(Warnings.W004.format(count=report.counts["offsets_repaired"], path=path,
                                  line=line, detail=detail))
    if report.counts.get("overlapping_mentions"):
        from .documents import OVERLAPS_SPANS_KEY
        warn(Warnings.W005.format(count=report.counts["overlapping_mentions"], path=path,
                                  spans_key=OVERLAPS_SPANS_KEY))
    if kb is not None and missing == "keep" and report.counts.get("ids_missing_from_kb"):
        warn(Warnings.W002.format(count=report.counts["ids_missing_from_kb"], path=path,
                                  examples=", ".join(report.examples["ids_missing_from_kb"][:3])))
    logger.info("Converted %s: %s", path, dict(report.counts))
    return docs, report


__all__ = ["read_pubtator", "convert_pubtator"]

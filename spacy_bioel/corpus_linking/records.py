"""Shards in, shards out: the records `link-corpus` reads and writes.

An input record is {"id": str, "text": str, "ents": [[start, end, label], ...] or
None, "origin": [shard path, position]}; None means the pipeline's own NER finds
the mentions. A record may also carry "groups" (a DocBin document's span groups,
{key: [[start, end, label], ...]}: a linker with `spans_key` reads its own group,
`record_mentions`), "unplaced" (mentions whose text is not at their offsets,
[start, end, label, reason]) and "repaired" (mentions moved to where their text
is, [start, end, new start, new end]). The origin (the shard's resolved path and the record's byte offset
or number in it) is unique across a run, so part files are keyed by it and two
shards that repeat each other's ids cannot overwrite each other's output.
Shard formats:
- JSONL (`.jsonl`, `.json`, `.jsonl.gz`): one object a line with "text", an
  optional "id" (default `<file>@<byte offset>`) and optional "entities" ([{"start",
  "end", "label"}] or [[start, end, label]]; an entity object's optional "text" is
  checked against the document's text at its offsets);
- PubTator (`.txt`, `.pubtator`, `.gz` of these): titles, abstracts and the
  mention lines (their concept ids are ignored; their text is checked against the
  document's at their offsets, as `convert pubtator` checks it). A shard with no
  mention line at all is raw text: the pipeline's NER finds its mentions (one
  document of a shard that has mention lines and none of its own has no mentions);
- plain text (`.txt` whose first line that is not blank is no PubTator title or
  abstract line, `ID|t|...`): the whole file is one document, its id the file's
  name, its mentions found by the pipeline's NER;
- DocBin (`.spacy`): each Doc's text, ents (and the converters' overlapping
  mentions) and span groups; id from the converter's `doc.user_data` id where it
  stored one, else `<file>:<n>`. A Doc whose entity annotation is missing (no
  token's IOB set: `nlp.make_doc`) and that has no span is raw text for the NER;
  one whose ents were set, even to none, has the mentions it has.
An output shard is JSONL, one object per document: the id and text, and per
mention its offsets, text, label, concept id (or NIL), probability, NIL flag
and score and the top candidates, and the input mentions that could not be
placed in the text ("skipped", each with its reason). Part files are written
whole under a temporary name and renamed, so a killed worker leaves no half file.

Every problem of an input file is a coded error that names it: E202 for a
JSONL line (its byte offset), E236 for a shard that cannot be read at all (a
truncated gzip stream, a damaged DocBin).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ..errors import BioELError, Errors
from ..files import replace_file

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
PUBTATOR_SUFFIXES = (".txt", ".pubtator")
DOCBIN_SUFFIXES = (".spacy",)
Record = Dict[str, Any]


def shard_format(path: Path) -> str:
    """'jsonl', 'pubtator' (PubTator or plain text: `pubtator_or_text`) or
    'docbin' by the file's name; E201 for another."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(PUBTATOR_SUFFIXES):
        return "pubtator"
    if name.endswith(DOCBIN_SUFFIXES):
        return "docbin"
    raise BioELError(Errors.E201.format(path=path))


def list_shards(inputs: Sequence[Union[str, Path]]) -> List[Path]:
    """The shard files of files, folders (their known-format files, sorted) and
    globs (relative or absolute); each file once."""
    import glob

    shards: List[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            shards += sorted(p for p in path.iterdir() if p.is_file() and _known(p))
        elif any(c in str(item) for c in "*?["):
            shards += sorted(Path(p) for p in glob.glob(str(item), recursive=True)
                             if Path(p).is_file())
        elif path.is_file():
            shards.append(path)
        else:
            raise BioELError(Errors.E008.format(path=path))
    shards = list(dict.fromkeys(shards))  # a file named twice is read once
    if not shards:
        raise BioELError(Errors.E201.format(path=", ".join(map(str, inputs))))
    for shard in shards:  # folders were filtered; a named file or glob match is checked here
        shard_format(shard)  # E201 for an unknown format, before any work
    return shards


def _known(path: Path) -> bool:
    try:
        shard_format(path)
        return True
    except BioELError:
        return False


def _entities(value: Any, where: str) -> Optional[List[List[Any]]]:
    """The entities of a JSONL line as [start, end, label] (E202 for one that is
    not a pair of integers and an optional label string). Whether an entity can be
    placed in the text (its range, overlaps) is the worker's to count (`place`)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise BioELError(Errors.E202.format(where=where, problem=f"\"entities\" is "
                                            f"{type(value).__name__}, not a list"))
    out = []
    for ent in value:
        mention_text = None
        if isinstance(ent, dict):
            mention_text = ent.get("text")
            if mention_text is not None and not isinstance(mention_text, str):
                raise BioELError(Errors.E202.format(where=where, problem=f"bad entity {ent!r:.80}"))
            ent = [ent.get("start"), ent.get("end"), ent.get("label", "ENTITY")]
        if not isinstance(ent, list) or len(ent) not in (2, 3) or \
                not all(isinstance(x, int) and not isinstance(x, bool) for x in ent[:2]) or \
                (len(ent) == 3 and not isinstance(ent[2], str)):
            raise BioELError(Errors.E202.format(where=where, problem=f"bad entity {ent!r:.80}"))
        out.append([int(ent[0]), int(ent[1]), ent[2] if len(ent) > 2 else "ENTITY"] +
                   ([mention_text] if mention_text is not None else []))
    return out


def checked_against_text(text: str, mentions: Sequence[Sequence[Any]], where: Union[str, Path]
                         ) -> Tuple[List[List[Any]], List[List[Any]], List[List[int]]]:
    """Mentions (start, end, label[, their own text[, line]]) checked against the
    document `text` with the converters' one check (`corpora.documents.align_mention`,
    50 characters to find a moved mention): a mention whose offsets do not hold its
    text is moved to the nearest place that does, or set aside with its reason.
    Offsets outside the text are left to `place`, which counts them.
    RETURNS: (mentions as [start, end, label], set aside as [start, end, label,
    reason], moves as [start, end, new start, new end])."""
    from ..corpora.documents import ConversionReport, Mention, align_mention

    kept: List[List[Any]] = []
    unplaced: List[List[Any]] = []
    repaired: List[List[int]] = []
    report = ConversionReport(str(where))
    for mention in mentions:
        start, end, label = mention[:3]
        own = mention[3] if len(mention) > 3 else None
        if own is None or not (0 <= start < end <= len(text)):
            kept.append([start, end, label])
            continue
        line = mention[4] if len(mention) > 4 else 0
        aligned = align_mention(text, Mention(start, end, own, label, (), "", line), where,
                                REPAIR_WINDOW, "skip", report)
        if aligned is None:
            unplaced.append([start, end, label, f"its text {own!r:.60} is not the document's "
                                                f"{text[start:end]!r:.60} at these offsets, nor "
                                                f"within {REPAIR_WINDOW} characters"])
            continue
        kept.append([aligned.start, aligned.end, label])
        if (aligned.start, aligned.end) != (start, end):
            repaired.append([start, end, aligned.start, aligned.end])
    return kept, unplaced, repaired


# how far a mention whose offsets do not hold its text is looked for (as `convert pubtator`)
REPAIR_WINDOW = 50


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise BioELError(Errors.E202.format(where=where, problem="no \"text\" string"))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise BioELError(Errors.E202.format(
            where=where, problem=f"the text holds a lone surrogate ({value[err.start]!r} at "
                                 f"character {err.start}), which is not Unicode text"))
    return value


def place(text: str, ents: Sequence[Sequence[Any]], overlaps: bool = False
          ) -> Tuple[List[List[Any]], List[List[Any]]]:
    """Split `ents` into those that can be mentions of `text` (within it, not empty,
    not overlapping an earlier one, longest first, unless `overlaps`: a span group
    holds overlapping mentions) and the skipped ones, each with its reason:
    RETURNS (kept sorted by offset, skipped as [start, end, label, reason])."""
    kept: List[List[Any]] = []
    skipped: List[List[Any]] = []
    taken: List[Tuple[int, int]] = []
    for start, end, label in sorted(ents, key=lambda e: (e[0], -(e[1] - e[0]))):
        if start < 0 or end > len(text) or start >= end:
            skipped.append([start, end, label, f"outside the text of {len(text)} characters"
                            if start < end else "empty or reversed"])
        elif not text[start:end].strip():
            skipped.append([start, end, label, "only white space"])
        elif not overlaps and any(start < b and a < end for a, b in taken):
            skipped.append([start, end, label, "overlaps another mention"])
        else:
            kept.append([start, end, label])
            taken.append((start, end))
    return kept, skipped


def shard_chunks(path: Union[str, Path], chunk_bytes: int = 0) -> List[Tuple[str, int, Optional[int]]]:
    """Read tasks of one shard: (path, start, stop) byte ranges of about
    `chunk_bytes` for an uncompressed JSONL file (a line belongs to the range it
    starts in), the whole file otherwise or when `chunk_bytes` is 0."""
    path = Path(path)
    size = path.stat().st_size
    if chunk_bytes <= 0 or shard_format(path) != "jsonl" or path.name.endswith(".gz") \
            or size <= chunk_bytes:
        return [(str(path), 0, None)]
    starts = list(range(0, size, chunk_bytes))
    return [(str(path), a, b) for a, b in zip(starts, starts[1:] + [None])]


# a PubTator title or abstract line: "ID|t|..." or "ID|a|..."
PUBTATOR_TEXT_LINE = re.compile(r"^[^|\t]*\|[ta]\|")


def pubtator_or_text(path: Path) -> Tuple[str, bool]:
    """How a shard of PubTator's names is read: ('text', False) when its first
    line that is not blank is no PubTator title or abstract line, or it has none
    (a plain text document), else ('pubtator', whether any line is a mention: six or seven
    tab-separated fields). Reads up to the first mention line."""
    from ..kb.io import iter_lines

    first = True
    for _, line in iter_lines(path):
        if not line.strip():
            continue
        if first and not PUBTATOR_TEXT_LINE.match(line):
            return "text", False
        first = False
        if line.count("\t") in (5, 6):
            return "pubtator", True
    return ("text", False) if first else ("pubtator", False)  # empty or blank: an empty document


def _jsonl_lines(path: Path, start: int, stop: Optional[int]) -> Iterator[Tuple[int, bytes]]:
    """(byte offset, line) of the lines that start in [start, stop)."""
    if path.name.endswith(".gz"):
        with gzip.open(path, "rb") as handle:
            offset = 0
            for line in handle:
                yield offset, line
                offset += len(line)
        return
    with open(path, "rb") as handle:
        if start > 0:
            handle.seek(start - 1)
            if handle.read(1) != b"\n":
                handle.readline()  # the rest of a line that started in the previous range
        while True:
            offset = handle.tell()
            if stop is not None and offset >= stop:
                return
            line = handle.readline()
            if not line:
                return
            yield offset, line


def iter_shard(path: Union[str, Path], nlp=None, start: int = 0,
               stop: Optional[int] = None) -> Iterator[Record]:
    """The records of one shard (or of the byte range [start, stop) of a JSONL
    shard), in file order. A JSONL line without "id" gets `<file>@<byte offset>`."""
    path = Path(path)
    fmt = shard_format(path)
    shard = str(path.resolve())
    try:
        if fmt == "jsonl":
            yield from _jsonl_records(path, shard, start, stop)
        elif fmt == "pubtator":
            kind, annotated = pubtator_or_text(path)
            if kind == "text":
                from ..kb.io import read_exact_text

                yield {"id": path.name, "text": _text(read_exact_text(path), str(path)), "ents": None,
                       "origin": [shard, 0]}
                return
            from ..corpora.pubtator import read_pubtator

            for number, doc in enumerate(read_pubtator(path)):
                where = f"{path}, document {doc.doc_id}"
                text = _text(doc.text, where)
                if not annotated:  # raw text: the pipeline's NER finds the mentions
                    yield {"id": doc.doc_id, "text": text, "ents": None, "origin": [shard, number]}
                    continue
                ents, unplaced, repaired = checked_against_text(
                    text, [(m.start, m.end, m.label, m.text, m.line) for m in doc.mentions], path)
                record = {"id": doc.doc_id, "text": text, "ents": ents, "origin": [shard, number]}
                yield _with_extras(record, unplaced=unplaced, repaired=repaired)
        else:
            yield from _docbin_records(path, shard, nlp)
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        raise BioELError(Errors.E236.format(where=path, problem=f"the file cannot be read "
                                            f"({type(err).__name__}: {str(err)[:120]})"))


def _jsonl_records(path: Path, shard: str, start: int, stop: Optional[int]) -> Iterator[Record]:
    for offset, raw in _jsonl_lines(path, start, stop):
        if not raw.strip():
            continue
        where = f"{path} (byte {offset})"
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise BioELError(Errors.E202.format(where=where, problem=str(err)[:200]))
        except RecursionError:
            raise BioELError(Errors.E202.format(where=where, problem="JSON nested too deeply"))
        if not isinstance(obj, dict):
            raise BioELError(Errors.E202.format(where=where, problem="not a JSON object"))
        doc_id = obj.get("id", f"{path.name}@{offset}")
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool):
            raise BioELError(Errors.E202.format(where=where, problem=f"\"id\" is "
                                                f"{type(doc_id).__name__}, not a string"))
        text = _text(obj.get("text"), where)
        ents = _entities(obj.get("entities"), where)
        record = {"id": _text(str(doc_id), where), "text": text, "ents": ents, "origin": [shard, offset]}
        if ents is not None and any(len(e) > 3 for e in ents):  # mentions that give their text
            record["ents"], unplaced, repaired = checked_against_text(text, ents, where)
            record = _with_extras(record, unplaced=unplaced, repaired=repaired)
        yield record


def _docbin_records(path: Path, shard: str, nlp=None) -> Iterator[Record]:
    import spacy
    from spacy.tokens import DocBin

    vocab = (nlp or spacy.blank("en")).vocab
    try:
        docs = list(DocBin().from_disk(path).get_docs(vocab))
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
        raise BioELError(Errors.E236.format(where=path, problem=f"not a spaCy DocBin "
                                            f"({type(err).__name__}: {str(err)[:120]})"))
    from ..corpora.documents import DOC_ID_KEY, OVERLAPS_SPANS_KEY

    for number, doc in enumerate(docs):
        doc_id = doc.user_data.get(DOC_ID_KEY, doc.user_data.get("doc_id", f"{path.name}:{number}"))
        # the converters keep mentions that overlap another out of doc.ents, in a group
        overlaps = list(doc.spans[OVERLAPS_SPANS_KEY]) if OVERLAPS_SPANS_KEY in doc.spans else []
        # a Doc whose entity annotation is missing (no token's IOB set, as `make_doc` leaves
        # it) and that has no span is raw text: the pipeline's NER finds its mentions
        raw = not doc.has_annotation("ENT_IOB") and not any(len(g) for g in doc.spans.values())
        record = {"id": str(doc_id), "text": doc.text,
                  "ents": None if raw else [[e.start_char, e.end_char, e.label_]
                                            for e in list(doc.ents) + overlaps],
                  "origin": [shard, number]}
        yield _with_extras(record, groups={key: [[s.start_char, s.end_char, s.label_] for s in group]
                                           for key, group in doc.spans.items()
                                           if key != OVERLAPS_SPANS_KEY})


def _with_extras(record: Record, **extras: Any) -> Record:
    """`record` with the optional fields that are not empty."""
    record.update({key: value for key, value in extras.items() if value})
    return record


def record_mentions(record: Record, spans_key: Optional[str]) -> Optional[List[List[Any]]]:
    """The input mentions of `record` for a linker with `spans_key` (as
    `pipeline.mentions.for_linker` reads a Doc): a DocBin document's span group
    `spans_key` where it has one, else its entities; None when the pipeline's NER
    finds them."""
    groups = record.get("groups") or {}
    if spans_key is not None and spans_key in groups:
        return groups[spans_key]
    return record["ents"]


def input_mention_count(record: Record, spans_key: Optional[str]) -> int:
    """How many input mentions `record` brings (those set aside when read included)."""
    return len(record_mentions(record, spans_key) or []) + len(record.get("unplaced") or [])


def part_name(origins: Sequence[Sequence[Any]]) -> str:
    """A part file's name from its documents' origins (shard, position): the same
    batch, retried after a worker died, writes the same file again instead of a
    second copy, and batches of different shards never share a name, whatever
    their documents' ids."""
    key = "\n".join(f"{shard}\t{position}" for shard, position in origins)
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"part-{digest}.jsonl"


def write_part(output_dir: Path, records: Sequence[Record], origins: Sequence[Sequence[Any]]
               ) -> Path:
    """Write one part file atomically (temporary name, then rename)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / part_name(origins)

    def write(partial: Path) -> None:
        with open(partial, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    replace_file(path, write)
    return path


def read_outputs(output_dir: Union[str, Path]) -> List[Record]:
    """Every linked record of an output folder (its part files, any order)."""
    records = []
    for part in sorted(Path(output_dir).glob("part-*.jsonl")):
        with open(part, encoding="utf-8") as handle:
            records += [json.loads(line) for line in handle if line.strip()]
    return records


def compare_ids(inputs: Counter, outputs: Counter) -> Dict[str, int]:
    """Lost and duplicated documents, by id (multisets: an input id may repeat)."""
    lost = inputs - outputs
    extra = outputs - inputs
    return {"input_documents": sum(inputs.values()), "output_documents": sum(outputs.values()),
            "lost": sum(lost.values()), "duplicated": sum(extra.values())}


__all__ = ["Record", "checked_against_text", "compare_ids", "input_mention_count", "record_mentions", "iter_shard", "list_shards", "part_name", "place",
           "read_outputs", "shard_chunks", "shard_format", "write_part"]

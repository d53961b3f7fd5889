"""The malformed-input table: every loader and converter fed damaged variants of
a small valid file, each outcome classified.

A case is one (input kind, damage) pair. Its expectation is `load` (the
damage does not change the content: a byte-order mark, UTF-16 with its mark,
CRLF line ends, gzip with or without the .gz name; the result must equal the
clean file's), `error` (empty, binary, wrongly encoded, truncated, the wrong
format, ...: a coded BioELError) or `report` (a damage the loader tolerates by
design, such as an OBO clause the grammar rejects or an is_a self-loop: it
loads, and the KB's load report counts what was repaired or dropped). Outcomes:

- `clean_load`: loaded, and equal to the clean file's result;
- `coded_error`: a BioELError (its code is kept);
- `reported_skip`: loaded, with the damage counted in the load report;
- `silent_wrong`: loaded although an error was expected, or loaded something
  other than the clean result;
- `refused_valid`: a coded error for a file that should load;
- `crash`: any other exception.

`python -m bench reliability` writes the table and its counts; the tests
assert that no case crashes or loads silently wrong.
"""
from __future__ import annotations

import codecs
import gzip
import json
import logging
import random
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from spacy_bioel.errors import BioELError

MEDIC = ("MESH:D000001|OMIM:100100||Colon cancer|colorectal carcinoma|CRC\n"
         "MESH:D000002||Asthma|bronchial asthma\n"
         "MESH:D000003||Behçet syndrome\n")
CTD = ("# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\t"
       "ParentTreeNumbers\tSynonyms\tSlimMappings\n"
       "Colon cancer\tMESH:D000001\tOMIM:100100\tA cancer.\t\tC1\t\tcolorectal carcinoma|CRC\tCancer\n"
       "Asthma\tMESH:D000002\t\t\tMESH:D000001\tC2\t\tbronchial asthma\t\n"
       "Behçet syndrome\tMESH:D000003\t\t\t\tC3\t\t\t\n")
OBO = ("format-version: 1.2\nontology: test\ndefault-namespace: test_ns\n\n"
       "[Term]\nid: T:0001\nname: colon cancer\nsynonym: \"colorectal carcinoma\" EXACT []\n\n"
       "[Term]\nid: T:0002\nname: asthma\nis_a: T:0001 ! colon cancer\n\n"
       "[Term]\nid: T:0003\nname: Behçet syndrome\n")
SCISPACY = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
    {"concept_id": "C1", "canonical_name": "colon cancer", "aliases": ["CRC"], "types": ["T191"]},
    {"concept_id": "C2", "canonical_name": "asthma", "aliases": [], "types": ["T047"]},
    {"concept_id": "C3", "canonical_name": "Behçet syndrome", "aliases": [], "types": []}])
ASKAPATIENT = ("C1\tcolon cancer\tbowel cancer\nC2\tasthma\tcant breathe\n"
               "C3\tBehçet syndrome\tmouth ulcers\n")
PUBTATOR = ("1|t|Colon cancer in a child\n1|a|Asthma and Behçet syndrome.\n"
            "1\t0\t12\tColon cancer\tDisease\tD000001\n"
            "1\t24\t30\tAsthma\tDisease\tD000002\n"
            "1\t35\t50\tBehçet syndrome\tDisease\tD000003\n\n")
MRCONSO = ("C0000001|ENG|P|L1|PF|S1|Y|A1||||MSH|PT|D000001|Colon cancer|0|N||\n"
           "C0000001|ENG|S|L2|PF|S2|Y|A2||||MSH|ET|D000001|colorectal carcinoma|0|N||\n"
           "C0000002|ENG|P|L3|PF|S3|Y|A3||||MSH|PT|D000002|Asthma|0|N||\n"
           "C0000003|ENG|P|L4|PF|S4|Y|A4||||MSH|PT|D000003|Behçet syndrome|0|N||\n")

# kind -> (clean text, file name)
SOURCES: Dict[str, Tuple[str, str]] = {
    "kb medic": (MEDIC, "medic.tsv"), "kb ctd": (CTD, "CTD_diseases.tsv"),
    "kb obo": (OBO, "onto.obo"), "kb scispacy": (SCISPACY, "kb.jsonl"),
    "kb askapatient": (ASKAPATIENT, "fold0.train.txt"), "kb umls": (MRCONSO, "MRCONSO.RRF"),
    "corpus pubtator": (PUBTATOR, "corpus.txt"),
    "corpus askapatient": (ASKAPATIENT, "fold0.test.txt")}


@dataclass
class Case:
    kind: str
    damage: str
    expect: str  # 'load' | 'error'
    data: Optional[bytes]  # None: the path is a directory (or missing, see damage)
    name: str


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _text_damages(text: str, other: str) -> List[Tuple[str, str, Optional[bytes], str]]:
    """(damage, expectation, bytes, name suffix) for a text source."""
    data = text.encode("utf-8")
    rng = random.Random(0)
    first_line_end = data.index(b"\n")
    latin1 = text.encode("latin-1", errors="replace")  # 'ç' as one Latin-1 byte
    return [
        ("clean", "load", data, ""),
        ("utf8_bom", "load", codecs.BOM_UTF8 + data, ""),
        ("utf16_bom", "load", text.encode("utf-16"), ""),
        ("utf16be_bom", "load", codecs.BOM_UTF16_BE + text.encode("utf-16-be"), ""),
        ("utf32_bom", "load", text.encode("utf-32"), ""),
        ("crlf", "load", data.replace(b"\n", b"\r\n"), ""),
        ("gzip", "load", _gzip(data), ".gz"),
        ("gzip_unnamed", "load", _gzip(data), ""),
        ("gzip_utf8_bom", "load", _gzip(codecs.BOM_UTF8 + data), ".gz"),
        ("utf16le_no_bom", "error", text.encode("utf-16-le"), ""),
        ("latin1", "error", latin1, ""),
        ("cp1252_quote", "error", data.replace(b"\n", "\u2019\n".encode("cp1252"), 1), ""),
        ("nul_in_line", "error", data[:first_line_end] + b"\x00" + data[first_line_end:], ""),
        ("empty", "error", b"", ""),
        ("blank_lines", "error", b"\n\n  \n\t\n", ""),
        ("bom_only", "error", codecs.BOM_UTF8, ""),
        ("binary", "error", bytes(rng.randrange(256) for _ in range(2048)), ""),
        ("fake_gz", "error", data, ".gz"),
        ("truncated_gz", "error", _gzip(data * 50)[:-40], ".gz"),
        ("corrupt_gz", "error", _gzip(data)[:12] + b"\xff" * 20 + _gzip(data)[32:], ".gz"),
        ("empty_gz", "error", _gzip(b""), ".gz"),
        ("other_format", "error", other.encode("utf-8"), ""),
        ("directory", "error", None, ""),
        ("missing", "error", b"", ""),
    ]


def _kind_damages(kind: str) -> List[Tuple[str, str, Optional[bytes], str]]:
    """Damages that only make sense for one kind."""
    if kind == "corpus pubtator":
        return [("superscript_offset", "error", PUBTATOR.replace("\t24\t30\t", "\t2\u2074\t30\t")
                 .encode("utf-8"), ""),
                ("offsets_past_end", "error", PUBTATOR.replace("\t35\t50\t", "\t35\t99\t")
                 .encode("utf-8"), ""),
                ("annotation_first", "error", PUBTATOR.split("\n", 2)[2].encode("utf-8"), "")]
    if kind.endswith("askapatient"):  # documented: a line that is not UTF-8 is read as cp1252
        return [("latin1", "load", ASKAPATIENT.encode("latin-1"), ""),
                ("cp1252_quote", "load", ASKAPATIENT.replace("bowel cancer", "bowel cancer\u2019")
                 .encode("cp1252"), "")]
    if kind == "kb medic":
        return [("no_separator", "error", b"MESH:D000001|Colon cancer\n", "")]
    if kind == "kb scispacy":
        return [("not_json", "error", b"{concept_id: C1}\n", ""),
                ("json_array", "error", b"[1, 2]\n", "")]
    if kind == "kb obo":  # real releases have such clauses: repaired or skipped, and reported
        return [("unterminated_quote", "report", OBO.replace('"colorectal carcinoma"',
                                                            '"colorectal carcinoma').encode(), ""),
                ("xref_with_spaces", "report", OBO.replace("name: asthma\n",
                                                          "name: asthma\nxref: A B C\n").encode(), ""),
                ("is_a_self_loop", "report", OBO.replace("is_a: T:0001", "is_a: T:0002").encode(), "")]
    return []


def cases() -> List[Case]:
    """Every (kind, damage) case, plus the binary KB file's own damages."""
    out: List[Case] = []
    kinds = list(SOURCES)
    for position, kind in enumerate(kinds):
        text, name = SOURCES[kind]
        other = SOURCES[kinds[(position + 2) % len(kinds)]][0]
        own = _kind_damages(kind)
        replaced = {damage for damage, *_ in own}
        for damage, expect, data, suffix in [d for d in _text_damages(text, other)
                                             if d[0] not in replaced] + own:
            out.append(Case(kind, damage, expect, data, name + suffix))
    out.extend(_binary_kb_cases())
    return out


def _binary_kb_cases() -> List[Case]:
    from spacy_bioel.kb.knowledge_base import KB_FORMAT_VERSION, KB_MAGIC
    from spacy_bioel.kb.loaders import load_kb

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "medic.tsv"
        source.write_text(MEDIC, encoding="utf-8")
        data = load_kb("medic", source, progress=False).to_bytes()
    header = KB_MAGIC + KB_FORMAT_VERSION.to_bytes(2, "little")
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x40
    bomb = header + zlib.compress(b"\x00" * (200 * 2 ** 20), 9)
    return [Case("kb bioel", damage, expect, payload, "kb.bioelkb") for damage, expect, payload in [
        ("clean", "load", data), ("truncated", "error", data[: len(data) // 2]),
        ("flipped_byte", "error", bytes(flipped)), ("empty", "error", b""),
        ("wrong_magic", "error", b"NOTAKB!!" + data[8:]),
        ("newer_version", "error", KB_MAGIC + (KB_FORMAT_VERSION + 1).to_bytes(2, "little") + data[10:]),
        ("decompression_bomb", "error", bomb), ("text_file", "error", MEDIC.encode("utf-8"))]]


def _summary_kb(kb) -> Any:
    report = kb.meta.get("load_report", {})
    reported = sum(sum(report.get(key, {}).values()) for key in ("clauses_repaired", "clauses_skipped"))
    reported += sum(report.get(key, 0) for key in ("self_loops_dropped", "cycle_edges_dropped"))
    return {"concepts": sorted((c.concept_id, c.canonical_name, tuple(c.synonyms), tuple(c.alt_ids),
                                tuple(c.types), c.definition, tuple(c.relations)) for c in kb),
            "reported": reported}


def _summary_docs(docs) -> Any:
    return [(d.text, [(e.start_char, e.end_char, e.label_, e.kb_id_) for e in d.ents]) for d in docs]


def _loader(kind: str) -> Callable[[Path], Any]:
    import spacy

    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from spacy_bioel.kb.loaders import load_kb

    if kind == "kb bioel":
        return lambda path: _summary_kb(KnowledgeBase.from_disk(path))
    if kind == "kb umls":
        return lambda path: _summary_kb(load_kb("umls", path.parent, progress=False))
    if kind.startswith("kb "):
        fmt = kind.split()[1]
        return lambda path: _summary_kb(load_kb(fmt, path, **({} if fmt == "askapatient"
                                                              else {"progress": False})))
    nlp = spacy.blank("en")
    if kind == "corpus pubtator":
        from spacy_bioel.corpora.pubtator import convert_pubtator
        return lambda path: _summary_docs(convert_pubtator(nlp, path, progress=False)[0])
    from spacy_bioel.corpora.askapatient import convert_askapatient
    return lambda path: _summary_docs(convert_askapatient(nlp, path)[0])


def run_case(case: Case, folder: Path, reference: Optional[Any]) -> Dict[str, Any]:
    """Write the case's file under `folder` (its own subfolder), load it, classify."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / case.name
    if case.kind == "kb umls" and case.name.endswith(".gz"):
        path = folder / "MRCONSO.RRF.gz"
    if case.damage == "directory":
        path.mkdir()
    elif case.damage != "missing":
        path.write_bytes(case.data or b"")
    row: Dict[str, Any] = {"kind": case.kind, "damage": case.damage, "expect": case.expect}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _loader(case.kind)(path)
    except BioELError as err:
        row.update(outcome="coded_error" if case.expect == "error" else "refused_valid",
                   code=err.code, message=str(err)[:300])
    except Exception as err:  # noqa: BLE001 - what the table measures
        row.update(outcome="crash", error=f"{type(err).__name__}: {str(err)[:300]}")
    else:
        if case.expect == "report":
            outcome = "reported_skip" if isinstance(result, dict) and result["reported"] else "silent_wrong"
        else:
            ok = case.expect == "load" and (reference is None or result == reference or
                                            case.damage == "cp1252_quote")
            outcome = "clean_load" if ok else "silent_wrong"
        row.update(outcome=outcome, result=repr(result)[:300])
        row["_result"] = result
    return row


def run_table(folder: Path) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
    """Run every case under `folder`. RETURNS: (rows, counts by outcome)."""
    rows: List[Dict[str, Any]] = []
    references: Dict[str, Any] = {}
    package = logging.getLogger("spacy_bioel")
    level = package.level
    package.setLevel(logging.WARNING)  # one 'Loaded ...' line per case is noise here
    try:
        for number, case in enumerate(cases()):
            rows.append(_run_counted(case, folder / f"{number:03d}", references))
    finally:
        package.setLevel(level)
    counts: Dict[str, int] = {"files": len(rows)}
    for row in rows:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    return rows, counts


def _run_counted(case: Case, folder: Path, references: Dict[str, Any]) -> Dict[str, Any]:
    """Run a case against its kind's clean result (the clean case sets it)."""
    row = run_case(case, folder, references.get(case.kind))
    if case.damage == "clean":
        references[case.kind] = row.get("_result")
    row.pop("_result", None)
    return row


__all__ = ["Case", "cases", "run_case", "run_table", "SOURCES"]

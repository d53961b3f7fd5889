"""Tests for reading and writing scispaCy's KB JSONL format."""
import gzip
import json
from pathlib import Path
from typing import Dict

import pytest

from spacy_bioel.errors import BioELError, KBFormatError
from spacy_bioel.kb import Concept, KnowledgeBase, load_kb
from spacy_bioel.kb.scispacy_jsonl import load_scispacy_jsonl, write_scispacy_jsonl
from tests.utils import write_lines

RECORDS = [
    {"concept_id": "C0011849", "canonical_name": "Diabetes Mellitus",
     "aliases": ["Diabetes Mellitus", "DM", "diabetes", "DM", " "],
     "types": ["T047"], "definition": "A metabolic disease."},
    {"concept_id": "C0018681", "canonical_name": "Headache", "aliases": ["Cephalgia"],
     "types": ["T184", "T033"], "definition": None},
    {"concept_id": "C0000003", "canonical_name": "C\u00e9phal\u00e9e", "aliases": []},
]


def summary(kb: KnowledgeBase) -> Dict[str, tuple]:
    return {c.concept_id: (c.canonical_name, c.synonyms, c.types, c.definition) for c in kb}


EXPECTED = {
    "C0011849": ("Diabetes Mellitus", ("DM", "diabetes"), ("T047",), "A metabolic disease."),
    "C0018681": ("Headache", ("Cephalgia",), ("T184", "T033"), None),
    "C0000003": ("C\u00e9phal\u00e9e", (), (), None),
}


def test_scispacy_jsonl_load(tmp_path: Path):
    path = write_lines(tmp_path / "umls_kb.jsonl",
                       [json.dumps(RECORDS[0]), "", "   ", json.dumps(RECORDS[1]),
                        json.dumps(RECORDS[2], ensure_ascii=False)])
    kb = load_scispacy_jsonl(path, progress=False)
    assert kb.name == "umls_kb.jsonl"
    assert kb.concept_ids == ["C0011849", "C0018681", "C0000003"]
    assert summary(kb) == EXPECTED
    assert kb.lookup_alias("dm") == ["C0011849"]
    assert kb.meta["format"] == "scispacy"


def test_scispacy_jsonl_load_gz_and_name(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl.gz", [json.dumps(r) for r in RECORDS])
    kb = load_scispacy_jsonl(path, name="toy", progress=False)
    assert kb.name == "toy"
    assert summary(kb) == EXPECTED


def test_scispacy_jsonl_via_load_kb(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl", [json.dumps(r) for r in RECORDS])
    assert summary(load_kb("scispacy", path, progress=False)) == EXPECTED


def test_scispacy_jsonl_progress_bar(tmp_path: Path, capsys):
    path = write_lines(tmp_path / "kb.jsonl", [json.dumps(r) for r in RECORDS])
    load_scispacy_jsonl(path, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "kb.jsonl" in captured.err
    load_scispacy_jsonl(path, progress=False)
    assert capsys.readouterr().err == ""


def test_write_scispacy_jsonl_exact_lines(tmp_path: Path):
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "Colorectal cancer", synonyms=("CRC", "Cancer du c\u00f4lon"),
                   types=("Disease",), definition="A cancer.", alt_ids=("OMIM:1",),
                   relations=(("is_a", "D0"),)))
    kb.add(Concept("D2", "Headache"))
    out = tmp_path / "sub" / "out.jsonl"
    assert write_scispacy_jsonl(kb, out) == 2
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [
        {"concept_id": "D1", "canonical_name": "Colorectal cancer",
         "aliases": ["CRC", "Cancer du c\u00f4lon"], "types": ["Disease"],
         "definition": "A cancer."},
        {"concept_id": "D2", "canonical_name": "Headache", "aliases": [], "types": [],
         "definition": None},
    ]
    assert list(json.loads(lines[0])) == ["concept_id", "canonical_name", "aliases", "types",
                                          "definition"]
    assert "c\u00f4lon" in lines[0]  # UTF-8, not \\u escapes


@pytest.mark.parametrize("filename", ["kb.jsonl", "kb.jsonl.gz"])
def test_scispacy_jsonl_round_trip(tmp_path: Path, filename: str):
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(r) for r in RECORDS])
    kb = load_scispacy_jsonl(source, progress=False)
    out = tmp_path / filename
    assert write_scispacy_jsonl(kb, out) == 3
    if filename.endswith(".gz"):
        with gzip.open(out, "rt", encoding="utf-8") as handle:
            assert json.loads(handle.readline())["concept_id"] == "C0011849"
    again = load_scispacy_jsonl(out, progress=False)
    assert again.concept_ids == kb.concept_ids
    assert summary(again) == summary(kb) == EXPECTED


# -- coded errors -----------------------------------------------------------

def assert_e001(path: Path, line: int, fragment: str) -> None:
    with pytest.raises(KBFormatError) as err:
        load_scispacy_jsonl(path, progress=False)
    assert err.value.code == "E001"
    message = str(err.value)
    assert str(path) in message
    assert f"line {line}:" in message
    assert fragment in message


def test_scispacy_jsonl_e001_invalid_json(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl", [json.dumps(RECORDS[0]), "", '{"concept_id": "C1",'])
    assert_e001(path, 3, "invalid JSON")


def test_scispacy_jsonl_e001_missing_concept_id(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl",
                       [json.dumps(RECORDS[0]), json.dumps({"canonical_name": "X", "aliases": []})])
    assert_e001(path, 2, "no 'concept_id'")


def test_scispacy_jsonl_e001_missing_canonical_name(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl", [json.dumps({"concept_id": "C1", "aliases": ["x"]})])
    assert_e001(path, 1, "no 'canonical_name'")


def test_scispacy_jsonl_e001_not_an_object(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl", [json.dumps(["C1", "Name"])])
    assert_e001(path, 1, "not an object")


def test_scispacy_jsonl_e001_aliases_not_a_list(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl",
                       [json.dumps({"concept_id": "C1", "canonical_name": "A", "aliases": "B"})])
    assert_e001(path, 1, "'aliases' is not a list of strings")


def test_scispacy_jsonl_e001_gz_names_file_and_line(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl.gz", [json.dumps(RECORDS[0]), "not json"])
    assert_e001(path, 2, "invalid JSON")


def test_scispacy_jsonl_e002_duplicate_id(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl",
                       [json.dumps(RECORDS[0]), json.dumps(RECORDS[1]),
                        json.dumps({"concept_id": "C0011849", "canonical_name": "Again",
                                    "aliases": []})])
    with pytest.raises(KBFormatError) as err:
        load_scispacy_jsonl(path, progress=False)
    assert err.value.code == "E002"
    message = str(err.value)
    assert str(path) in message
    assert "line 3:" in message
    assert "'C0011849'" in message
    assert "first seen on line 1" in message


def test_scispacy_jsonl_e003_empty_canonical_name(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl",
                       [json.dumps(RECORDS[0]),
                        json.dumps({"concept_id": "C9", "canonical_name": "  ", "aliases": ["x"]})])
    with pytest.raises(KBFormatError) as err:
        load_scispacy_jsonl(path, progress=False)
    assert err.value.code == "E003"
    assert str(path) in str(err.value)
    assert "line 2:" in str(err.value)
    assert "'C9'" in str(err.value)


def test_scispacy_jsonl_e012_empty_file(tmp_path: Path):
    path = write_lines(tmp_path / "kb.jsonl", ["", "  "])
    with pytest.raises(BioELError) as err:
        load_scispacy_jsonl(path, progress=False)
    assert err.value.code == "E012"
    assert str(path) in str(err.value)


def test_scispacy_jsonl_e008_missing_file(tmp_path: Path):
    with pytest.raises(BioELError) as err:
        load_scispacy_jsonl(tmp_path / "missing.jsonl", progress=False)
    assert err.value.code == "E008"


def test_a_lone_surrogate_is_a_coded_line(tmp_path: Path):
    """JSON can escape half a surrogate pair ("\\ud800"): not Unicode text (E001, its line)."""
    path = tmp_path / "kb.jsonl"
    path.write_text('{"concept_id": "C1", "canonical_name": "fine"}\n'
                    '{"concept_id": "C2", "canonical_name": "a \\ud800"}\n', encoding="utf-8")
    with pytest.raises(KBFormatError) as err:
        load_scispacy_jsonl(path, progress=False)
    assert err.value.code == "E001" and "line 2" in str(err.value) and "surrogate" in str(err.value)
    path.write_text('{"concept_id": "C1", "canonical_name": "\\ud83d\\ude00 pair"}\n', encoding="utf-8")
    assert load_scispacy_jsonl(path, progress=False)["C1"].canonical_name == "\U0001F600 pair"

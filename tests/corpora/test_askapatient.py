"""Tests for the AskAPatient fold reader, converter and KB builder."""
from pathlib import Path

import pytest
import spacy

from spacy_bioel.corpora import DOC_ID_KEY
from spacy_bioel.corpora.askapatient import (DEFAULT_LABEL, convert_askapatient,
                                             load_askapatient_kb, read_askapatient)
from spacy_bioel.corpora.documents import ConversionReport
from spacy_bioel.errors import BioELError, CorpusFormatError, KBFormatError

ROWS = [
    "10019211\tHeadache\tbad headache",
    "10019211\tHeadache\t  splitting head  ",
    "271807003\tEruption of skin\tskin rash all over",
    "",
    "84229001\tFatigue\ttired all the time",
]


@pytest.fixture
def nlp():
    return spacy.blank("en")


def write_rows(path: Path, rows, newline: str = "\n") -> Path:
    path.write_bytes(newline.join(rows).encode("utf-8") + newline.encode())
    return path


def test_one_doc_per_row(nlp, tmp_path):
    path = write_rows(tmp_path / "AskAPatient.fold-0.train.txt", ROWS)
    docs, report = convert_askapatient(nlp, path)
    assert [d.text for d in docs] == ["bad headache", "splitting head", "skin rash all over",
                                      "tired all the time"]
    assert [d.user_data[DOC_ID_KEY] for d in docs] == [
        "AskAPatient.fold-0.train.txt:1", "AskAPatient.fold-0.train.txt:2",
        "AskAPatient.fold-0.train.txt:3", "AskAPatient.fold-0.train.txt:5"]
    for doc in docs:
        assert len(doc.ents) == 1
        ent = doc.ents[0]
        assert (ent.start_char, ent.end_char) == (0, len(doc.text))
        assert ent.label_ == DEFAULT_LABEL == "MedicalConcept"
    assert [d.ents[0].kb_id_ for d in docs] == ["10019211", "10019211", "271807003", "84229001"]
    assert report.counts["documents"] == 4
    assert report.counts["mentions"] == 4
    assert report.counts["latin1_lines"] == 0


def test_custom_label_and_crlf(nlp, tmp_path):
    path = write_rows(tmp_path / "f.txt", ROWS[:1], newline="\r\n")
    docs, _ = convert_askapatient(nlp, path, label="ADR")
    assert docs[0].text == "bad headache"
    assert docs[0].ents[0].label_ == "ADR"
    assert docs[0].ents[0].text == "bad headache"


def test_latin1_line_decoded_and_counted(nlp, tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes(b"10019211\tHeadache\tbad headache\n"
                     + b"84229001\tFatigue\tm\xfcde und schw\xf6ch\n"
                     + "84229001\tFatigue\tm\u00fcde (utf-8)\n".encode("utf-8"))
    report = ConversionReport()
    rows = list(read_askapatient(path, report))
    assert [r[3] for r in rows] == ["bad headache", "m\u00fcde und schw\u00f6ch",
                                    "m\u00fcde (utf-8)"]
    assert report.counts["latin1_lines"] == 1
    assert report.examples["latin1_lines"] == ["line 2"]
    docs, conv = convert_askapatient(nlp, path)
    assert docs[1].text == "m\u00fcde und schw\u00f6ch"
    assert docs[1].ents[0].kb_id_ == "84229001"
    assert conv.counts["latin1_lines"] == 1


def test_read_rows_strip_fields(tmp_path):
    path = write_rows(tmp_path / "f.txt", [" 10019211 \t Headache \t bad headache "])
    assert list(read_askapatient(path)) == [(1, "10019211", "Headache", "bad headache")]


@pytest.mark.parametrize("bad_row,problem", [
    ("10019211\tbad headache", "2 fields"),
    ("10019211\tHeadache\tbad\theadache", "4 fields"),
    ("10019211\tHeadache\t   ", "empty phrase"),
    ("\tHeadache\tbad headache", "empty concept id"),
])
def test_bad_rows_e053(nlp, tmp_path, bad_row, problem):
    path = write_rows(tmp_path / "bad.txt", ROWS[:2] + [bad_row])
    with pytest.raises(CorpusFormatError) as err:
        convert_askapatient(nlp, path)
    assert err.value.code == "E053"
    message = str(err.value)
    assert f"{path}, line 3" in message
    assert f"({problem})" in message


def test_missing_file_e008(nlp, tmp_path):
    with pytest.raises(BioELError) as err:
        convert_askapatient(nlp, tmp_path / "absent.txt")
    assert err.value.code == "E008"


def test_load_kb_over_several_files(tmp_path):
    first = write_rows(tmp_path / "train.txt", [
        "10019211\tHeadache\tbad headache",
        "271807003\tEruption of skin\tskin rash",
        "10019211\tHeadache\tpounding head",
    ])
    second = write_rows(tmp_path / "test.txt", [
        "10019211\tCephalalgia\tmy head hurts",
        "84229001\tFatigue\ttired",
        "271807003\tSkin rash\trash",
        "10019211\tHead pain\thead pain",
        "10019211\tCephalalgia\tachy",
    ])
    kb = load_askapatient_kb([first, second])
    assert kb.concept_ids == ["10019211", "271807003", "84229001"]
    assert kb["10019211"].canonical_name == "Headache"
    assert kb["10019211"].synonyms == ("Cephalalgia", "Head pain")
    assert kb["271807003"].canonical_name == "Eruption of skin"
    assert kb["271807003"].synonyms == ("Skin rash",)
    assert kb["84229001"].canonical_name == "Fatigue"
    assert kb["84229001"].synonyms == ()
    assert kb.name == "AskAPatient concepts"
    assert kb.meta["format"] == "askapatient"
    assert kb.meta["source"] == [str(first), str(second)]
    assert kb.lookup_alias("cephalalgia") == ["10019211"]
    # file order decides the canonical name
    reversed_kb = load_askapatient_kb([second, first], name="rev")
    assert reversed_kb["10019211"].canonical_name == "Cephalalgia"
    assert reversed_kb["10019211"].synonyms == ("Head pain", "Headache")
    assert reversed_kb.name == "rev"


def test_load_kb_empty_description_e003(tmp_path):
    path = write_rows(tmp_path / "f.txt", ["10019211\tHeadache\tbad", "84229001\t \ttired"])
    with pytest.raises(KBFormatError) as err:
        load_askapatient_kb([path])
    assert err.value.code == "E003"
    assert "line 2" in str(err.value)
    assert "'84229001'" in str(err.value)


def test_load_kb_bad_row_e053(tmp_path):
    path = write_rows(tmp_path / "f.txt", ["10019211\tHeadache"])
    with pytest.raises(CorpusFormatError) as err:
        load_askapatient_kb([path])
    assert err.value.code == "E053"

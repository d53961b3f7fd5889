"""Tests for the streamed UMLS RRF loader, on tiny synthetic META directories."""
import logging
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from spacy_bioel.errors import BioELError, KBFormatError
from spacy_bioel.kb import KnowledgeBase, load_kb
from spacy_bioel.kb.umls import load_umls
from tests.utils import write_lines


def conso(cui: str, string: str, *, lat: str = "ENG", ts: str = "S", stt: str = "PF",
          ispref: str = "Y", sab: str = "MSH", suppress: str = "N", aui: str = "A0") -> str:
    """One MRCONSO line: CUI|LAT|TS|LUI|STT|SUI|ISPREF|AUI|SAUI|SCUI|SDUI|SAB|TTY|CODE|STR|SRL|SUPPRESS|CVF|"""
    fields = [cui, lat, ts, "L0", stt, "S0", ispref, aui, "", "", "", sab, "PT", "X1", string,
              "0", suppress, ""]
    return "|".join(fields) + "|"


def sty(cui: str, tui: str, name: str = "Disease or Syndrome") -> str:
    return f"{cui}|{tui}|B2.2.1.2.1|{name}|AT0||"


def mrdef(cui: str, definition: str, *, sab: str = "MSH", suppress: str = "N") -> str:
    return f"{cui}|A0|AT0||{sab}|{definition}|{suppress}||"


MRCONSO_LINES = [
    # C0000001: the preferred atom (P/PF/Y) is the 4th row, from NCI
    conso("C0000001", "Diabetes", ts="S", sab="MSH"),
    conso("C0000001", "diabetes mellitus (disorder)", ts="P", stt="VO", sab="SNOMEDCT_US"),
    conso("C0000001", "Diabetes Mellitus", ts="P", stt="PF", ispref="N", sab="MSH"),
    conso("C0000001", "Diabetes Mellitus", ts="P", stt="PF", ispref="Y", sab="NCI"),
    conso("C0000001", "Diabetes", ts="S", sab="NCI"),  # duplicate string
    conso("C0000001", "Diab\u00e8te sucr\u00e9", lat="FRE", ts="P", sab="MSHFRE"),
    conso("C0000001", "DM", sab="MSH", suppress="O"),
    conso("C0000001", "DM2 obsolete", sab="NCI", suppress="E"),
    # C0000002: only a suppressible atom
    conso("C0000002", "Obsolete thing", ts="P", sab="MSH", suppress="Y"),
    # C0000003: French only
    conso("C0000003", "C\u00e9phal\u00e9e", lat="FRE", ts="P", sab="MSHFRE"),
    # C0000004: MSH preferred, NCI synonym
    conso("C0000004", "Headache", ts="P", sab="MSH"),
    conso("C0000004", "Cephalgia", ts="S", sab="NCI"),
]
MRSTY_LINES = [
    sty("C0000001", "T047"),
    sty("C0000001", "T191", "Neoplastic Process"),
    sty("C0000001", "T047"),  # duplicate
    sty("C0000004", "T184", "Sign or Symptom"),
    sty("C0000099", "T999", "Not loaded"),
]
MRDEF_LINES = [
    mrdef("C0000001", "A metabolic disease (MSH).", sab="MSH"),
    mrdef("C0000001", "Hyperglycaemia (NCI).", sab="NCI"),
    mrdef("C0000004", "Suppressed definition.", sab="NCI", suppress="O"),
    mrdef("C0000004", "Pain in the head.", sab="NCI"),
    mrdef("C0000099", "Not loaded.", sab="NCI"),
]


def make_meta(directory: Path, *, conso_lines: Optional[List[str]] = None,
              sty_lines: Optional[List[str]] = None, def_lines: Optional[List[str]] = None,
              gz: bool = False) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    ext = ".RRF.gz" if gz else ".RRF"
    write_lines(directory / f"MRCONSO{ext}", MRCONSO_LINES if conso_lines is None else conso_lines)
    if sty_lines is not None:
        write_lines(directory / f"MRSTY{ext}", sty_lines)
    if def_lines is not None:
        write_lines(directory / f"MRDEF{ext}", def_lines)
    return directory


@pytest.fixture
def meta_dir(tmp_path: Path) -> Path:
    return make_meta(tmp_path / "META", sty_lines=MRSTY_LINES, def_lines=MRDEF_LINES)


def summary(kb: KnowledgeBase) -> Dict[str, tuple]:
    return {c.concept_id: (c.canonical_name, c.synonyms, c.types, c.definition) for c in kb}


def test_umls_default_filters(meta_dir: Path):
    kb = load_umls(meta_dir, progress=False)
    assert kb.name == "UMLS"
    assert kb.concept_ids == ["C0000001", "C0000004"]
    assert summary(kb) == {
        "C0000001": ("Diabetes Mellitus", ("Diabetes", "diabetes mellitus (disorder)"),
                     ("T047", "T191"), "A metabolic disease (MSH)."),
        "C0000004": ("Headache", ("Cephalgia",), ("T184",), "Pain in the head."),
    }
    assert kb.meta["format"] == "umls"
    assert kb.meta["load_report"] == {
        "mrconso_rows": 12, "mrconso_kept": 7, "skipped_language": 2, "skipped_source": 0,
        "skipped_suppressed": 3, "skipped_empty_name": 0, "mrsty_rows": 5, "mrdef_rows": 5,
        "mrdef_skipped_source": 0, "mrdef_skipped_suppressed": 1, "concepts": 2,
        "with_types": 2, "with_definition": 2,
    }


def test_umls_preferred_name_is_ts_p_stt_pf_ispref_y(tmp_path: Path):
    lines = [
        conso("C1", "first row", ts="S"),
        conso("C1", "P but VO", ts="P", stt="VO", ispref="Y"),
        conso("C1", "P PF not ISPREF", ts="P", stt="PF", ispref="N"),
        conso("C1", "The Preferred Name", ts="P", stt="PF", ispref="Y"),
        conso("C1", "a later P PF Y", ts="P", stt="PF", ispref="Y"),
    ]
    kb = load_umls(make_meta(tmp_path / "META", conso_lines=lines), progress=False)
    assert kb["C1"].canonical_name == "The Preferred Name"
    assert kb["C1"].synonyms == ("first row", "P but VO", "P PF not ISPREF", "a later P PF Y")


def test_umls_preferred_name_falls_back_to_first_kept_row(tmp_path: Path):
    lines = [
        conso("C1", "First Kept", ts="S", stt="VO", ispref="N"),
        conso("C1", "Second", ts="P", stt="VO", ispref="Y"),
        conso("C1", "First Kept", ts="S", stt="PF", ispref="Y"),
    ]
    kb = load_umls(make_meta(tmp_path / "META", conso_lines=lines), progress=False)
    assert kb["C1"].canonical_name == "First Kept"
    assert kb["C1"].synonyms == ("Second",)


def test_umls_source_filter(meta_dir: Path):
    kb = load_umls(meta_dir, sources=["NCI"], progress=False)
    assert summary(kb) == {
        "C0000001": ("Diabetes Mellitus", ("Diabetes",), ("T047", "T191"),
                     "Hyperglycaemia (NCI)."),
        # no P/PF atom left: the first kept row is the canonical name
        "C0000004": ("Cephalgia", (), ("T184",), "Pain in the head."),
    }
    report = kb.meta["load_report"]
    assert report["skipped_source"] == 6  # 4 rows of C0000001, C0000002, Headache (MSH)
    assert report["skipped_language"] == 2
    assert report["skipped_suppressed"] == 1  # only the NCI 'E' row reaches the suppress filter
    assert report["mrdef_skipped_source"] == 1


def test_umls_source_filter_keeps_preferred_string(meta_dir: Path):
    # The P/PF/Y atom is NCI's; MSH's P/PF atom has the same (preferred) string.
    kb = load_umls(meta_dir, sources=("MSH",), progress=False)
    assert kb["C0000001"].canonical_name == "Diabetes Mellitus"
    assert kb["C0000001"].synonyms == ("Diabetes",)
    assert kb["C0000004"].synonyms == ()
    assert kb["C0000001"].definition == "A metabolic disease (MSH)."
    assert kb["C0000004"].definition is None


def test_umls_language_filter(meta_dir: Path):
    kb = load_umls(meta_dir, languages=("ENG", "FRE"), progress=False)
    assert kb.concept_ids == ["C0000001", "C0000003", "C0000004"]
    assert kb["C0000001"].synonyms == ("Diabetes", "diabetes mellitus (disorder)",
                                       "Diab\u00e8te sucr\u00e9")
    assert kb["C0000003"].canonical_name == "C\u00e9phal\u00e9e"
    assert kb["C0000003"].types == ()
    assert kb["C0000003"].definition is None
    fre = load_umls(meta_dir, languages="FRE", progress=False)  # a bare string is one language
    assert summary(fre) == {
        "C0000001": ("Diab\u00e8te sucr\u00e9", (), ("T047", "T191"), "A metabolic disease (MSH)."),
        "C0000003": ("C\u00e9phal\u00e9e", (), (), None),
    }
    every = load_umls(meta_dir, languages=None, progress=False)
    assert every.meta["load_report"]["skipped_language"] == 0
    assert every.concept_ids == ["C0000001", "C0000003", "C0000004"]


def test_umls_suppress_filter(meta_dir: Path):
    kb = load_umls(meta_dir, include_suppressed=True, progress=False)
    assert kb.concept_ids == ["C0000001", "C0000002", "C0000004"]
    assert kb["C0000001"].synonyms == ("Diabetes", "diabetes mellitus (disorder)", "DM",
                                       "DM2 obsolete")
    assert kb["C0000002"].canonical_name == "Obsolete thing"
    assert kb["C0000004"].definition == "Suppressed definition."
    assert kb.meta["load_report"]["skipped_suppressed"] == 0
    assert "C0000002" not in load_umls(meta_dir, progress=False)


def test_umls_alias_lookup_and_prefix(meta_dir: Path):
    kb = load_umls(meta_dir, progress=False)
    assert kb.lookup_alias("diabetes mellitus") == ["C0000001"]
    assert kb.lookup_alias("CEPHALGIA") == ["C0000004"]
    assert kb["UMLS:C0000004"].canonical_name == "Headache"


def test_umls_optional_files_missing(tmp_path: Path):
    kb = load_umls(make_meta(tmp_path / "META"), progress=False)
    assert summary(kb)["C0000001"] == ("Diabetes Mellitus",
                                      ("Diabetes", "diabetes mellitus (disorder)"), (), None)
    assert kb.meta["load_report"]["mrsty_rows"] == 0
    assert kb.meta["load_report"]["mrdef_rows"] == 0


def test_umls_gz_input(tmp_path: Path, meta_dir: Path):
    gz_dir = make_meta(tmp_path / "gz" / "META", sty_lines=MRSTY_LINES, def_lines=MRDEF_LINES,
                       gz=True)
    assert sorted(p.name for p in gz_dir.iterdir()) == ["MRCONSO.RRF.gz", "MRDEF.RRF.gz",
                                                       "MRSTY.RRF.gz"]
    assert summary(load_umls(gz_dir, progress=False)) == summary(load_umls(meta_dir,
                                                                           progress=False))


def test_umls_release_root_with_meta_subdir(tmp_path: Path, meta_dir: Path):
    kb = load_umls(meta_dir.parent, progress=False)
    assert kb.concept_ids == ["C0000001", "C0000004"]
    assert kb["C0000001"].types == ("T047", "T191")


def test_umls_blank_lines_skipped(tmp_path: Path):
    lines = ["", conso("C1", "Name"), "", conso("C1", "Other")]
    kb = load_umls(make_meta(tmp_path / "META", conso_lines=lines), progress=False)
    assert summary(kb) == {"C1": ("Name", ("Other",), (), None)}
    assert kb.meta["load_report"]["mrconso_rows"] == 2


def test_umls_via_load_kb_and_binary_round_trip(tmp_path: Path, meta_dir: Path):
    kb = load_kb("umls", meta_dir, sources=["NCI"], progress=False)
    assert kb["C0000004"].canonical_name == "Cephalgia"
    again = KnowledgeBase.from_bytes(kb.to_bytes())
    assert summary(again) == summary(kb)
    assert again.meta["load_report"] == kb.meta["load_report"]


def test_umls_progress_bar_and_logging(meta_dir: Path, capsys, caplog):
    with caplog.at_level(logging.INFO, logger="spacy_bioel.kb.umls"):
        load_umls(meta_dir, progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "MRCONSO.RRF" in captured.err
    assert "12 rows read, 7 kept" in caplog.text
    assert "2 by language" in caplog.text
    assert "3 suppressible" in caplog.text
    load_umls(meta_dir, progress=False)
    assert capsys.readouterr().err == ""


# -- coded errors -----------------------------------------------------------

def test_umls_e001_mrconso_wrong_field_count(tmp_path: Path):
    bad = "|".join(["C2", "ENG", "P", "L0", "PF", "S0", "Y", "A0", "", "", "", "MSH", "PT",
                    "X1", "Name", "0", "N"]) + "|"  # 17 fields
    directory = make_meta(tmp_path / "META", conso_lines=[conso("C1", "Ok"), conso("C1", "Ok2"), bad])
    with pytest.raises(KBFormatError) as err:
        load_umls(directory, progress=False)
    assert err.value.code == "E001"
    message = str(err.value)
    assert str(directory / "MRCONSO.RRF") in message
    assert "line 3" in message
    assert "MRCONSO" in message
    assert "17 fields" in message


def test_umls_e001_mrconso_no_trailing_pipe(tmp_path: Path):
    line = conso("C1", "Ok")[:-2] + "|256"  # CVF '256', no trailing '|'
    assert line.endswith("|N|256")
    directory = make_meta(tmp_path / "META", conso_lines=[line])
    with pytest.raises(KBFormatError) as err:
        load_umls(directory, progress=False)
    assert err.value.code == "E001"
    assert "line 1" in str(err.value)
    assert "18 fields and no trailing '|'" in str(err.value)


def test_umls_e001_mrsty(tmp_path: Path):
    directory = make_meta(tmp_path / "META", sty_lines=[sty("C0000001", "T047"), "C0000001|T047|"])
    with pytest.raises(KBFormatError) as err:
        load_umls(directory, progress=False)
    assert err.value.code == "E001"
    assert str(directory / "MRSTY.RRF") in str(err.value)
    assert "line 2" in str(err.value)
    assert "MRSTY" in str(err.value)


def test_umls_e001_mrdef_gz(tmp_path: Path):
    directory = make_meta(tmp_path / "META", def_lines=["C0000001|A0|AT0||MSH|a|b|c|N||"],
                          gz=True)
    with pytest.raises(KBFormatError) as err:
        load_umls(directory, progress=False)
    assert err.value.code == "E001"
    assert str(directory / "MRDEF.RRF.gz") in str(err.value)
    assert "line 1" in str(err.value)
    assert "10 fields" in str(err.value)


def test_umls_e009_no_mrconso(tmp_path: Path):
    directory = tmp_path / "META"
    directory.mkdir()
    write_lines(directory / "MRSTY.RRF", MRSTY_LINES)
    write_lines(directory / "MRDEF.RRF", MRDEF_LINES)
    with pytest.raises(BioELError) as err:
        load_umls(directory, progress=False)
    assert err.value.code == "E009"
    assert str(directory) in str(err.value)
    assert "found: MRDEF.RRF, MRSTY.RRF" in str(err.value)


def test_umls_e009_empty_dir(tmp_path: Path):
    with pytest.raises(BioELError) as err:
        load_umls(tmp_path, progress=False)
    assert err.value.code == "E009"
    assert "found: nothing" in str(err.value)


def test_umls_e008_missing_dir(tmp_path: Path):
    with pytest.raises(BioELError) as err:
        load_umls(tmp_path / "does-not-exist", progress=False)
    assert err.value.code == "E008"


def test_umls_e012_nothing_kept(meta_dir: Path):
    with pytest.raises(BioELError) as err:
        load_umls(meta_dir, languages=("XXX",), progress=False)
    assert err.value.code == "E012"
    assert "MRCONSO.RRF" in str(err.value)
    assert "languages=['XXX']" in str(err.value)

import gzip

import pytest

from spacy_bioel.errors import BioELError, KBFormatError
from spacy_bioel.kb import load_kb
from spacy_bioel.kb.medic import load_ctd_diseases, load_medic_dictionary, normalize_medic_id

MEDIC = (
    "D065008||Scorpion Stings|Scorpionism|Scorpion Sting\n"
    "608446|D009203||Myocardial Infarction|Heart Attack|Myocardial Infarction\n"
    "145250||HYPERPIGMENTATION, FAMILIAL PROGRESSIVE, 2|FPH\n"
    "\n"
    "C567755|613097||Tooth Agenesis, Selective, 6|STHAG6\n"
)

CTD = (
    "# Fields:\n"
    "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"
    "Myocardial Infarction\tMESH:D009203\tDO:DOID:5844|OMIM:608446\tNECROSIS of the MYOCARDIUM.\tMESH:D017202\tC14.280\tC14\tHeart Attack|Infarct, Myocardial\tCardiovascular disease\n"
    "Fam Hyperpigmentation\tOMIM:145250\t\t\tMESH:D017496\t\t\t\t\n"
)


@pytest.mark.parametrize("raw,expected", [(" MESH:C535662", "C535662"), ("277900", "OMIM:277900"),
                                          ("OMIM:1", "OMIM:1"), ("D009203", "D009203")])
def test_normalize_medic_id(raw, expected):
    assert normalize_medic_id(raw) == expected


def test_medic_dictionary(tmp_path):
    path = tmp_path / "medic.txt"
    path.write_text(MEDIC)
    kb = load_medic_dictionary(path, progress=False)
    assert kb.concept_ids == ["D065008", "D009203", "OMIM:145250", "C567755"]
    mi = kb["D009203"]
    assert mi.canonical_name == "Myocardial Infarction"
    assert mi.synonyms == ("Heart Attack",)  # the repeated canonical name is dropped
    assert mi.alt_ids == ("OMIM:608446",)
    assert kb.resolve("OMIM:608446") == "D009203"
    assert kb.resolve("613097") is None and kb.resolve("OMIM:613097") == "C567755"
    assert kb.resolve("MESH:D065008") == "D065008"
    assert kb.lookup_alias("heart attack") == ["D009203"]


def test_medic_dictionary_gz_and_dispatch(tmp_path):
    path = tmp_path / "medic.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(MEDIC)
    assert len(load_kb("medic", path, progress=False)) == 4


@pytest.mark.parametrize("line,code", [
    ("D1|Name|Syn", "E001"),          # no '||'
    ("||Name", "E001"),               # no id
    ("D1||", "E003"),                 # empty name
])
def test_medic_dictionary_errors(tmp_path, line, code):
    path = tmp_path / "medic.txt"
    path.write_text("D065008||Scorpion Stings\n" + line + "\n")
    with pytest.raises(KBFormatError) as err:
        load_medic_dictionary(path, progress=False)
    assert err.value.code == code
    assert f"{path}, line 2" in str(err.value)


def test_medic_duplicate_id(tmp_path):
    path = tmp_path / "medic.txt"
    path.write_text("D1||One\nD2||Two\nD1||Again\n")
    with pytest.raises(KBFormatError) as err:
        load_medic_dictionary(path, progress=False)
    assert err.value.code == "E002"
    assert "line 3" in str(err.value) and "first seen on line 1" in str(err.value)


def test_ctd_diseases(tmp_path):
    path = tmp_path / "CTD_diseases.tsv"
    path.write_text(CTD)
    kb = load_ctd_diseases(path, progress=False)
    mi = kb["D009203"]
    assert mi.synonyms == ("Heart Attack", "Infarct, Myocardial")
    assert mi.definition == "NECROSIS of the MYOCARDIUM."
    assert mi.relations == (("is_a", "D017202"),)
    assert mi.types == ("Cardiovascular disease",)
    assert kb.resolve("DO:DOID:5844") == "D009203"
    assert kb.resolve("MESH:D009203") == "D009203"
    assert kb["OMIM:145250"].definition is None


def test_ctd_errors(tmp_path):
    path = tmp_path / "CTD_diseases.tsv"
    path.write_text(CTD + "Broken\tMESH:D1\n")
    with pytest.raises(KBFormatError) as err:
        load_ctd_diseases(path, progress=False)
    assert err.value.code == "E001" and "line 5" in str(err.value)
    path.write_text(CTD + "\tMESH:D1\t\t\t\t\t\t\t\n")
    with pytest.raises(KBFormatError) as err:
        load_ctd_diseases(path, progress=False)
    assert err.value.code == "E003"
    path.write_text(CTD + "Loop\tMESH:D1\t\t\tMESH:D1\t\t\t\t\n")
    with pytest.raises(KBFormatError) as err:
        load_ctd_diseases(path, progress=False)
    assert err.value.code == "E014"


def test_a_space_after_the_mesh_prefix_and_old_mac_line_endings(tmp_path):
    """'MESH: D001' is D001 (not ' D001', which nothing resolves); a file whose lines
    end in '\\r' alone loads line by line, also as UTF-16 without a byte-order mark."""
    text = "MESH: D001||Colon cancer|colon carcinoma\rD002||Asthma\r"
    (tmp_path / "cr.txt").write_text(text, newline="")
    kb = load_medic_dictionary(tmp_path / "cr.txt", progress=False)
    assert [c.concept_id for c in kb] == ["D001", "D002"] and kb["D001"].synonyms == ("colon carcinoma",)
    for codec in ("utf-16-le", "utf-16-be", "utf-32-le"):
        (tmp_path / codec).write_bytes(text.encode(codec))
        kb = load_medic_dictionary(tmp_path / codec, progress=False, encoding=codec[:6])
        assert [c.concept_id for c in kb] == ["D001", "D002"], codec
    (tmp_path / "utf8.txt").write_text(text)
    with pytest.raises(BioELError) as err:  # the byte order cannot be told
        load_medic_dictionary(tmp_path / "utf8.txt", progress=False, encoding="utf-16")
    assert err.value.code == "E251"

import gzip

import pytest

from spacy_bioel.errors import BioELError, KBFormatError
from spacy_bioel.kb.obo import load_obo

OBO = """format-version: 1.2
data-version: test/2024-01-01
ontology: hp

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0000118
name: Phenotypic abnormality
def: "A phenotypic abnormality." []
namespace: human_phenotype
alt_id: HP:0000999
synonym: "Organ abnormality" EXACT []
synonym: "Abnormal phenotype" RELATED []
synonym: "Phenotypic abnormality" EXACT []
synonym: "Broad thing" BROAD []
is_a: HP:0000001 ! All
relationship: part_of HP:0000001

[Term]
id: HP:0000002
name: Old term
is_obsolete: true

[Term]
id: UBERON:0000955
name: brain

[Typedef]
id: part_of
name: part of
"""


def write(tmp_path, text, gz=False):
    path = tmp_path / ("onto.obo.gz" if gz else "onto.obo")
    if gz:
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_load_obo(tmp_path, gz):
    kb = load_obo(write(tmp_path, OBO, gz), prefixes=["HP:"], progress=False)
    assert kb.concept_ids == ["HP:0000001", "HP:0000118"]
    term = kb["HP:0000118"]
    assert term.synonyms == ("Organ abnormality", "Abnormal phenotype", "Broad thing")
    assert term.synonym_scopes == ("EXACT", "RELATED", "BROAD")
    assert term.definition == "A phenotypic abnormality."
    assert term.types == ("human_phenotype",)
    assert term.relations == (("is_a", "HP:0000001"), ("part_of", "HP:0000001"))
    assert kb.resolve("HP:0000999") == "HP:0000118"
    report = kb.meta["load_report"]
    assert report["obsolete_terms"] == 1
    assert report["other_prefix_terms"] == 1
    assert report["duplicate_synonyms"] == 1
    assert report["non_term_stanzas"] == 1


def test_obo_scope_filter_and_no_prefix(tmp_path):
    kb = load_obo(write(tmp_path, OBO), synonym_scopes=["EXACT"], progress=False)
    assert "UBERON:0000955" in kb
    assert kb["HP:0000118"].synonyms == ("Organ abnormality",)
    assert kb.meta["load_report"]["synonyms_out_of_scope"] == 2


def test_obo_syntax_error_names_line(tmp_path):
    path = write(tmp_path, "format-version: 1.2\n\n[Term]\nid: HP:1\nname: a\nsynonym: broken\n")
    with pytest.raises(KBFormatError) as err:
        load_obo(path, progress=False)
    assert err.value.code == "E011" and "line 6" in str(err.value) and str(path) in str(err.value)


def test_obo_missing_name_and_empty(tmp_path):
    with pytest.raises(KBFormatError) as err:
        load_obo(write(tmp_path, "format-version: 1.2\n\n[Term]\nid: HP:1\ndef: \"x\" []\n"),
                 progress=False)
    assert err.value.code == "E003"
    with pytest.raises(BioELError) as err:
        load_obo(write(tmp_path, OBO), prefixes=["GO:"], progress=False)
    assert err.value.code == "E012"


def test_default_namespace_is_the_type_of_terms_without_one(tmp_path):
    path = tmp_path / "hp.obo"
    path.write_text(OBO.replace("ontology: hp\n", "ontology: hp\ndefault-namespace: hp_default\n"))
    kb = load_obo(path, progress=False)
    assert kb["HP:0000001"].types == ("hp_default",)  # no namespace clause: the header's
    assert kb["HP:0000118"].types == ("human_phenotype",)  # its own clause wins
    assert kb["UBERON:0000955"].types == ("hp_default",)

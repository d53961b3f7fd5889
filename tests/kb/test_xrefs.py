"""Cross-references: kept by the loaders, serialised, read in an id space, written by the linker."""
import gzip

import pytest
import spacy

from spacy_bioel.kb.concept import Concept
from spacy_bioel.kb.knowledge_base import KnowledgeBase
from spacy_bioel.kb.xrefs import coverage, id_in_space, space_of, spaces

OBO = """format-version: 1.2

[Term]
id: DOID:9256
name: colorectal cancer
xref: MESH:D015179
xref: UMLS_CUI:C0009404
xref: SNOMEDCT_US_2023_03_01:126837005
xref: UMLS_CUI:C0346629

[Term]
id: DOID:2841
name: asthma
xref: NCI:C28397

[Term]
id: DOID:4
name: disease
"""


def test_space_of_reads_spellings_as_one():
    assert space_of("UMLS_CUI") == space_of("cui") == space_of("UMLS") == "UMLS"
    assert space_of("MSH") == space_of("mesh") == "MESH"
    assert space_of("SNOMEDCT_US_2023_03_01") == space_of("SNOMEDCT_US") == "SNOMEDCT_US"
    assert space_of("ICD10CM") == "ICD10CM"


def test_id_in_space_takes_the_first_and_the_own_id():
    concept = Concept("DOID:9256", "colorectal cancer",
                      xrefs=("UMLS_CUI:C0009404", "MESH:D015179", "UMLS_CUI:C0346629"))
    assert id_in_space(concept, "UMLS") == "C0009404"
    assert id_in_space(concept, "MESH") == "D015179"
    assert id_in_space(concept, "DOID") == "9256"
    assert id_in_space(concept, "OMIM") is None
    assert id_in_space(Concept("C0011849", "diabetes"), "CUI") == "C0011849"
    assert id_in_space(Concept("D003920", "diabetes"), "MESH") == "D003920"


def test_obo_loader_keeps_xrefs_and_the_kb_round_trips(tmp_path):
    path = tmp_path / "mini.obo.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(OBO)
    from spacy_bioel.kb.obo import load_obo

    kb = load_obo(path, progress=False)
    crc = kb.get("DOID:9256")
    assert set(crc.xrefs) == {"MESH:D015179", "UMLS_CUI:C0009404", "UMLS_CUI:C0346629",
                              "SNOMEDCT_US_2023_03_01:126837005"}
    assert kb.get("DOID:4").xrefs == ()
    again = KnowledgeBase.from_bytes(kb.to_bytes())
    assert [c.xrefs for c in again] == [c.xrefs for c in kb]
    assert kb.stats()["with_xrefs"] == 2
    assert spaces(kb)["UMLS"] == 1 and spaces(kb)["NCI"] == 1
    report = coverage(kb, "umls")
    assert (report["mapped"], report["concepts"], report["several"]) == (1, 3, 1)
    assert coverage(kb, "MESH", ["DOID:9256", "DOID:2841", "DOID:999"])["not_in_kb"] == 1


def test_a_kb_without_xrefs_keeps_its_digest():
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colon cancer"))
    assert b"xrefs" not in kb._packed()
    kb.add(Concept("D2", "asthma", xrefs=("UMLS:C0004096",)))
    assert KnowledgeBase.from_bytes(kb.to_bytes()).get("D2").xrefs == ("UMLS:C0004096",)


def test_medic_and_ctd_xrefs(tmp_path):
    from spacy_bioel.kb.medic import load_ctd_diseases, load_medic_dictionary

    medic = tmp_path / "medic.txt"
    medic.write_text("D015179|114500||Colorectal Neoplasms|colon cancer\n")
    kb = load_medic_dictionary(medic, progress=False)
    assert kb.get("D015179").xrefs == ("MESH:D015179", "OMIM:114500")
    ctd = tmp_path / "ctd.tsv"
    ctd.write_text("Colorectal Neoplasms\tMESH:D015179\tDO:DOID:9256|OMIM:114500\t\t\t\t\t"
                   "colon cancer\t\n")
    kb = load_ctd_diseases(ctd, progress=False)
    concept = kb.get("D015179")
    assert concept.xrefs == ("MESH:D015179", "DOID:9256", "OMIM:114500")
    assert id_in_space(concept, "DOID") == "9256"


def test_umls_xrefs_are_source_codes(tmp_path):
    from spacy_bioel.kb.umls import load_umls

    rows = ["C0011849|ENG|P|L1|PF|S1|Y|A1||||MSH|MH|D003920|Diabetes Mellitus|0|N||",
            "C0011849|ENG|S|L2|PF|S2|N|A2||||SNOMEDCT_US|PT|73211009|Diabetes|9|N||",
            "C0011849|ENG|S|L3|PF|S3|N|A3||||MTH|PN|NOCODE|diabetes (disease)|0|N||"]
    (tmp_path / "MRCONSO.RRF").write_text("\n".join(rows) + "\n")
    kb = load_umls(tmp_path, progress=False)
    concept = kb.get("C0011849")
    assert concept.xrefs == ("MSH:D003920", "SNOMEDCT_US:73211009")
    assert id_in_space(concept, "MESH") == "D003920"
    assert id_in_space(concept, "UMLS") == "C0011849"


def test_embedded_doid_carries_cross_references():
    from spacy_bioel.kb import load_embedded_kb

    kb = load_embedded_kb("doid")
    assert coverage(kb, "UMLS")["share"] > 0.5
    assert id_in_space(kb.get("DOID:9256"), "MESH") == "D015179"

"""The linker writes the linked concept's cross-references, and ids in another vocabulary."""
import spacy

from spacy_bioel.kb.concept import Concept
from spacy_bioel.kb.knowledge_base import KnowledgeBase


def _nlp(tiny_bert_dir, **settings):
    kb = KnowledgeBase(name="xrefs")
    kb.add(Concept("DOID:9256", "colorectal cancer", xrefs=("MESH:D015179", "UMLS_CUI:C0009404")))
    kb.add(Concept("DOID:2841", "asthma", xrefs=("NCI:C28397",)))
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config={
        "model": {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
                  "pooling": "mean", "max_length": 16},
        "nil": {"@misc": "spacy-bioel.ThresholdNIL.v1", "threshold": 1.0}, **settings})
    linker.set_kb(kb)
    nlp.initialize()
    return nlp, linker


def _doc(nlp):
    doc = nlp.make_doc("colorectal cancer and asthma")
    doc.ents = [doc.char_span(0, 17, "Disease"), doc.char_span(22, 28, "Disease")]
    return doc


def test_xrefs_and_id_space(tiny_bert_dir):
    nlp, linker = _nlp(tiny_bert_dir)
    doc = nlp(_doc(nlp))
    assert [e.kb_id_ for e in doc.ents] == ["DOID:9256", "DOID:2841"]
    assert doc.ents[0]._.kb_xrefs == ["MESH:D015179", "UMLS_CUI:C0009404"]
    linker.set_option("id_space", "cui")
    doc = nlp(_doc(nlp))
    assert [e.kb_id_ for e in doc.ents] == ["C0009404", "NIL"]  # asthma has no CUI here
    assert linker.counts["id_space_unmapped"] == 1
    assert doc.ents[1]._.kb_ents[0][0] == "DOID:2841"  # the candidates keep the KB's ids
    assert doc.ents[1]._.is_nil is False


def test_id_space_is_saved_with_the_pipeline(tiny_bert_dir, tmp_path):
    nlp, _ = _nlp(tiny_bert_dir, id_space="MESH")
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe("bioel_linker").cfg["id_space"] == "MESH"
    assert loaded(_doc(loaded)).ents[0].kb_id_ == "D015179"


def test_an_id_space_no_concept_has_is_an_error_not_all_nil(tiny_bert_dir, tmp_path):
    """A misspelt id_space (set, or saved in a config) is E261 naming the KB's
    vocabularies, not every mention written as NIL."""
    import pytest

    from spacy_bioel.errors import BioELError

    nlp, linker = _nlp(tiny_bert_dir)
    with pytest.raises(BioELError, match=r"E261.*'MESHX'.*MESH \(1\).*NCI \(1\).*UMLS \(1\)"):
        linker.set_option("id_space", "MESHX")
    linker.set_option("id_space", "msh")  # a spelling of MESH: fine
    assert nlp(_doc(nlp)).ents[0].kb_id_ == "D015179"
    linker.set_option("id_space", "DOID")  # the KB's own prefix
    assert nlp(_doc(nlp)).ents[1].kb_id_ == "2841"  # ids in a space are written without its prefix
    nlp, _ = _nlp(tiny_bert_dir, id_space="OMIM")  # in the config: checked at the first call
    with pytest.raises(BioELError, match="E261"):
        nlp(_doc(nlp))

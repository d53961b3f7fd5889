"""The KB shipped in the package, by handle: Python, config and `embedded:` paths."""
import pytest
from spacy.util import registry

from spacy_bioel import BioELError, KnowledgeBase
from spacy_bioel.kb import EMBEDDED_KBS, load_embedded_kb


def test_embedded_doid_by_handle():
    kb = load_embedded_kb("doid")
    assert len(kb) > 10000 and all(cid.startswith("DOID:") for cid in kb.concept_ids)
    assert len(KnowledgeBase.from_disk("embedded:doid")) == len(kb)
    assert EMBEDDED_KBS["doid"].is_file()


def test_embedded_kb_in_a_config():
    """`spacy-bioel.EmbeddedKB.v1` through spaCy's registry (entry point, no import)."""
    loader = registry.resolve({"kb": {"@misc": "spacy-bioel.EmbeddedKB.v1", "name": "doid"}})["kb"]
    assert loader().name == load_embedded_kb().name
    from_file = registry.resolve({"kb": {"@misc": "spacy-bioel.KBFromFile.v1",
                                         "path": "embedded:doid"}})["kb"]
    assert len(from_file()) == len(loader())


@pytest.mark.parametrize("name", ["umls", "embedded:hp"])
def test_unknown_handle_names_the_known_ones(name):
    with pytest.raises(BioELError) as err:
        load_embedded_kb(name)
    assert err.value.code == "E199" and "doid" in str(err.value)


def test_readme_component_example_route(tiny_bert_dir):
    """The README's first example: the KB named in nlp.config's [initialize] block, no
    spacy_bioel import (here on the tiny encoder instead of the embedded MiniLM)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config={"model": {"@architectures": "spacy-bioel.BiEncoder.v1",
                                                   "encoder": str(tiny_bert_dir)}})
    nlp.config["initialize"]["components"]["bioel_linker"] = {"kb_loader": {
        "@misc": "spacy-bioel.KBFromFile.v1", "path": "embedded:doid"}}
    nlp.initialize()
    assert len(nlp.get_pipe("bioel_linker").kb) == len(load_embedded_kb())
    doc = nlp.make_doc("Carriers of FAP develop colon cancer.")
    doc.ents = [doc.char_span(12, 15, "Disease"), doc.char_span(24, 36, "Disease")]
    assert all(ent.kb_id_ == "NIL" or ent.kb_id_.startswith("DOID:") for ent in nlp(doc).ents)

"""The exact-match shortcut: a mention that is a KB name of exactly one concept
links to it without the encoder; ambiguous names and defined abbreviations go
through the encoder; off by default."""
import pytest
import spacy
from spacy.tokens import Span

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError
from tests.utils import tiny_linker_config


@pytest.fixture(scope="module")
def nlp(tiny_bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colon cancer", ("CC",)))
    kb.add(Concept("D2", "cardiac arrest", ("CC",)))  # 'CC' names two concepts
    kb.add(Concept("D3", "familial adenomatous polyposis", ("FAP",)))
    kb.add(Concept("D4", "FAP syndrome variant"))
    nlp.get_pipe("bioel_linker").set_kb(kb)
    nlp.initialize()
    return nlp


def run(nlp, text, spans):
    doc = nlp.make_doc(text)
    doc.ents = [Span(doc, s, e, label="Disease") for s, e in spans]
    return nlp(doc)


def test_shortcut_is_off_by_default_and_validated(nlp):
    linker = nlp.get_pipe("bioel_linker")
    assert linker.cfg["exact_shortcut"] is False
    with pytest.raises(BioELError, match="E175"):
        linker.set_option("exact_shortcut", "maybe")


def test_exact_unique_names_skip_the_encoder(nlp, monkeypatch):
    linker = nlp.get_pipe("bioel_linker")
    linker.set_option("exact_shortcut", True)
    try:
        encoded = []
        embed = linker.embed
        monkeypatch.setattr(linker, "embed", lambda texts, tower, progress=False:
                            (encoded.extend(texts), embed(texts, tower, progress))[1])
        before = linker.counts["exact_shortcut"]
        doc = run(nlp, "Colon-Cancer and CC and heart failure", [(0, 3), (4, 5), (6, 8)])
        assert doc.ents[0].kb_id_ == "D1" and doc.ents[0]._.kb_ents == [("D1", 1.0)]
        assert linker.counts["exact_shortcut"] - before == 1
        assert encoded == ["CC", "heart failure"]  # ambiguous and unknown names are encoded
        # a defined abbreviation is read through its long form, not shortcut
        encoded.clear()
        run(nlp, "familial adenomatous polyposis ( FAP ) FAP", [(4, 5), (6, 7)])
        assert "familial adenomatous polyposis" in encoded and encoded.count("FAP") == 2
    finally:
        linker.set_option("exact_shortcut", False)

"""`spacy-bioel.one_label.v1`: every gold mention carries one label; spans,
kb ids and the other annotations of the reference are kept."""
import spacy
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import registry


def _example(nlp):
    reference = nlp.make_doc("Carriers of FAP develop colon cancer and BRCA1 tumours")
    reference.ents = [Span(reference, 2, 3, label="SpecificDisease", kb_id="D011125"),
                      Span(reference, 4, 6, label="DiseaseClass", kb_id="D003110"),
                      Span(reference, 7, 9, label="Modifier", kb_id="D009369")]
    reference.spans["bioel_overlaps"] = [Span(reference, 5, 6, label="DiseaseClass", kb_id="D1")]
    return Example(nlp.make_doc(reference.text), reference)


def test_every_mention_gets_the_one_label_and_keeps_its_span_and_id():
    nlp = spacy.blank("en")
    augment = registry.augmenters.get("spacy-bioel.one_label.v1")(label="Disease")
    example = _example(nlp)
    (out,) = list(augment(nlp, example))
    assert [(e.start, e.end, e.label_, e.kb_id_) for e in out.reference.ents] == [
        (2, 3, "Disease", "D011125"), (4, 6, "Disease", "D003110"), (7, 9, "Disease", "D009369")]
    assert [s.kb_id_ for s in out.reference.spans["bioel_overlaps"]] == ["D1"]
    assert [t.ent_iob_ for t in out.reference] == [t.ent_iob_ for t in example.reference]
    assert example.reference.ents[0].label_ == "SpecificDisease"  # the corpus doc is untouched


def test_no_label_keeps_the_corpus_labels():
    nlp = spacy.blank("en")
    augment = registry.augmenters.get("spacy-bioel.one_label.v1")(label=None)
    (out,) = list(augment(nlp, _example(nlp)))
    assert [e.label_ for e in out.reference.ents] == ["SpecificDisease", "DiseaseClass", "Modifier"]

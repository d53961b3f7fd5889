"""Document-level consistency of an NER's mentions: abbreviations defined in the
text and repeated strings are labelled as their mentions are; nothing found is
removed; what is left out is counted."""
import pytest
import spacy
from spacy.tokens import Span

from spacy_bioel.pipeline.consistency import MentionConsistency, implied_spans, long_form_label


def _doc(nlp, text, mentions, label="Disease"):
    doc = nlp.make_doc(text)
    spans = []
    for mention in mentions:
        start = text.index(mention)
        spans.append(doc.char_span(start, start + len(mention), label=label))
    doc.ents = spans
    return doc


@pytest.fixture
def nlp():
    return spacy.blank("en")


def _texts(doc):
    return [(ent.text, ent.label_) for ent in doc.ents]


def test_a_long_form_mention_makes_its_short_form_one_everywhere(nlp):
    text = "Patients with Stevens-Johnson syndrome (SJS) were seen. SJS recurred; sjs did not."
    component = MentionConsistency(nlp)
    doc = component(_doc(nlp, text, ["Stevens-Johnson syndrome"], label="DISEASE"))
    assert _texts(doc) == [("Stevens-Johnson syndrome", "DISEASE"), ("SJS", "DISEASE"),
                           ("SJS", "DISEASE")]  # the short form's case is kept
    assert component.counts == {"added_short_form": 2}


def test_a_short_form_mention_makes_its_long_form_one(nlp):
    text = "Neuroleptic malignant syndrome (NMS) is rare. NMS was fatal."
    doc = MentionConsistency(nlp)(_doc(nlp, text, ["NMS was"[:3]]))
    assert [e.text for e in doc.ents] == ["Neuroleptic malignant syndrome", "NMS"]


def test_a_long_form_across_a_line_break_is_found(nlp):
    text = "Neuroleptic malignant\nsyndrome (NMS) is rare. NMS was fatal."
    doc = nlp.make_doc(text)
    doc.ents = [doc.char_span(text.rindex("NMS"), text.rindex("NMS") + 3, label="Disease")]
    assert [e.text for e in MentionConsistency(nlp)(doc).ents] == [
        "Neuroleptic malignant\nsyndrome", "NMS"]


def test_a_mention_that_ends_the_long_form_and_covers_most_of_it_counts(nlp):
    labels = {"adenomatous polyposis": "Disease"}
    assert long_form_label("familial adenomatous polyposis", labels) == "Disease"
    assert long_form_label("familial adenomatous polyposis syndrome", labels) is None  # not its end
    assert long_form_label("a very long preceding adenomatous polyposis", labels) is None  # < half
    assert long_form_label("familial adenomatous polyposis", {"s polyposis": "X"}) is None  # mid-word
    text = "Carriers of familial adenomatous polyposis (FAP) develop cancer; FAP is inherited."
    doc = MentionConsistency(nlp)(_doc(nlp, text, ["adenomatous polyposis"]))
    assert [e.text for e in doc.ents] == ["adenomatous polyposis", "FAP", "FAP"]


def test_no_mention_no_definition_nothing_added(nlp):
    text = "Carriers of familial adenomatous polyposis (FAP) develop cancer."
    component = MentionConsistency(nlp)
    assert list(component(nlp.make_doc(text)).ents) == []
    doc = component(_doc(nlp, text, ["cancer"]))
    assert [e.text for e in doc.ents] == ["cancer"] and not component.counts


def test_what_overlaps_a_mention_or_misses_token_edges_is_counted_not_added(nlp):
    text = "Huntington disease (HD) is rare. HD-like disorders and HDs differ."
    doc = nlp.make_doc(text)
    start = text.index("HD-like disorders")
    doc.ents = [Span(doc, 0, 2, "Disease"),
                doc.char_span(start, start + len("HD-like disorders"), label="Disease")]
    component = MentionConsistency(nlp)
    found = component(doc)
    # "(HD)" is added; "HD" inside the mention "HD-like disorders" overlaps it
    assert [e.text for e in found.ents] == ["Huntington disease", "HD", "HD-like disorders"]
    assert component.counts == {"added_short_form": 1, "skipped_overlapping_a_mention": 1}
    text = "Lyme disease (LD) and xLD differ."
    assert [(s, e) for s, e, _, _ in implied_spans(_doc(nlp, text, ["Lyme disease"]))] == [(14, 16)]


def test_repeats_label_every_occurrence_of_a_mention_only_when_asked(nlp):
    text = "Gout flares. Later gout and Gout again."
    assert [e.text for e in MentionConsistency(nlp)(_doc(nlp, text, ["Gout"])).ents] == ["Gout"]
    component = MentionConsistency(nlp, abbreviations=False, repeats=True)
    doc = component(_doc(nlp, text, ["Gout"]))
    assert [e.text for e in doc.ents] == ["Gout", "Gout"]  # exact text: not "gout"
    assert component.counts == {"added_repeat": 1}


def test_nothing_found_is_removed_or_changed(nlp):
    text = "Cystic fibrosis (CF) and cystic fibrosis-related diabetes."
    doc = _doc(nlp, text, ["cystic fibrosis-related diabetes"])
    before = [(e.start, e.end, e.label_) for e in doc.ents]
    after = MentionConsistency(nlp, repeats=True)(doc)
    assert [(e.start, e.end, e.label_) for e in after.ents if (e.start, e.end, e.label_) in before] == before


def test_added_by_name_through_its_entry_point_and_checked(nlp):
    nlp.add_pipe("bioel_mention_consistency", config={"repeats": True})
    doc = nlp.make_doc("Gout flares. Gout again.")
    doc.ents = [Span(doc, 0, 1, "Disease")]
    assert [e.text for e in nlp.get_pipe("bioel_mention_consistency")(doc).ents] == ["Gout", "Gout"]
    with pytest.raises(Exception, match="repeats"):
        spacy.blank("en").add_pipe("bioel_mention_consistency", config={"repeats": "maybe"})


def test_it_counts_as_a_mention_finder_that_bracketed_text_disables():
    from spacy_bioel.pipeline.loading import mention_targets

    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_mention_consistency")
    assert mention_targets(nlp, "bioel_mention_consistency") == {None}

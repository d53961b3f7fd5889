"""The end-to-end measures of `bench.e2e`, checked by hand on three made-up
documents: a missed span, a wrong id, a right id on a wrong span, a repeated
concept, a NIL answer and a composite gold mention."""
import pytest
import spacy
from spacy.tokens import Span

from bench.e2e import (DocResult, counts, document_errors, gold_result, predicted_mentions, scores,
                       total_document_errors, unrepresentable)

D = "Disease"
DOCS = [
    # doc 1: 'colon cancer' right (D1); 'asthma' missed (D3); 'heart attack' linked to D9 (wrong id)
    DocResult(gold={(0, 12, D): {"D1"}, (20, 26, D): {"D3"}, (30, 42, D): {"D2"}},
              predicted={(0, 12, D): "D1", (30, 42, D): "D9"}),
    # doc 2: the right id D1 on a wrong span; 'colon cancer' again (D1 repeated); a NIL answer
    DocResult(gold={(0, 12, D): {"D1"}, (40, 52, D): {"D1"}},
              predicted={(0, 5, D): "D1", (40, 52, D): "D1", (60, 70, D): "NIL"}),
    # doc 3: a composite gold 'breast and ovarian cancer' (D4|D5) linked to D5
    DocResult(gold={(0, 25, D): {"D4", "D5"}}, predicted={(0, 25, D): "D5"}),
]


def test_counts_by_hand():
    c = [counts(doc) for doc in DOCS]
    # NER: doc 1 two of three spans; doc 2 one exact span of three predicted, two gold; doc 3 one
    assert [x["ner"] for x in c] == [(2, 0, 1), (1, 2, 1), (1, 0, 0)]
    # mentions: doc 1 D1 right, D9 wrong (fp) and gold D3, D2 unmatched; doc 2 the wrong span is a
    # false positive, the NIL answer no prediction; doc 3 any part of a composite is right
    assert [x["mentions"] for x in c] == [(1, 1, 2), (1, 1, 1), (1, 0, 0)]
    # documents: doc 1 {D1, D9} vs {D1, D2, D3}; doc 2 {D1} vs {D1} (repeated once);
    # doc 3 {D5} vs {D4, D5}
    assert [x["documents"] for x in c] == [(1, 1, 2), (1, 0, 0), (1, 0, 1)]


def test_micro_scores_and_intervals():
    result = scores(DOCS, n_bootstrap=200)
    assert (result["ner"]["tp"], result["ner"]["fp"], result["ner"]["fn"]) == (4, 2, 2)
    assert result["ner"]["p"] == pytest.approx(4 / 6) and result["ner"]["r"] == pytest.approx(4 / 6)
    assert result["mentions"]["f"] == pytest.approx(2 * 0.6 * 0.5 / 1.1)  # p 3/5, r 3/6
    assert result["documents"]["p"] == pytest.approx(3 / 4) and \
        result["documents"]["r"] == pytest.approx(3 / 6)
    low, high = result["documents"]["ci95"]["f"]
    assert 0.0 <= low <= result["documents"]["f"] <= high <= 1.0


def test_gold_docs_and_what_a_flat_ner_cannot_produce():
    nlp = spacy.blank("en")
    doc = nlp.make_doc("breast and ovarian cancer in BRCA1-carriers")
    doc.ents = [Span(doc, 0, 4, label=D, kb_id="D4|D5")]
    doc.spans["bioel_overlaps"] = [Span(doc, 2, 4, label=D, kb_id="D5")]
    gold = gold_result(doc, {})
    assert gold.gold == {(0, 25, D): {"D4", "D5"}, (11, 25, D): {"D5"}}
    assert gold.gold_concepts == {"D4", "D5"}
    assert unrepresentable([doc], nlp.make_doc) == {"gold_mentions": 2, "overlapping": 1,
                                                     "not_token_aligned": 0}


def test_a_gold_span_inside_a_token_is_counted():
    from spacy_bioel.corpora.documents import tokens_aligned_to

    nlp = spacy.blank("en")
    text = "BRCA1carriers have cancer"  # the default tokenizer keeps 'BRCA1carriers' whole
    doc = tokens_aligned_to(nlp, text, [0, 5, 19, 25])
    doc.ents = [doc.char_span(0, 5, label=D), doc.char_span(19, 25, label=D)]
    assert unrepresentable([doc], nlp.make_doc)["not_token_aligned"] == 1


def test_predicted_mentions_read_ids_and_nil():
    nlp = spacy.blank("en")
    doc = nlp.make_doc("colon cancer and asthma")
    doc.ents = [Span(doc, 0, 2, label=D, kb_id="D1"), Span(doc, 3, 4, label=D, kb_id="NIL")]
    assert predicted_mentions(doc) == {(0, 12, D): "D1", (17, 23, D): "NIL"}


def test_one_label_scores_spans_of_every_gold_class():
    """NCBI's four mention classes read as one label: the NER's span decides,
    and two gold classes on one span count once."""
    nlp = spacy.blank("en")
    doc = nlp.make_doc("colon cancer and BRCA1 mutations")
    doc.ents = [Span(doc, 0, 2, label="SpecificDisease", kb_id="D1"),
                Span(doc, 3, 4, label="Modifier", kb_id="D2")]
    predicted = nlp.make_doc(doc.text)
    predicted.ents = [Span(predicted, 0, 2, label=D, kb_id="D1")]
    strict = counts(gold_result(doc, predicted_mentions(predicted)))
    assert strict["ner"] == (0, 1, 2)  # the labels differ
    one = counts(gold_result(doc, predicted_mentions(predicted, label=D), label=D))
    assert one["ner"] == (1, 0, 1) and one["mentions"] == (1, 0, 1)


def test_document_errors_by_hand():
    """doc 1: D3 has no span, D2's span is exact but linked to D9 (a wrong concept from
    an exact gold span); doc 2: nothing missed or wrong; doc 3: D4 of the composite is
    missed on an exact span (linked to D5)."""
    e = [document_errors(doc) for doc in DOCS]
    assert e[0]["missed: no predicted span touches it"] == 1
    assert e[0]["missed: an exact span linked to another id or NIL"] == 1
    assert e[0]["wrong: from an exact gold span"] == 1
    assert sum(e[1].values()) == 0
    assert total_document_errors(DOCS)["missed: an exact span linked to another id or NIL"] == 2
    assert e[2] == {**dict.fromkeys(e[2], 0), "missed: an exact span linked to another id or NIL": 1}
    boundary = DocResult(gold={(0, 12, D): {"D1"}}, predicted={(0, 5, D): "D7", (20, 30, D): "D8"})
    b = document_errors(boundary)
    assert b["missed: only overlapping spans"] == 1 and b["wrong: from an overlapping span"] == 1
    assert b["wrong: from a spurious span"] == 1

"""`spans_key`: the linker links `doc.spans[key]` (overlapping mentions, e.g. a
spancat's) instead of `doc.ents`, in prediction, training and scoring."""
import pytest
import spacy
from spacy.tokens import Span
from spacy.training import Example
from thinc.api import Adam

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError
from spacy_bioel.pipeline.scorer import score_linking
from tests.utils import tiny_linker_config

TEXT = "Carriers of breast and ovarian cancer and asthma ."


def toy_kb():
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "breast cancer"))
    kb.add(Concept("D2", "ovarian cancer"))
    kb.add(Concept("D3", "asthma"))
    return kb


def with_spans(nlp, spans, key="sc"):
    """TEXT with overlapping spans (token offsets) in doc.spans[key], none in doc.ents."""
    doc = nlp.make_doc(TEXT)
    doc.spans[key] = [Span(doc, s, e, label="Disease", kb_id=cid) for s, e, cid in spans]
    return doc


@pytest.fixture(scope="module")
def nlp(tiny_bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, spans_key="sc"))
    nlp.get_pipe("bioel_linker").set_kb(toy_kb())
    nlp.initialize()
    return nlp


GOLD = [(2, 6, "D1"), (4, 6, "D2"), (7, 8, "D3")]  # 'breast and ovarian cancer' overlaps 'ovarian cancer'


def test_overlapping_spans_of_the_group_are_linked(nlp):
    doc = nlp(with_spans(nlp, [(s, e, "") for s, e, _ in GOLD]))
    group = doc.spans["sc"]
    assert [s.text for s in group] == ["breast and ovarian cancer", "ovarian cancer", "asthma"]
    assert all(s.kb_id_ in ("D1", "D2", "D3", "NIL") for s in group)
    assert all(s._.kb_ents for s in group)  # each span scored on its own
    assert group[2].kb_id_ == "D3" or group[2].kb_id_ == "NIL"
    assert len(doc.ents) == 0  # doc.ents is neither read nor written


def test_a_doc_without_the_group_links_nothing(nlp):
    doc = nlp(nlp.make_doc("asthma ."))
    assert "sc" not in doc.spans and len(doc.ents) == 0


def test_training_reads_the_gold_group_and_the_scorer_scores_it(tiny_bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, spans_key="sc"))
    linker = nlp.get_pipe("bioel_linker")
    linker.set_kb(toy_kb())
    examples = [Example(with_spans(nlp, [(s, e, "") for s, e, _ in GOLD]), with_spans(nlp, GOLD))]
    nlp.initialize(lambda: examples)
    assert len(linker.train_mentions) == 3  # the overlapping gold spans all reach the datastore
    optimizer = Adam(1e-3)
    losses = {}
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert losses["bioel_linker"] > 0
    linker.refresh()
    predicted = [Example(nlp(eg.predicted.copy()), eg.reference) for eg in examples]
    scores = linker.score(predicted)
    assert scores["bioel_n"] == 3 and scores["bioel_acc@5"] == 1.0  # 3 concepts: all in the top 5
    assert 0.0 <= scores["nel_micro_f"] <= 1.0


def test_span_group_scores_follow_spacys_link_scores():
    nlp = spacy.blank("en")
    reference = with_spans(nlp, GOLD)
    predicted = with_spans(nlp, [(2, 6, "D1"), (4, 6, "NIL"), (7, 8, "D2"), (0, 1, "D3")])
    scores = score_linking([Example(predicted, reference)], spans_key="sc")
    # right D1; NIL for D2: a false negative; D2 for D3: a false positive and a false negative;
    # (0, 1) is no gold span: not counted
    assert (scores["nel_micro_p"], scores["nel_micro_r"]) == (0.5, pytest.approx(1 / 3))


def test_spans_key_is_checked(tiny_bert_dir):
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    assert linker.cfg["spans_key"] is None
    with pytest.raises(BioELError, match="E175"):
        linker.set_option("spans_key", "  ")


def test_two_spans_with_one_offset_pair_keep_their_own_values(nlp):
    """Extension values belong to a span, not to its offsets: two spans of the group
    with the same offsets and other labels read their own candidates and probability."""
    doc = nlp.make_doc(TEXT)
    doc.spans["sc"] = [Span(doc, 7, 8, label="Disease"), Span(doc, 7, 8, label="Finding")]
    doc = nlp(doc)
    first, second = doc.spans["sc"]
    first._.kb_prob, second._.kb_prob = 0.25, 0.75
    first._.kb_ents = [("D3", 1.0)]
    assert (doc.spans["sc"][0]._.kb_prob, doc.spans["sc"][1]._.kb_prob) == (0.25, 0.75)
    assert doc.spans["sc"][1]._.kb_ents != [("D3", 1.0)]


def test_text_doors_put_mentions_where_the_linker_reads_them(nlp):
    """`link` / `visualize`: bracketed mentions go to the linker's span group; an NER
    that writes doc.ents before a span-group linker is E249, not every mention NIL."""
    from spacy_bioel.pipeline.loading import mention_finders
    from spacy_bioel.pipeline.text import link_text

    doc = link_text(nlp, "Carriers of [breast cancer] and [asthma ] .")
    assert [s.text for s in doc.spans["sc"]] == ["breast cancer", "asthma"] and not doc.ents
    assert all(s._.kb_ents for s in doc.spans["sc"])
    ruler = nlp.add_pipe("entity_ruler", before="bioel_linker")
    try:
        ruler.add_patterns([{"label": "Disease", "pattern": "asthma"}])
        linker = nlp.get_pipe("bioel_linker")
        assert mention_finders(nlp, linker) == []
        with pytest.raises(BioELError) as err:
            link_text(nlp, "asthma here")
        assert err.value.code == "E249" and "spans_key = null" in str(err.value)
        span_ruler = nlp.add_pipe("span_ruler", before="bioel_linker", config={"spans_key": "sc"})
        span_ruler.add_patterns([{"label": "Disease", "pattern": "asthma"}])
        assert mention_finders(nlp, linker) == ["span_ruler"]
        doc = link_text(nlp, "asthma here")
        assert [s.text for s in doc.spans["sc"]] == ["asthma"]
    finally:
        for name in ("entity_ruler", "span_ruler"):
            if name in nlp.pipe_names:
                nlp.remove_pipe(name)

"""The exact-match shortcut stage: a mention that is a KB name of exactly one
concept links to it without the encoder; ambiguous names, defined abbreviations
and names the training mentions link elsewhere go through the encoder; off by
default, on with the `shortcut` block (or, in a saved config, the older
`exact_shortcut = true`, read by the factory with W013)."""
import pytest
import spacy
from spacy.tokens import Span

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError
from spacy_bioel.index.candidates import ExactShortcut
from tests.utils import spy_encoder, tiny_linker_config


def toy_kb():
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colon cancer", ("CC",)))
    kb.add(Concept("D2", "cardiac arrest", ("CC",)))  # 'CC' names two concepts
    kb.add(Concept("D3", "familial adenomatous polyposis", ("FAP",)))
    kb.add(Concept("D4", "FAP syndrome variant"))
    kb.add(Concept("D5", "heart attack"))
    return kb


@pytest.fixture(scope="module")
def nlp(tiny_bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    nlp.get_pipe("bioel_linker").set_kb(toy_kb())
    nlp.initialize()
    return nlp


def run(nlp, text, spans):
    doc = nlp.make_doc(text)
    doc.ents = [Span(doc, s, e, label="Disease") for s, e in spans]
    return nlp(doc)


def test_shortcut_is_off_without_the_default_and_validated(nlp):
    linker = nlp.get_pipe("bioel_linker")
    assert linker.shortcut is None and "exact_shortcut" not in linker.cfg  # TORCH_STAGES: none
    with pytest.raises(BioELError, match="E172"):  # a setting of the component no more
        linker.set_option("exact_shortcut", True)
    with pytest.raises(BioELError, match="E175"):
        ExactShortcut().set_params(defer_to_training="sometimes")


def test_exact_unique_names_skip_the_encoder(nlp, monkeypatch):
    linker = nlp.get_pipe("bioel_linker")
    linker.set_stage("shortcut", ExactShortcut(defer_to_training=False))
    try:
        assert isinstance(linker.shortcut, ExactShortcut)
        encoded = spy_encoder(linker, monkeypatch)
        before = linker.counts["exact_shortcut"]
        doc = run(nlp, "Colon-Cancer and CC and heart failure", [(0, 3), (4, 5), (6, 8)])
        assert doc.ents[0].kb_id_ == "D1" and doc.ents[0]._.kb_ents == [("D1", 1.0)]
        assert linker.counts["exact_shortcut"] - before == 1
        assert sorted(encoded) == ["CC", "heart failure"]  # ambiguous and unknown names are encoded
        # a defined abbreviation is read through its long form, not shortcut
        encoded.clear()
        run(nlp, "familial adenomatous polyposis ( FAP ) FAP", [(4, 5), (6, 7)])
        assert "familial adenomatous polyposis" in encoded and "FAP" in encoded
    finally:
        linker.set_stage("shortcut", None)
    assert linker.shortcut is None


def test_names_the_training_mentions_link_elsewhere_are_left_to_the_model(nlp, monkeypatch):
    linker = nlp.get_pipe("bioel_linker")
    linker.set_stage("shortcut", ExactShortcut(defer_to_training=True))
    saved = linker.train_mentions
    try:
        linker.train_mentions = [("heart attack", "D1")]  # the corpus' convention differs
        encoded = spy_encoder(linker, monkeypatch)
        run(nlp, "heart attack and colon cancer", [(0, 2), (3, 5)])
        assert encoded == ["heart attack"]
        linker.set_stage("shortcut", ExactShortcut(defer_to_training=False))
        encoded.clear()
        run(nlp, "heart attack", [(0, 2)])
        assert encoded == []
    finally:
        linker.train_mentions = saved
        linker.set_stage("shortcut", None)


def test_the_stage_comes_from_the_config(tiny_bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(
        tiny_bert_dir, shortcut={"@misc": "spacy-bioel.ExactShortcut.v1"}))
    linker = nlp.get_pipe("bioel_linker")
    linker.set_kb(toy_kb())
    nlp.initialize()
    assert isinstance(linker.shortcut, ExactShortcut) and linker.shortcut.defer_to_training
    assert run(nlp, "heart attack", [(0, 2)]).ents[0].kb_id_ == "D5"


def test_a_saved_config_with_the_older_setting_still_loads(tiny_bert_dir):
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match="W013"):
        nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, exact_shortcut=True))
    linker = nlp.get_pipe("bioel_linker")
    assert isinstance(linker.shortcut, ExactShortcut)
    assert "exact_shortcut" not in linker.cfg


def test_texts_training_annotated_the_same_way_link_from_memory(nlp, monkeypatch):
    """v2 remembers the training mentions: a text annotated at least
    min_training_count times, always with one concept, links to it without the
    encoder, even where the KB names it otherwise ('CC' names D1 and D2); a text
    annotated two ways, or too rarely, is encoded."""
    linker = nlp.get_pipe("bioel_linker")
    saved = linker.train_mentions
    try:
        linker.train_mentions = [("CC", "D2"), ("cc", "D2"), ("heart attack", "D5"),
                                 ("heart attack", "D1"), ("heart failure", "D5")]
        linker.set_stage("shortcut", spacy.registry.resolve(
            {"s": {"@misc": "spacy-bioel.ExactShortcut.v2"}})["s"])
        assert linker.shortcut.get_params() == {"defer_to_training": True, "min_training_count": 2}
        encoded = spy_encoder(linker, monkeypatch)
        doc = run(nlp, "CC and heart attack and heart failure", [(0, 1), (2, 4), (5, 7)])
        assert doc.ents[0].kb_id_ == "D2" and doc.ents[0]._.kb_ents == [("D2", 1.0)]
        assert sorted(encoded) == ["heart attack", "heart failure"]  # two ways; once only
        linker.set_option("shortcut.min_training_count", 1)  # once is enough now
        encoded.clear()
        assert run(nlp, "heart failure", [(0, 2)]).ents[0].kb_id_ == "D5" and encoded == []
        linker.set_option("shortcut.min_training_count", 0)  # v1: nothing remembered
        encoded.clear()
        run(nlp, "CC", [(0, 1)])
        assert encoded == ["CC"]
        with pytest.raises(BioELError, match="E175"):
            linker.set_option("shortcut.min_training_count", -1)
    finally:
        linker.train_mentions = saved
        linker.set_stage("shortcut", None)


def test_the_memory_is_saved_with_the_pipeline(tiny_bert_dir, tmp_path):
    """The v2 block and a changed min_training_count survive to_disk / load, and
    the loaded linker rebuilds its memory from the saved training mentions."""
    from spacy.training import Example

    from spacy_bioel.pipeline.loading import find_linker

    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(
        tiny_bert_dir, shortcut={"@misc": "spacy-bioel.ExactShortcut.v2"}))
    linker = nlp.get_pipe("bioel_linker")
    linker.set_kb(toy_kb())
    gold = nlp.make_doc("a heart failure case")
    gold.ents = [Span(gold, 1, 3, label="Disease", kb_id="D5")]
    nlp.initialize(lambda: [Example(nlp.make_doc(gold.text), gold)])
    assert linker.shortcut.concept("heart failure", "Disease") is None  # seen once, 2 needed
    linker.set_option("shortcut.min_training_count", 1)
    nlp.to_disk(tmp_path / "p")
    loaded = find_linker(spacy.load(tmp_path / "p"))
    assert loaded.shortcut.get_params() == {"defer_to_training": True, "min_training_count": 1}
    assert loaded.shortcut.concept("heart failure", "Disease") == loaded.index.names.concept_ids.index("D5")


@pytest.mark.parametrize("gold,defers", [("D5", False), ("D1", True)])
def test_tune_decides_whether_to_defer_to_the_training_mentions(nlp, gold, defers):
    """The deference is the training corpus' habit: on a dev set that links the
    contradicted KB name as the KB does, `tune` switches it off; on one that
    shares the habit it keeps it (and keeps the configured setting on a tie)."""
    from spacy_bioel.pipeline.tuning import tune_linker

    linker = nlp.get_pipe("bioel_linker")
    linker.set_stage("shortcut", ExactShortcut(defer_to_training=True))
    saved, ranker = linker.train_mentions, linker.ranker.get_params()
    try:
        linker.train_mentions = [("heart attack", "D1")]  # the training corpus' convention
        linker.datastore_stale = True
        linker.refresh()  # and its datastore
        doc = nlp.make_doc("heart attack")
        doc.ents = [Span(doc, 0, 2, label="Disease", kb_id=gold)]
        # the datastore weighs most: deferring hands "heart attack" to its neighbour, D1
        result = tune_linker(linker, [doc], {"k": [1], "lambda": [0.7], "beta1": [0.05], "beta2": [0.1]})
        by_setting = {row["defer_to_training"]: row["acc@1"] for row in result["deference"]}
        assert by_setting == {True: float(defers), False: float(not defers)}
        assert linker.shortcut.defer_to_training is defers
        assert result["stages"]["shortcut"]["defer_to_training"] is defers
        assert run(nlp, "heart attack", [(0, 2)]).ents[0].kb_id_ == gold  # predict follows it
        linker.train_mentions = [("colon cancer", "D1")]  # contradicts nothing: not tried
        assert tune_linker(linker, [doc], {"k": [1], "lambda": [0.7], "beta1": [0.05],
                                           "beta2": [0.1]})["deference"] == []
    finally:
        linker.train_mentions = saved
        linker.datastore_stale = True
        linker.refresh()
        linker.ranker.set_params(**ranker)
        linker.set_stage("shortcut", None)

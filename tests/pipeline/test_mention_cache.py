"""The mention cache: a text is encoded, and an entity decided, once per call,
keyed as the encoder sees the
text; the output equals deciding every entity on its own with every occurrence
encoded (the same ids, scores equal up to float noise), on real NCBI test
documents; the cache is bounded and forgets when the model or a setting changes."""
import warnings

import numpy as np
import pytest
import spacy
from spacy.tokens import Span

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.encoders import thinc_biencoder
from spacy_bioel.pipeline.cache import DecisionCache, LRUCache
from spacy_bioel.pipeline.decisions import Decision
from tests.utils import spy_encoder, tiny_linker_config


def every_occurrence(model, texts, tower, batch_size=256, progress=False):
    """The encoder without deduplication: one row encoded per text."""
    from spacy_bioel.encoders.common import length_buckets

    out = np.zeros((len(texts), model.get_dim("nO")), dtype=np.float32)
    for indices in length_buckets(texts, batch_size):
        out[indices] = model.ops.to_numpy(model.predict(([texts[i] for i in indices], tower)))
    return out


def linked(nlp, docs):
    return [[(e.kb_id_, e._.kb_ents, e._.nil_score) for e in d.ents] for d in nlp.pipe(docs)]


def assert_same_links(got, want, tolerance=1e-5):
    """The same kb_id_ for every entity and the same candidates in the same
    order with the same scores, except that two candidates whose scores differ by float noise (the
    random tiny model makes such near-ties; the batch a query was scored in moves
    scores in the 7th decimal) may swap, or trade the last place."""
    assert [len(doc) for doc in got] == [len(doc) for doc in want]
    for got_doc, want_doc in zip(got, want):
        for (ia, a, na), (ib, b, nb) in zip(got_doc, want_doc):
            assert len(a) == len(b) and abs(na - nb) < 1e-4
            if ia != ib:  # only the top candidates of a near-tie (checked below)
                assert (ia, ib) == (a[0][0], b[0][0])
            others = dict(b)
            for (ca, sa), (cb, sb) in zip(a, b):
                assert abs(sa - sb) < tolerance
                if ca != cb:  # a near-tie, never a different ranking
                    assert abs(others[ca] - sa) < tolerance if ca in others else \
                        abs(sa - b[-1][1]) < tolerance


@pytest.mark.data
def test_the_cache_changes_no_prediction_on_ncbi_test(data_root, tiny_bert_dir, monkeypatch):
    from spacy_bioel.corpora.pubtator import convert_pubtator
    from spacy_bioel.kb.ids import split_gold_ids
    from spacy_bioel.kb.medic import load_medic_dictionary

    nlp = spacy.blank("en")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        medic = load_medic_dictionary(data_root / "ctd_medic/medic_06Jul2012.txt", progress=False)
        docs, _ = convert_pubtator(nlp, data_root / "ncbi_disease/NCBItestset_corpus.txt",
                                   kb=medic, progress=False)
    gold = {medic.resolve(i) for d in docs for e in d.ents for i in split_gold_ids(e.kb_id_)}
    kb = KnowledgeBase(name="ncbi test concepts + 1000 others")
    for concept in medic:
        if concept.concept_id in gold or len(kb) < len(gold) + 1000:
            kb.add(Concept(concept.concept_id, concept.canonical_name, concept.synonyms))
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    linker = nlp.get_pipe("bioel_linker")
    linker.set_kb(kb)
    nlp.initialize()
    texts = [e.text for d in docs for e in d.ents]
    assert len(set(texts)) < 0.6 * len(texts)  # the corpus repeats its mentions
    per_call = linked(nlp, [d.copy() for d in docs])
    assert linker.counts["cache_decision_hits"] > 300
    linker.set_option("cache_size", 0)  # no cache: every entity on its own ...
    monkeypatch.setattr(thinc_biencoder, "embed_texts", every_occurrence)  # ... every text encoded
    reference = linked(nlp, [d.copy() for d in docs])
    assert_same_links(per_call, reference)


@pytest.fixture
def nlp(tiny_bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "asthma"))
    kb.add(Concept("D2", "colon cancer"))
    nlp.get_pipe("bioel_linker").set_kb(kb)
    nlp.initialize()
    return nlp


def make_docs(nlp, texts):
    docs = []
    for text in texts:
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, 0, len(doc), label="Disease")]
        docs.append(doc)
    return docs


def test_a_repeated_text_is_encoded_once_per_call(nlp, monkeypatch):
    linker = nlp.get_pipe("bioel_linker")
    encoded = spy_encoder(linker, monkeypatch)
    texts = ["asthma", "Colon  Cancer", "asthma", "colon  cancer", "heart attack", "ASTHMA"]
    first = linked(nlp, make_docs(nlp, texts))
    # the tiny tokenizer lowercases: one text per normalised form
    assert sorted(encoded) == ["Colon  Cancer", "asthma", "heart attack"]
    assert first[0] == first[2] == first[5] and first[1] == first[3]
    encoded.clear()
    linked(nlp, make_docs(nlp, texts))  # a new call encodes again
    assert len(encoded) == 3
    nlp(make_docs(nlp, ["asthma"])[0])
    assert len(encoded) == 4


def test_a_saved_cache_across_calls_loads_with_a_warning_and_caches_per_call(tiny_bert_dir,
                                                                            monkeypatch):
    """`cache_across_calls` is no setting any more (issue 75); a config saved with it
    loads: true warns W019 and the linker still remembers within one call only."""
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match="W019"):
        nlp.add_pipe("bioel_linker", config={**tiny_linker_config(tiny_bert_dir),
                                             "cache_across_calls": True})
    linker = nlp.get_pipe("bioel_linker")
    assert "cache_across_calls" not in linker.cfg
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "asthma", ()))
    kb.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    linker.set_kb(kb)
    nlp.initialize()
    encoded = spy_encoder(linker, monkeypatch)
    linked(nlp, make_docs(nlp, ["asthma", "asthma"]))
    linked(nlp, make_docs(nlp, ["asthma"]))
    assert encoded == ["asthma", "asthma"]  # once per call, not once across calls


def test_the_cache_is_bounded():
    cache = LRUCache(2)
    for key in "abc":
        cache.put(key, key.upper())
    assert len(cache) == 2 and cache.get("a") is None and cache.get("b") == "B"
    cache.put("d", "D")  # 'c' is now the least recently used
    assert cache.get("c") is None and cache.get("b") == "B" and cache.get("d") == "D"
    off = LRUCache(0)
    off.put("a", "A")
    assert off.get("a") is None


@pytest.mark.parametrize("candidates", [
    [("D012878", 0.2015116412879315), ("C562393", 1e-300), ("D1", 0.0)],
    [],
    [("D1", 0.5, 0.25)],  # not (id, p) pairs: kept as they are
])
def test_a_decision_comes_back_from_the_cache_equal_and_fresh(candidates):
    decision = Decision(list(candidates), 0.0495, False, 0.9505, 0.99208742, None, "exact_shortcut")
    cache = DecisionCache(4)
    cache.put("a", decision)
    first, second = cache.get("a"), cache.get("a")
    assert first == decision and second == decision and isinstance(first, Decision)
    first.candidates.append(("X", 1.0))  # a caller's change does not reach the cache
    assert cache.get("a") == decision and first is not second
    assert cache.get("b") is None
    off = DecisionCache(0)
    off.put("a", decision)
    assert off.get("a") is None and len(off) == 0


def test_cache_keys_are_the_texts_the_encoder_sees(nlp):
    from spacy_bioel.encoders.tokenize import BatchTokenizer

    model = nlp.get_pipe("bioel_linker").model
    fast = BatchTokenizer.from_hf(model.attrs["tokenizer"], 16)
    texts = ["Colon Cancer", "colon cancer", "Ménière", "meniere", "x" * 40]
    keys = fast.cache_keys(texts)
    assert keys[0] == keys[1] and keys[2] == keys[3]
    ids, mask = fast(texts)
    hf = model.attrs["tokenizer"](texts, padding=True, truncation=True, max_length=16,
                                  return_tensors="np")
    assert np.array_equal(ids, hf["input_ids"]) and np.array_equal(mask, hf["attention_mask"])
    assert np.array_equal(ids[0], ids[1]) and np.array_equal(ids[2], ids[3])


def test_with_context_the_key_holds_the_context(tiny_bert_dir, monkeypatch):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, context_window=1))
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "asthma"))
    nlp.get_pipe("bioel_linker").set_kb(kb)
    nlp.initialize()
    encoded = spy_encoder(nlp.get_pipe("bioel_linker"), monkeypatch)
    docs = []
    for text in ["severe asthma today", "severe asthma today", "mild asthma today"]:
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, 1, 2, label="Disease")]
        docs.append(doc)
    linked(nlp, docs)
    assert sorted(encoded) == ["mild [M] asthma [/M] today", "severe [M] asthma [/M] today"]


def test_a_decision_is_keyed_by_what_every_stage_reads(tiny_bert_dir):
    """The encoder strips accents and TF-IDF does not: with hybrid candidates,
    'Meniere disease' links as it does alone after 'Ménière disease' in one document."""
    kb = KnowledgeBase(name="accents")
    for cid, name in (("D1", "Ménière disease"), ("D2", "Meniere syndrome"), ("D3", "asthma")):
        kb.add(Concept(cid, name))
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, candidates={
        "@misc": "spacy-bioel.HybridCandidates.v1", "sparse_weight": 0.9}))
    linker.set_kb(kb)
    nlp.initialize(lambda: [])

    def link(text, spans):
        doc = nlp.make_doc(text)
        doc.ents = [doc.char_span(s, e, "Disease") for s, e in spans]
        return [[(c, round(p, 4)) for c, p in e._.kb_ents] for e in nlp(doc).ents]

    accented, plain = link("Ménière disease, then Meniere disease", [(0, 15), (22, 37)])
    assert plain == link("Meniere disease", [(0, 15)])[0] and plain != accented

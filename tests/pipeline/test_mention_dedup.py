"""A mention string that repeats is encoded once per call; the output equals
encoding every occurrence (the same ids, scores equal to float noise), on real
NCBI test documents."""
import warnings

import numpy as np
import pytest
import spacy

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.encoders import thinc_biencoder
from tests.utils import tiny_linker_config


def every_occurrence(model, texts, tower, batch_size=256, progress=False):
    """The encoder before deduplication: one row encoded per text."""
    from spacy_bioel.encoders.torch_biencoder import length_buckets

    out = np.zeros((len(texts), model.get_dim("nO")), dtype=np.float32)
    for indices in length_buckets(texts, batch_size):
        out[indices] = model.ops.to_numpy(model.predict(([texts[i] for i in indices], tower)))
    return out


def linked(nlp, docs):
    return [[(e.kb_id_, e._.kb_ents, e._.nil_score) for e in d.ents] for d in nlp.pipe(docs)]


@pytest.mark.data
def test_dedup_changes_no_prediction_on_ncbi_test(data_root, tiny_bert_dir, monkeypatch):
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
    nlp.get_pipe("bioel_linker").set_kb(kb)
    nlp.initialize()
    texts = [e.text for d in docs for e in d.ents]
    assert len(set(texts)) < 0.6 * len(texts)  # the corpus repeats its mentions
    fresh = [d.copy() for d in docs]
    deduplicated = linked(nlp, fresh)
    monkeypatch.setattr("spacy_bioel.pipeline.linker.embed_texts", every_occurrence)
    reference = linked(nlp, [d.copy() for d in docs])
    assert [[(i, [c for c, _ in k]) for i, k, _ in doc] for doc in deduplicated] == \
        [[(i, [c for c, _ in k]) for i, k, _ in doc] for doc in reference]
    for got, want in zip(deduplicated, reference):
        for (_, a, na), (_, b, nb) in zip(got, want):
            assert np.allclose([p for _, p in a], [p for _, p in b], atol=1e-4)
            assert abs(na - nb) < 1e-4


def test_a_repeated_text_is_encoded_once(tiny_bert_dir, monkeypatch):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "asthma"))
    nlp.get_pipe("bioel_linker").set_kb(kb)
    nlp.initialize()
    model = nlp.get_pipe("bioel_linker").model
    from thinc.api import Model

    seen = []
    predict = Model.predict
    monkeypatch.setattr(Model, "predict", lambda self, X: (seen.extend(X[0]), predict(self, X))[1])
    texts = ["asthma", "colon cancer", "asthma", "asthma", "heart attack", "colon cancer"]
    out = thinc_biencoder.embed_texts(model, texts, "mention")
    assert sorted(seen) == sorted(set(texts))
    monkeypatch.setattr(Model, "predict", predict)
    assert np.allclose(out, every_occurrence(model, texts, "mention"), atol=1e-5)
    assert np.array_equal(out[0], out[2]) and np.array_equal(out[1], out[5])

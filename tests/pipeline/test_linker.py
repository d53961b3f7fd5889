"""spaCy's overfitting pattern for the bioel_linker component, on a tiny random BERT."""
import pytest
import spacy
from spacy.tokens import Span
from spacy.training import Example
from thinc.api import Adam

from spacy_bioel.errors import BioELError
from spacy_bioel.training.readers import gold_spans_doc
from tests.utils import drop_manifest, torch_linker

TRAIN = [
    ("Patients with colon cancer had a heart attack .", [(14, 26, "D1"), (33, 45, "D2")]),
    ("NIDDM and breast carcinoma were frequent .", [(0, 5, "D3"), (10, 26, "D4")]),
    ("One child had hepatoblastoma and asthma .", [(14, 28, "D5"), (33, 39, "D6")]),
    ("Colon cancer , heart attack and NIDDM .", [(0, 12, "D1"), (15, 27, "D2"), (32, 37, "D3")]),
]


def make_doc(nlp, text, spans, with_ids=True):
    doc = nlp.make_doc(text)
    doc.ents = [doc.char_span(s, e, label="Disease", kb_id=cid if with_ids else "")
                for s, e, cid in spans]
    return doc


def make_nlp(tiny_bert_dir, **overrides):
    nlp = spacy.blank("en")
    config = {"model": {"@architectures": "spacy-bioel.BiEncoder.v1",
                        "encoder": str(tiny_bert_dir), "pooling": "mean", "max_length": 16},
              "negatives": {"@misc": "spacy-bioel.HardNegatives.v1", "n": 2}, "top_k": 5,
              "ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "knn_k": 2, "use_knn": True},
              "loss": {"@misc": "spacy-bioel.InfoNCELoss.v1", "temperature": 0.1}}
    config.update(overrides)
    nlp.add_pipe("bioel_linker", config=torch_linker(config))
    return nlp


def examples(nlp):
    return [Example(gold_spans_doc(nlp, make_doc(nlp, t, s)), make_doc(nlp, t, s))
            for t, s in TRAIN]


def predictions(docs):
    return [[(e.text, e.kb_id_, [c for c, _ in e._.kb_ents]) for e in doc.ents] for doc in docs]


@pytest.fixture(scope="module")
def trained(tiny_bert_dir, tmp_path_factory):
    import torch

    from spacy_bioel import Concept, KnowledgeBase

    torch.manual_seed(0)
    kb = KnowledgeBase(name="toy")
    for cid, name, syns in [("D1", "colorectal carcinoma", ("colon neoplasm",)),
                            ("D2", "myocardial infarction", ()),
                            ("D3", "type 2 diabetes", ()), ("D4", "breast carcinoma", ()),
                            ("D5", "hepatoblastoma", ()), ("D6", "asthma", ())]:
        kb.add(Concept(cid, name, syns))
    nlp = make_nlp(tiny_bert_dir)
    train = examples(nlp)
    nlp.get_pipe("bioel_linker").set_kb(kb)
    nlp.initialize(lambda: train)
    optimizer = Adam(1e-3)
    history = []
    for _ in range(60):
        losses = {}
        nlp.update(train, sgd=optimizer, losses=losses)
        history.append(losses["bioel_linker"])
    nlp.get_pipe("bioel_linker").refresh()  # predict never encodes: refresh after a manual loop
    return nlp, history, tmp_path_factory.mktemp("linker")


def test_loss_falls(trained):
    _, history, _ = trained
    assert history[-1] < history[0] * 0.5


def test_overfit_predictions_match_gold(trained):
    nlp, _, _ = trained
    docs = [nlp(gold_spans_doc(nlp, make_doc(nlp, t, s))) for t, s in TRAIN]
    for doc, (_, spans) in zip(docs, TRAIN):
        assert [e.kb_id_ for e in doc.ents] == [cid for _, _, cid in spans]
        for ent in doc.ents:
            scores = [s for _, s in ent._.kb_ents]
            assert scores == sorted(scores, reverse=True) and len(scores) <= 5
            assert all(0.0 <= s <= 1.0 for s in scores)
            assert ent._.is_nil is False and 0.0 <= ent._.nil_score <= 1.0
            # training forgot the calibration fitted for the untrained encoder: no probability
            # until `tune`, NIL only without candidates (no right link thrown to NIL)
            assert 0.0 <= ent._.kb_similarity <= 1.0 and ent._.kb_prob is None
            # nil_score = 1 - support, the best of the similarity and the nearest training mention
            assert ent._.nil_score <= 1.0 - ent._.kb_similarity + 1e-6


def test_to_disk_and_load_identical(trained):
    nlp, _, path = trained
    inputs = [gold_spans_doc(nlp, make_doc(nlp, t, s)) for t, s in TRAIN]
    before = predictions([nlp(d) for d in inputs])
    nlp.to_disk(path)
    loaded = spacy.load(path)
    inputs = [gold_spans_doc(loaded, make_doc(loaded, t, s)) for t, s in TRAIN]
    after = predictions([loaded(d) for d in inputs])
    assert after == before
    scores_before = [[e._.kb_ents for e in nlp(gold_spans_doc(nlp, make_doc(nlp, t, s))).ents]
                     for t, s in TRAIN]
    scores_after = [[e._.kb_ents for e in loaded(gold_spans_doc(loaded, make_doc(loaded, t, s))).ents]
                    for t, s in TRAIN]
    for a_doc, b_doc in zip(scores_after, scores_before):
        for a, b in zip(a_doc, b_doc):
            assert [c for c, _ in a] == [c for c, _ in b]
            assert [s for _, s in a] == pytest.approx([s for _, s in b], abs=1e-5)


def test_pipe_equals_call(trained):
    nlp, _, _ = trained
    inputs = [gold_spans_doc(nlp, make_doc(nlp, t, s)) for t, s in TRAIN]
    piped = predictions(nlp.pipe([d.copy() for d in inputs], batch_size=2))
    called = predictions([nlp(d.copy()) for d in inputs])
    assert piped == called


def test_pipe_batches_by_mentions_and_keeps_order(trained, monkeypatch):
    """`pipe` groups docs until a batch holds batch_size docs and PIPE_MENTIONS
    mentions (capped at PIPE_MAX_FACTOR * batch_size docs), in order; it times
    each stage; an error goes to the pipeline's error handler with its batch."""
    from spacy_bioel.pipeline import mentions as batching

    nlp, _, _ = trained
    pipe = nlp.get_pipe("bioel_linker")
    docs = [gold_spans_doc(nlp, make_doc(nlp, t, s)) for t, s in TRAIN * 5]  # 2-3 mentions each
    sizes = [len(b) for b in batching.mention_batches(iter(docs), 2, None)]
    assert sum(sizes) == 20 and sizes == [16, 4]  # 8 * 2 docs: fewer than 1024 mentions
    assert [len(d.ents) for d in docs[:4]] == [2, 2, 2, 3]
    monkeypatch.setattr(batching, "PIPE_MENTIONS", 4)
    batches = list(batching.mention_batches(iter(docs), 2, None))
    assert [len(b) for b in batches] == [2] * 10  # any 2 docs hold >= 4 mentions
    assert [d for b in batches for d in b] == docs
    monkeypatch.setattr(batching, "PIPE_MENTIONS", 7)  # 2 + 2 + 2 < 7 <= 2 + 2 + 2 + 3
    assert [len(b) for b in batching.mention_batches(iter(docs), 2, None)] == [4] * 5
    from collections import Counter

    pipe.timings = Counter()  # the lab's hook: the stages' seconds are recorded only when asked
    piped = predictions(nlp.pipe([d.copy() for d in docs], batch_size=2))
    assert {"early", "encode", "search", "knn", "decide", "linker"} <= set(pipe.timings)
    assert pipe.timings["linker"] >= pipe.timings["encode"] + pipe.timings["search"] > 0
    assert piped == predictions([nlp(d.copy()) for d in docs])
    seen = []
    nlp.set_error_handler(lambda name, component, batch, err: seen.append((name, len(batch))))
    monkeypatch.setattr(type(pipe), "predict", lambda self, docs: 1 / 0)
    try:
        assert len(list(nlp.pipe([d.copy() for d in docs[:6]], batch_size=2))) == 0
    finally:
        nlp.set_error_handler(spacy.util.raise_error)
    assert seen == [("bioel_linker", 4), ("bioel_linker", 2)]  # each failed batch, whole


def test_evaluate_returns_our_keys(trained):
    nlp, _, _ = trained
    scores = nlp.evaluate(examples(nlp))
    assert scores["bioel_acc@1"] == 1.0
    assert "bioel_acc@5" in scores and "nel_micro_f" in scores


def test_edge_inputs(trained):
    nlp, _, _ = trained
    assert list(nlp("No entities here at all .").ents) == []
    assert list(nlp("").ents) == []
    long_text = " ".join(["word"] * 300) + " colon cancer"
    doc = nlp.make_doc(long_text)
    doc.ents = [Span(doc, 0, 300, label="Disease"), Span(doc, 300, 302, label="Disease")]
    doc = nlp(doc)
    known = {c.concept_id for c in nlp.get_pipe("bioel_linker").kb} | {"NIL"}
    # "NIL" is a valid answer, "" (nothing written) is not: each id is a KB concept or NIL
    assert len(doc.ents) == 2 and all(e.kb_id_ in known and e._.kb_ents for e in doc.ents)
    doc = nlp.make_doc("Maladie de Crohn ou diabète sucré : ÉTUDE")
    doc.ents = [Span(doc, 0, 3, label="Disease"), Span(doc, 4, 6, label="Disease")]
    assert [e.kb_id_ in known for e in nlp(doc).ents] == [True, True]


def test_nil_threshold_flags(trained):
    nlp, _, _ = trained
    linker = nlp.get_pipe("bioel_linker")
    old = linker.nil.threshold
    try:
        linker.set_option("nil.threshold", 0.0)  # every nil_score >= 0: all NIL
        doc = nlp(gold_spans_doc(nlp, make_doc(nlp, *TRAIN[0])))
        assert [e.kb_id_ for e in doc.ents] == ["NIL", "NIL"]
        assert all(e._.is_nil for e in doc.ents)
        assert all(e._.kb_ents for e in doc.ents)  # candidates are still written
        with pytest.raises(BioELError, match="E175"):  # above nil_score's range: never reached
            linker.set_option("nil.threshold", 1.01)
        linker.set_option("nil.threshold", None)  # never NIL by score
        assert not any(e._.is_nil for e in nlp(gold_spans_doc(nlp, make_doc(nlp, *TRAIN[0]))).ents)
        with pytest.raises(BioELError, match="E172"):
            linker.set_option("knn_gamma", 1)
    finally:
        linker.nil.threshold = old


def test_initialize_without_kb_errors(tiny_bert_dir):
    nlp = make_nlp(tiny_bert_dir)
    with pytest.raises(BioELError) as err:
        nlp.initialize(lambda: examples(nlp))
    assert err.value.code == "E160"


def test_serialisation_errors(trained, tmp_path):
    import shutil

    nlp, _, _ = trained
    nlp.to_disk(tmp_path / "ok")
    # a missing file
    shutil.copytree(tmp_path / "ok", tmp_path / "missing")
    (tmp_path / "missing" / "bioel_linker" / "datastore").unlink()
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "missing")
    assert err.value.code == "E156"
    # a config that does not match the saved weights
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "ok", config={"components": {"bioel_linker": {"model": {"pooling": "cls"}}}})
    assert err.value.code == "E157"
    # a corrupted index
    shutil.copytree(tmp_path / "ok", tmp_path / "corrupt")
    (tmp_path / "corrupt" / "bioel_linker" / "index" / "vectors.npy").write_bytes(b"\x93garbage")
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "corrupt")
    assert err.value.code == "E176"  # the manifest's checksum
    drop_manifest(tmp_path / "corrupt" / "bioel_linker")  # as saved before manifests
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "corrupt")
    assert err.value.code == "E154"  # the index itself does not parse


def test_staleness_and_epoch_refresh(tiny_bert_dir):
    from spacy_bioel import Concept, KnowledgeBase

    kb = KnowledgeBase()
    kb.add(Concept("D1", "colorectal carcinoma"))
    kb.add(Concept("D2", "myocardial infarction"))
    nlp = make_nlp(tiny_bert_dir, negatives={"@misc": "spacy-bioel.HardNegatives.v1", "n": 1})
    linker = nlp.get_pipe("bioel_linker")
    linker.set_kb(kb)
    train = examples(nlp)[:1]  # 2 linkable mentions (D1, D2)
    nlp.initialize(lambda: train)
    assert not linker.index.stale and len(linker.datastore) == 2
    before = linker.index.to_bytes()
    linker.steps.eval_frequency = 0  # no evaluation steps: only the epoch end refreshes
    nlp.update(train, sgd=Adam(1e-2), losses={})
    # one update = one epoch of these 2 mentions: the index was refreshed at epoch end
    assert len(linker.epoch_seconds) == 1 and not linker.index.stale
    assert linker.datastore_stale  # the datastore waits for evaluation or refresh()
    assert linker.index.to_bytes() != before
    from spacy_bioel.errors import BioELWarning

    with pytest.warns(BioELWarning, match="W006"):  # saving a stale datastore: said, not fixed
        saved = linker.to_bytes()
    assert b"epoch_seconds" not in saved  # no runtime statistics in what is saved


def test_predict_and_to_disk_never_encode(trained, tmp_path, monkeypatch):
    """After an update the index and datastore are stale; predict and to_disk
    use them as they are (warning W006) and never call the encoder on the KB."""
    import warnings

    from spacy_bioel.errors import BioELWarning

    nlp, _, _ = trained
    linker = nlp.get_pipe("bioel_linker")
    calls = []
    monkeypatch.setattr(linker.index, "refresh", lambda *a, **k: calls.append("index"))
    linker.datastore_stale = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp(gold_spans_doc(nlp, make_doc(nlp, *TRAIN[0])))
        nlp.to_disk(tmp_path / "stale")
    assert calls == [] and any(issubclass(w.category, BioELWarning) and "W006" in str(w.message)
                               for w in caught)
    linker.datastore_stale = False


def evaluated_every_2_steps(tiny_bert_dir):
    """A linker over 4 concepts, initialized on 2 examples, spaCy evaluating
    after steps 0, 2, ... RETURNS: (nlp, linker, train examples)."""
    from spacy_bioel import Concept, KnowledgeBase

    kb = KnowledgeBase()
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"),
                      ("D3", "type 2 diabetes"), ("D4", "breast carcinoma")]:
        kb.add(Concept(cid, name))
    nlp = make_nlp(tiny_bert_dir)
    nlp.config["training"]["eval_frequency"] = 2
    linker = nlp.get_pipe("bioel_linker")
    linker.set_kb(kb)
    train = examples(nlp)[:2]
    nlp.initialize(lambda: train)
    return nlp, linker, train


def test_eval_steps_refresh(tiny_bert_dir):
    """With [training] eval_frequency = 2, the steps spaCy evaluates after (0, 2,
    ...) leave nothing stale; the others leave the datastore stale."""
    nlp, linker, train = evaluated_every_2_steps(tiny_bert_dir)
    stale = []
    for step in range(4):
        nlp.update(train[step % 2:step % 2 + 1], sgd=Adam(1e-3), losses={})
        stale.append(linker.datastore_stale)
    assert stale == [False, True, False, True]


def test_an_epoch_long_eval_frequency_encodes_the_names_once_an_epoch(tiny_bert_dir, monkeypatch):
    """An epoch of 2 steps, spaCy evaluating after steps 0, 2, ...: the epoch's
    end leaves the names to the evaluation refresh one step later (the paper's
    recipe re-encodes once an epoch, not twice)."""
    nlp, linker, train = evaluated_every_2_steps(tiny_bert_dir)
    encoded = []
    refresh = linker.index.refresh
    monkeypatch.setattr(linker.index, "refresh",
                        lambda *args, **kwargs: (encoded.append(len(linker.epoch_seconds)),
                                                 refresh(*args, **kwargs))[1])
    for step in range(6):
        nlp.update(train[step % 2:step % 2 + 1], sgd=Adam(1e-3), losses={})
    assert len(linker.epoch_seconds) == 3
    assert encoded == [0, 1, 2]  # steps 1, 3, 5 (evaluations), none at the epoch ends 2, 4, 6
    assert linker.index.stale  # step 6 ended an epoch: step 7's evaluation refreshes it


def linked(nlp, docs):
    """kb ids, ranked candidates, probability and similarity of every entity."""
    out = []
    for doc in nlp.pipe([gold_spans_doc(nlp, make_doc(nlp, t, s)) for t, s in docs]):
        out += [(e.kb_id_, e._.kb_ents, e._.kb_prob, e._.kb_similarity) for e in doc.ents]
    return out


def assert_same_links(a, b):
    assert [x[0] for x in a] == [y[0] for y in b]
    for (_, ents_a, prob_a, sim_a), (_, ents_b, prob_b, sim_b) in zip(a, b):
        assert [c for c, _ in ents_a] == [c for c, _ in ents_b]
        assert [s for _, s in ents_a] == pytest.approx([s for _, s in ents_b], abs=1e-5)
        assert prob_a == pytest.approx(prob_b, abs=1e-5) and sim_a == pytest.approx(sim_b, abs=1e-5)


def test_to_bytes_from_bytes_identical(trained):
    from spacy.util import load_model_from_config

    nlp, _, _ = trained
    data = nlp.to_bytes()
    restored = load_model_from_config(nlp.config, auto_fill=True).from_bytes(data)
    assert_same_links(linked(restored, TRAIN), linked(nlp, TRAIN))
    linker = restored.get_pipe("bioel_linker")
    assert len(linker.datastore) == len(nlp.get_pipe("bioel_linker").datastore)


def test_exclude_is_honoured(trained, tmp_path):
    nlp, _, _ = trained
    linker = nlp.get_pipe("bioel_linker")
    linker.to_disk(tmp_path / "part", exclude=["datastore", "train_mentions"])
    assert not (tmp_path / "part" / "datastore").exists() and (tmp_path / "part" / "index").exists()
    keys_before = len(linker.datastore)
    linker.from_disk(tmp_path / "part", exclude=["datastore", "train_mentions"])
    assert len(linker.datastore) == keys_before  # kept, not required on disk


def test_uninitialised_pipeline_saves_and_loads(tiny_bert_dir, tmp_path):
    nlp = make_nlp(tiny_bert_dir)
    nlp.to_disk(tmp_path / "blank")
    loaded = spacy.load(tmp_path / "blank")
    linker = loaded.get_pipe("bioel_linker")
    assert linker.kb is None and not linker.index.ready
    with pytest.raises(BioELError, match="E168"):
        doc = loaded.make_doc("colon cancer")
        doc.ents = [Span(doc, 0, 2, label="Disease")]
        loaded(doc)


@pytest.mark.parametrize("version", [1, 99])
def test_a_format_this_version_does_not_read_is_named(trained, tmp_path, version):
    """Format 1 (the flat cfg before linking stages) and a format from the future
    are E173, which names the folder and the version found."""
    import srsly

    nlp, _, _ = trained
    nlp.to_disk(tmp_path / "p")
    component = tmp_path / "p" / "bioel_linker"
    saved = srsly.read_json(component / "cfg")
    drop_manifest(component)  # past the manifest: the cfg's version itself is read
    srsly.write_json(component / "cfg", {**{k: v for k, v in saved.items() if k != "manifest"},
                                         "version": version})
    with pytest.raises(BioELError, match="E173") as err:
        spacy.load(tmp_path / "p")
    assert f"format version {version}" in str(err.value) and str(component) in str(err.value)


def test_tuning_scores_exactly_as_predict(trained):
    """Every grid row's dev Acc@1 equals the accuracy of `decide` (what predict
    runs) with those values; the best values end up on the stages."""
    from spacy_bioel.kb.ids import split_gold_ids
    from spacy_bioel.pipeline.tuning import tune_linker

    nlp, _, _ = trained
    linker = nlp.get_pipe("bioel_linker")
    docs = [make_doc(nlp, t, s) for t, s in TRAIN]
    before = (linker.ranker.get_params(), linker.nil.get_params())
    grid = {"k": [1, 2], "lambda": [0.0, 0.5, 0.9], "beta1": [0.05, 1.0], "beta2": [0.1, 1.0]}
    try:
        result = tune_linker(linker, docs, grid)
        gold = [set(split_gold_ids(e.kb_id_)) for d in docs for e in d.ents]
        retrieved = linker.retrieve(docs, knn_k=2)
        for row in result["grid"]:
            linker.ranker.set_params(use_knn=row["lambda"] > 0, knn_k=row["k"],
                                     knn_lambda=row["lambda"], beta1=row["beta1"], beta2=row["beta2"])
            decided = linker.decide(retrieved)
            acc = sum(d.candidates[0][0] in g for d, g in zip(decided, gold)) / len(gold)
            assert row["acc@1"] == pytest.approx(acc), row
        best = result["best"]
        assert result["stages"]["ranker"]["knn_k"] == best["k"]
        assert result["nil"]["calibration"] == list(result["stages"]["nil"]["calibration"])
    finally:
        linker.ranker.set_params(**before[0])
        linker.nil.set_params(**before[1])


def typed_kb():
    from spacy_bioel import Concept, KnowledgeBase

    kb = KnowledgeBase(name="typed")
    for cid, name, types in [("D1", "myocardial infarction", ("disease",)),
                             ("D2", "colorectal carcinoma", ("disease",)),
                             ("HP1", "abnormal heart rhythm", ("phenotype",)),
                             ("HP2", "heart murmur", ("phenotype",))]:
        kb.add(Concept(cid, name, types=types))
    return kb


def test_type_filter_in_the_component(tiny_bert_dir):
    nlp = make_nlp(tiny_bert_dir, type_filter={"@misc": "spacy-bioel.TypeFilter.v1",
                                               "allowed": {"Phenotype": ["phenotype"]}})
    nlp.get_pipe("bioel_linker").set_kb(typed_kb())
    nlp.initialize(lambda: [])
    doc = nlp.make_doc("heart attack and heart attack")
    doc.ents = [Span(doc, 0, 2, label="Phenotype"), Span(doc, 3, 5, label="Disease")]
    phenotype, disease = nlp(doc).ents
    assert {c for c, _ in phenotype._.kb_ents} == {"HP1", "HP2"}
    assert {c for c, _ in disease._.kb_ents} == {"D1", "D2", "HP1", "HP2"}


def test_hybrid_candidates_in_the_component_and_tuned_weight(tiny_bert_dir):
    from spacy_bioel.pipeline.tuning import tune_linker

    nlp = make_nlp(tiny_bert_dir, candidates={"@misc": "spacy-bioel.HybridCandidates.v1",
                                              "sparse_weight": 0.0})
    linker = nlp.get_pipe("bioel_linker")
    linker.set_kb(typed_kb())
    nlp.initialize(lambda: [])
    docs = [make_doc(nlp, "colorectal carcinomas and myocardial infarctions .",
                     [(0, 21, "D2"), (26, 48, "D1")])]
    result = tune_linker(linker, docs, {"k": [1], "lambda": [0.0], "beta1": [0.05],
                                        "beta2": [1.0]}, sparse_weights=[0.0, 0.9])
    weights = {row["sparse_weight"]: row["acc@1"] for row in result["sparse_weights"]}
    assert weights[0.9] == 1.0  # the surface forms find both (an untrained tiny encoder may not)
    assert linker.candidates.sparse_weight == max(weights, key=lambda w: (weights[w], -w))
    linked_ids = [e.kb_id_ for e in nlp(gold_spans_doc(nlp, docs[0])).ents]
    assert linked_ids == ["D2", "D1"]  # predict uses the tuned weight


def test_held_out_knn_leaves_the_documents_own_mentions_out(trained, tmp_path):
    """A doc flagged HELD_OUT_KNN does not see the datastore entries of its own
    text (the reranker's training candidates); other docs and unflagged calls do."""
    from spacy_bioel.pipeline.mentions import HELD_OUT_KNN

    nlp, _, _ = trained
    linker = nlp.get_pipe("bioel_linker")
    assert len(linker.train_docs) == len(linker.train_mentions) == 9

    def neighbour_ids(flag):
        docs = [gold_spans_doc(nlp, make_doc(nlp, t, s)) for t, s in TRAIN]
        for doc in docs:
            doc.user_data[HELD_OUT_KNN] = flag
        return [{cid for cid, _ in alt[0]["neighbours"]} for alt in linker.retrieve(docs, knn_k=9)]

    seen, held_out = neighbour_ids(False), neighbour_ids(True)
    # hepatoblastoma (D5) and asthma (D6) occur only in the third document
    assert "D5" in seen[4] and "D6" in seen[5]
    assert not {"D5", "D6"} & (held_out[4] | held_out[5])
    assert "D1" in held_out[0]  # colon cancer: still seen through the fourth document
    assert all(len(s) <= 6 for s in held_out[4:6])
    # predictions of a held-out doc differ only through the datastore
    nlp.to_disk(tmp_path / "saved")
    loaded = spacy.load(tmp_path / "saved").get_pipe("bioel_linker")
    assert loaded.train_docs == linker.train_docs
    assert loaded.datastore.groups.tolist() == linker.datastore.groups.tolist()
    # a datastore saved without document keys cannot leave a document out: E189
    loaded.train_mentions = list(loaded.train_mentions)  # pairs: no document keys
    loaded.refresh(force=True)
    doc = gold_spans_doc(nlp, make_doc(nlp, *TRAIN[0]))
    doc.user_data[HELD_OUT_KNN] = True
    with pytest.raises(BioELError) as err:
        loaded.retrieve([doc], knn_k=2)
    assert err.value.code == "E189"


def test_retrieval_depth_and_written_list_are_two_settings(trained):
    """`retrieve_k` candidates are retrieved and ranked, `top_k` of them written."""
    nlp, _, _ = trained
    linker = nlp.get_pipe("bioel_linker")
    inputs = [gold_spans_doc(nlp, make_doc(nlp, t, s)) for t, s in TRAIN]
    full = [[(e.kb_id_, e._.kb_ents) for e in nlp(d.copy()).ents] for d in inputs]
    assert all(len(ents) == 5 for doc in full for _, ents in doc)  # top_k 5 of 6 concepts
    try:
        linker.set_option("top_k", 2)  # the same ranking, a shorter list
        short = [[(e.kb_id_, e._.kb_ents) for e in nlp(d.copy()).ents] for d in inputs]
        assert short == [[(kb_id, ents[:2]) for kb_id, ents in doc] for doc in full]
        linker.set_option("top_k", 5)
        linker.set_option("retrieve_k", 1)  # one candidate retrieved (and, with kNN, neighbours)
        lengths = [len(e._.kb_ents) for d in inputs for e in nlp(d.copy()).ents]
        assert max(lengths) <= 1 + 2 and min(lengths) < 5  # knn_k 2
        linker.set_option("ranker.use_knn", False)
        assert all(len(e._.kb_ents) == 1 for d in inputs for e in nlp(d.copy()).ents)
        with pytest.raises(BioELError, match="E175"):
            linker.set_option("retrieve_k", 0)
    finally:
        linker.set_option("top_k", 5)
        linker.set_option("retrieve_k", 64)
        linker.set_option("ranker.use_knn", True)

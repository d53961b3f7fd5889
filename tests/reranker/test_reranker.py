"""spaCy's overfitting pattern for the bioel_reranker component on a tiny random
BERT, behind a stand-in candidate source that writes Span._.kb_ents (as any
upstream linker does) with the gold never first."""
import math

import numpy as np
import pytest
import spacy
import srsly
from spacy.language import Language
from spacy.training import Example
from thinc.api import Adam, Model

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError, BioELWarning
from spacy_bioel.training.readers import gold_spans_doc

TRAIN = [
    ("Patients with colon cancer had a heart attack .", [(14, 26, "D1"), (33, 45, "D2")]),
    ("One child had asthma and an odd syndrome .", [(14, 20, "D3"), (28, 40, "NIL")]),
    ("Colon cancer and asthma .", [(0, 12, "D1"), (17, 23, "D3")]),
]
UPSTREAM = [("D3", 0.5), ("D2", 0.3), ("D1", 0.2)]  # the same wrong order for every entity


@Language.component("toy_candidate_source")
def toy_candidate_source(doc):
    for ent in doc.ents:
        ent._.kb_ents = list(UPSTREAM) if ent.text != "nothing" else []
        ent._.is_nil, ent._.nil_score = False, 0.5
    return doc


def toy_kb():
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("colon cancer",), definition="A cancer of the colon."))
    kb.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    kb.add(Concept("D3", "asthma", ("bronchial asthma",)))
    return kb


def make_doc(nlp, text, spans, with_ids=True):
    doc = nlp.make_doc(text)
    doc.ents = [doc.char_span(s, e, label="Disease", kb_id=c if with_ids else "") for s, e, c in spans]
    return doc


def make_nlp(tiny_bert_dir, model_settings=None, **settings):
    nlp = spacy.blank("en")
    nlp.add_pipe("toy_candidate_source")
    nlp.add_pipe("bioel_reranker", config={
        "model": {"@architectures": "spacy-bioel.CrossEncoder.v1", "encoder": str(tiny_bert_dir),
                  "max_length": 48, "dropout": 0.0, **(model_settings or {})},
        "context_window": 3, "n_synonyms": 1, **settings})
    return nlp


def examples(nlp):
    return [Example(gold_spans_doc(nlp, make_doc(nlp, t, s)), make_doc(nlp, t, s)) for t, s in TRAIN]


def decisions(docs):
    return [[(e.text, e.kb_id_, [c for c, _ in e._.kb_ents]) for e in doc.ents] for doc in docs]


@pytest.fixture(scope="module")
def trained(tiny_bert_dir, tmp_path_factory):
    import torch

    torch.manual_seed(0)
    nlp = make_nlp(tiny_bert_dir)
    train = examples(nlp)
    nlp.get_pipe("bioel_reranker").initialize(lambda: train, nlp=nlp, kb_loader=toy_kb)
    optimizer = Adam(2e-3)
    history = []
    for _ in range(80):
        losses = {}
        nlp.update(train, sgd=optimizer, losses=losses, annotates=["toy_candidate_source"])
        history.append(losses["bioel_reranker"])
    return nlp, history, tmp_path_factory.mktemp("reranker")


def run(nlp):
    return [nlp(gold_spans_doc(nlp, make_doc(nlp, t, s))) for t, s in TRAIN]


def test_overfits_a_tiny_corpus(trained):
    nlp, history, _ = trained
    reranker = nlp.get_pipe("bioel_reranker")
    assert reranker.cfg["nil_option"]  # the training data has a NIL mention
    assert history[-1] < history[0] * 0.2
    for doc, (_, spans) in zip(run(nlp), TRAIN):
        assert [e.kb_id_ for e in doc.ents] == [c for _, _, c in spans]
        for ent in doc.ents:
            probabilities = [p for _, p in ent._.kb_ents]
            assert sorted(c for c, _ in ent._.kb_ents) == ["D1", "D2", "D3"]
            assert probabilities == sorted(probabilities, reverse=True)
            assert ent._.nil_score == pytest.approx(1.0 - ent._.kb_prob)
            assert ent._.is_nil is (ent.kb_id_ == "NIL")
    assert reranker.counts["reranked"] > 0


def test_training_is_counted_for_the_progress_line(trained):
    """`spacy train` is not silent between evaluations for a reranker either:
    its steps, epochs (its training examples' gold mentions) and loss feed
    `spacy-bioel.ProgressLogger.v1`, and a frozen component prints no line."""
    from spacy_bioel.pipeline.progress_logger import TrainingProgress, training_linkers

    nlp, history, _ = trained
    reranker = nlp.get_pipe("bioel_reranker")
    assert reranker.epoch_size == 6  # TRAIN's gold mentions, the NIL one included
    # each of the 80 updates read all three documents: one epoch a step
    assert reranker.steps.steps == 80 and len(reranker.epoch_seconds) == 80
    assert reranker.steps.seen_in_epoch == 0
    assert reranker.steps.loss_sum == pytest.approx(sum(history))
    assert training_linkers(nlp) == [("bioel_reranker", reranker)]
    assert training_linkers(nlp, frozen=["bioel_reranker"]) == []
    progress = TrainingProgress(0, eval_frequency=100, max_steps=120, max_epochs=0)
    line = progress.stepped(training_linkers(nlp))
    assert line.startswith("bioel_reranker: step 80 | epoch 81, 0% of 6 mentions | loss ")
    assert "(last 80 steps)" in line and reranker.steps.loss_steps == 0  # read and reset


def test_round_trip_keeps_predictions(trained):
    nlp, _, path = trained
    before = decisions(run(nlp))
    nlp.to_disk(path)
    loaded = spacy.load(path)
    assert decisions(run(loaded)) == before
    assert loaded.get_pipe("bioel_reranker").cfg["nil_option"] is True
    again = make_nlp(nlp.get_pipe("bioel_reranker").model.attrs["encoder"])
    again.get_pipe("bioel_reranker").from_bytes(nlp.get_pipe("bioel_reranker").to_bytes())
    assert decisions(run(again)) == before


def test_entities_without_candidates_pass_through_as_nil(trained):
    nlp, _, _ = trained
    doc = nlp(gold_spans_doc(nlp, make_doc(nlp, "nothing to see", [(0, 7, "D1")])))
    (ent,) = doc.ents
    assert ent.kb_id_ == "NIL" and ent._.is_nil is True and ent._.kb_ents == []
    assert ent.text == "nothing" and ent.label_ == "Disease"


def test_gate_leaves_sure_linker_decisions_alone(trained):
    nlp, _, _ = trained
    reranker = nlp.get_pipe("bioel_reranker")
    try:
        reranker.set_option("gate", 0.1)  # upstream margin 0.2 >= 0.1: every entity is sure
        doc = nlp(gold_spans_doc(nlp, make_doc(nlp, *TRAIN[0])))
        assert [c for c, _ in doc.ents[0]._.kb_ents] == ["D3", "D2", "D1"]
        assert doc.ents[0].kb_id_ == ""  # the stand-in source writes no kb_id
    finally:
        reranker.set_option("gate", None)


def test_update_without_upstream_candidates_says_what_to_do(tiny_bert_dir):
    nlp = make_nlp(tiny_bert_dir)
    train = examples(nlp)
    reranker = nlp.get_pipe("bioel_reranker")
    reranker.initialize(lambda: train, nlp=nlp, kb_loader=toy_kb)
    with pytest.raises(BioELError) as err:
        reranker.update(train, sgd=Adam(1e-3))  # the source was not run on the batch
    assert err.value.code == "E185" and "annotating_components" in str(err.value)


def test_no_kb_and_bad_settings_are_coded_errors(tiny_bert_dir):
    nlp = make_nlp(tiny_bert_dir)
    with pytest.raises(BioELError) as err:
        nlp.get_pipe("bioel_reranker").initialize(lambda: [], nlp=nlp)
    assert err.value.code == "E186"
    with pytest.raises(BioELError) as err:
        make_nlp(tiny_bert_dir, top_k=0)
    assert err.value.code == "E175"
    with pytest.raises(BioELError) as err:
        nlp.get_pipe("bioel_reranker").set_option("knn_k", 3)
    assert err.value.code == "E187"


def test_learned_nil_needs_nil_training_mentions(tiny_bert_dir):
    nlp = make_nlp(tiny_bert_dir)
    train = [eg for eg in examples(nlp) if "NIL" not in [e.kb_id_ for e in eg.reference.ents]]
    reranker = nlp.get_pipe("bioel_reranker")
    reranker.initialize(lambda: train, nlp=nlp, kb_loader=toy_kb)
    assert reranker.cfg["nil_option"] is False
    pairs, groups, _, _ = reranker.training_lists(
        [Example(toy_candidate_source(gold_spans_doc(nlp, make_doc(nlp, *TRAIN[1]))),
                 make_doc(nlp, *TRAIN[1]))])
    assert len(groups) == 1 and reranker.counts["train_nil_skipped"] == 1
    assert pairs[0][0] == "One child had [M] asthma [/M] and an odd" and pairs[0][1] == "asthma ; bronchial asthma"


def test_training_reads_train_top_k_candidates_and_inserts_a_missing_gold(tiny_bert_dir):
    nlp = make_nlp(tiny_bert_dir, train_top_k=2)
    reranker = nlp.get_pipe("bioel_reranker")
    reranker.initialize(lambda: examples(nlp), nlp=nlp, kb_loader=toy_kb)
    egs = [Example(toy_candidate_source(gold_spans_doc(nlp, make_doc(nlp, t, s))), make_doc(nlp, t, s))
           for t, s in TRAIN[:1]]
    pairs, groups, priors, _ = reranker.training_lists(egs)
    # D1 (colon cancer) is third upstream: it replaces D2, the second of the two read;
    # D2 (heart attack) is second: kept in place; each list ends with the NIL option
    assert groups == [(0, 3, 1), (3, 3, 1)]
    assert [p[1] for p in pairs[:3]] == ["asthma ; bronchial asthma",
                                         "colorectal carcinoma ; colon cancer | A cancer of the colon.",
                                         "none of these concepts"]
    assert reranker.counts["train_gold_inserted"] == 1
    # log upstream scores; the inserted gold takes the lowest kept one; 0 for "no concept"
    assert list(priors[:3]) == pytest.approx([math.log(0.5), math.log(0.5), 0.0])
    assert list(priors[3:]) == pytest.approx([math.log(0.5), math.log(0.3), 0.0])
    reranker.set_option("train_top_k", None)  # null: every one of the top_k
    assert [g[1] for g in reranker.training_lists(egs)[1]] == [4, 4]
    with pytest.raises(BioELError) as err:
        reranker.set_option("train_top_k", 0)
    assert err.value.code == "E175"


def test_seen_training_candidates_leave_out_concepts_without_a_training_mention(tiny_bert_dir):
    def kb_with_unseen():
        kb = toy_kb()
        kb.add(Concept("D4", "colon polyp", ("polyp of the colon",)))
        return kb

    nlp = make_nlp(tiny_bert_dir, train_top_k=None, learn_nil=False)
    reranker = nlp.get_pipe("bioel_reranker")
    egs = []
    for t, s in TRAIN[:1]:
        doc = gold_spans_doc(nlp, make_doc(nlp, t, s))
        for ent in doc.ents:  # the unseen D4 first, the gold D1 / D2 below it
            ent._.kb_ents = [("D4", 0.6)] + list(UPSTREAM)
        egs.append(Example(doc, make_doc(nlp, t, s)))
    reranker.set_kb(kb_with_unseen())
    reranker.set_option("train_candidates", "seen")
    with pytest.raises(BioELError) as err:  # never initialized: the seen concepts are unknown
        reranker.training_lists(egs)
    assert err.value.code == "E193"
    reranker.initialize(lambda: examples(nlp), nlp=nlp, kb_loader=kb_with_unseen)
    assert reranker.seen == {"D1", "D2", "D3"}  # NIL is not a concept
    texts = {name: [p[1].split(" ;")[0] for p in reranker.training_lists(egs).pairs]
             for name in ("all", "seen") if reranker.set_option("train_candidates", name) is None}
    assert texts["all"] == ["colon polyp", "asthma", "myocardial infarction",
                            "colorectal carcinoma"] * 2
    assert texts["seen"] == ["asthma", "myocardial infarction", "colorectal carcinoma"] * 2
    assert reranker.counts["train_unseen_dropped"] == 2
    with pytest.raises(BioELError) as err:
        reranker.set_option("train_candidates", "unseen")
    assert err.value.code == "E175"


def test_train_linker_weight_adds_the_upstream_log_scores_to_the_training_logits(tiny_bert_dir):
    from spacy_bioel.losses.listwise import listwise_softmax_loss

    losses, gradients = {}, {}
    for weight in (0.0, 2.0):
        nlp = make_nlp(tiny_bert_dir, train_linker_weight=weight)
        reranker = nlp.get_pipe("bioel_reranker")
        reranker.initialize(lambda: examples(nlp), nlp=nlp, kb_loader=toy_kb)
        egs = [Example(toy_candidate_source(gold_spans_doc(nlp, make_doc(nlp, t, s))),
                       make_doc(nlp, t, s)) for t, s in TRAIN]
        lists = reranker.training_lists(egs)
        scores = np.linspace(-1, 1, len(lists.pairs)).astype("f").reshape(-1, 1)
        reranker.model = Model("fixed", lambda model, X, is_train: (
            scores, gradients.setdefault(weight, []).append))
        losses[weight] = reranker.update(egs)["bioel_reranker"]
        expected, d_scores = listwise_softmax_loss(scores[:, 0] + weight * lists.priors, lists.groups)
        assert losses[weight] == pytest.approx(expected)
        assert gradients[weight][0][:, 0] == pytest.approx(d_scores)
    assert losses[0.0] != pytest.approx(losses[2.0])


def test_query_window_stays_inside_the_sentence():
    from spacy_bioel.reranker.inputs import CandidateTexts, query_text

    nlp = spacy.blank("en")
    doc = nlp.make_doc("It hurt . Colon cancer was found early")
    for i, token in enumerate(doc):
        token.is_sent_start = i in (0, 3)
    doc.ents = [doc.char_span(10, 22, label="Disease")]
    assert query_text(doc.ents[0], 3) == "[M] Colon cancer [/M] was found early"
    assert query_text(doc.ents[0], 0) == "[M] Colon cancer [/M]"
    texts = CandidateTexts(toy_kb(), n_synonyms=1, definition_chars=12)
    assert texts("D1") == "colorectal carcinoma ; colon cancer | A cancer of"
    assert texts("D9") == "D9" and texts.unknown == 1


def test_tuning_replays_the_decisions_and_sets_the_best(trained):
    from spacy_bioel.reranker.tuning import accuracy, collect, tune_reranker

    nlp, _, _ = trained
    reranker = nlp.get_pipe("bioel_reranker")
    dev = [make_doc(nlp, t, s) for t, s in TRAIN]
    try:
        result = tune_reranker(nlp, reranker, dev, weights=[0.0, 1.0], gates=[None, 0.1, 0.5],
                               thresholds=[None])
        best = result["best"]
        # every upstream margin is 0.2: gate 0.1 keeps the (wrong) upstream order, 0.5 reranks all
        assert best["accuracy"] == 1.0 and best["reranked"] == 1.0 and best["gate"] in (None, 0.5)
        assert best["linker_weight"] == 0.0 and reranker.cfg["gate"] == best["gate"]
        entities = collect(nlp, reranker, dev)
        gated_row = accuracy(entities, 0.0, 0.1, None, reranker.kb.resolve)
        assert gated_row["reranked"] == 0.0 and gated_row["accuracy"] < 0.5
        assert result["linker_accuracy"] == gated_row["accuracy"]  # nothing reranked
        assert accuracy(entities, 0.0, 0.0, None, reranker.kb.resolve) == {
            "accuracy": result["linker_accuracy"], "reranked": 0.0}  # gate 0: the linker alone
        assert len(result["grid"]) == 12 and result["n"] == 6  # x use_nil_option (learned)
        # without the learned option the stand-in linker's "not NIL" stands for the NIL mention
        ignored = accuracy(entities, 0.0, None, None, reranker.kb.resolve, use_option=False)
        assert ignored["accuracy"] == pytest.approx(5 / 6) and best["use_nil_option"] is True
    finally:
        reranker.set_option("gate", None)


def test_tuning_without_nil_on_dev_keeps_the_linker_nil_decisions(trained):
    from spacy_bioel.reranker.tuning import tune_reranker

    nlp, _, _ = trained
    reranker = nlp.get_pipe("bioel_reranker")
    dev = [make_doc(nlp, t, s) for t, s in TRAIN if all(c != "NIL" for *_, c in s)]
    before = {key: reranker.cfg[key] for key in
              ("linker_weight", "gate", "nil_threshold", "use_nil_option")}
    try:
        with pytest.warns(BioELWarning, match="W008.*None of the 4 dev mentions is NIL"):
            result = tune_reranker(nlp, reranker, dev, weights=[0.0, 1.0], gates=[None])
        # accuracy alone can only lose by predicting NIL here, so it may not choose the rule
        assert {row["use_nil_option"] for row in result["grid"]} == {False}
        assert {row["nil_threshold"] for row in result["grid"]} == {None}
        assert result["best"]["use_nil_option"] is False and result["n"] == 4
        assert reranker.cfg["use_nil_option"] is False
        # thresholds the caller passes are kept, with a warning of their own
        with pytest.warns(BioELWarning) as caught:
            explicit = tune_reranker(nlp, reranker, dev, weights=[0.0], gates=[None],
                                     thresholds=[0.5, 0.9])
        messages = [str(w.message) for w in caught]
        assert any("W009" in m and "(0.5, 0.9)" in m for m in messages), messages
        assert {row["nil_threshold"] for row in explicit["grid"]} == {0.5, 0.9}
        with pytest.warns(BioELWarning) as caught:  # 'none' alone: nothing to warn about
            tune_reranker(nlp, reranker, dev, weights=[0.0], gates=[None], thresholds=[None])
        assert not any("W009" in str(w.message) for w in caught)
    finally:
        for key, value in before.items():
            reranker.set_option(key, value)


def test_evaluation_overrides_reach_the_reranker(trained):
    from spacy_bioel.evaluation.linkers import run_pipeline

    nlp, _, _ = trained
    gold = [make_doc(nlp, t, s) for t, s in TRAIN]
    reranked = run_pipeline(nlp, gold)
    assert [r.predicted for r in reranked] == ["D1", "D2", "D3", "NIL", "D1", "D3"]
    try:
        gated_records = run_pipeline(nlp, gold, overrides={"reranker.gate": 0.1})
        assert [r.predicted for r in gated_records] == ["D3"] * 6  # the upstream top candidate
        no_option = run_pipeline(nlp, gold, overrides={"reranker.use_nil_option": False})
        assert [r.predicted for r in no_option][3] != "NIL"  # the stand-in linker's decision
    finally:
        nlp.get_pipe("bioel_reranker").set_option("gate", None)
        nlp.get_pipe("bioel_reranker").set_option("use_nil_option", True)


def test_tune_reranker_cli_saves_the_tuned_pipeline(trained, tmp_path):
    import srsly
    from spacy.tokens import DocBin
    from typer.testing import CliRunner

    from spacy_bioel.cli import app

    nlp, _, _ = trained
    nlp.to_disk(tmp_path / "pipe")
    DocBin(docs=[make_doc(nlp, t, s) for t, s in TRAIN]).to_disk(tmp_path / "dev.spacy")
    runner = CliRunner()
    result = runner.invoke(app, ["tune-reranker", str(tmp_path / "pipe"), str(tmp_path / "dev.spacy"),
                                 "--output", str(tmp_path / "tuning.json"), "--linker-weight", "0",
                                 "--gate", "0.1", "--save-to", str(tmp_path / "tuned")])
    assert result.exit_code == 0, result.output
    best = srsly.read_json(tmp_path / "tuning.json")["best"]
    assert best["gate"] == 0.1 and best["reranked"] == 0.0
    assert spacy.load(tmp_path / "tuned").get_pipe("bioel_reranker").cfg["gate"] == 0.1
    assert (tmp_path / "tuning.md").exists()
    missing = runner.invoke(app, ["tune-reranker", str(tmp_path / "pipe"), str(tmp_path / "dev.spacy"),
                                  "--component", "nope", "--no-write"])
    assert missing.exit_code == 1 and "E188" in str(missing.exception)
    with pytest.warns(BioELWarning, match="W008"):  # the first doc has no NIL mention
        limited = runner.invoke(app, ["tune-reranker", str(tmp_path / "pipe"),
                                      str(tmp_path / "dev.spacy"), "--output",
                                      str(tmp_path / "one.json"), "--limit", "1", "--no-write"])
    assert limited.exit_code == 0, limited.output
    assert srsly.read_json(tmp_path / "one.json")["n"] == 2  # the two mentions of the first doc


def test_a_damaged_saved_reranker_is_a_coded_error(trained, tmp_path):
    nlp, _, _ = trained
    nlp.to_disk(tmp_path / "pipe")
    weights = tmp_path / "pipe" / "bioel_reranker" / "model"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "pipe")
    assert err.value.code == "E176" and "model" in str(err.value)
    (tmp_path / "pipe" / "bioel_reranker" / "manifest.json").unlink()
    with pytest.raises(BioELError) as err:  # a removed manifest does not turn verification off
        spacy.load(tmp_path / "pipe")
    assert err.value.code == "E232"
    cfg_path = tmp_path / "pipe" / "bioel_reranker" / "cfg"
    cfg = srsly.read_json(cfg_path)
    del cfg["manifest"]  # as saved before manifests: past the checksum, parsing fails
    srsly.write_json(cfg_path, cfg)
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "pipe")
    assert err.value.code == "E176"


def test_evaluate_and_benchmark_report_the_reranker(trained, tmp_path):
    import srsly
    from spacy.tokens import DocBin
    from typer.testing import CliRunner

    from spacy_bioel.cli import app

    nlp, _, _ = trained
    nlp.to_disk(tmp_path / "pipe")
    toy_kb().to_disk(tmp_path / "kb.bioelkb")
    DocBin(docs=[make_doc(nlp, t, s) for t, s in TRAIN]).to_disk(tmp_path / "test.spacy")
    runner = CliRunner()
    result = runner.invoke(app, ["evaluate", str(tmp_path / "pipe"), str(tmp_path / "test.spacy"),
                                 "--kb", str(tmp_path / "kb.bioelkb"), "--bootstrap", "10",
                                 "--output", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    report = srsly.read_json(tmp_path / "m.json")
    assert report["acc@1"] == 1.0 and report["reranker"]["n_linkable"] == 5
    assert report["reranker"]["candidate_recall@16"] == 1.0
    assert report["reranker"]["share_reranked"] == 1.0
    assert "recall@16 100.0 (its ceiling)" in (tmp_path / "m.md").read_text()
    srsly.write_json(tmp_path / "tuning.json", {  # a tune-reranker output: gated off vs ungated
        "best": {"linker_weight": 0.0, "gate": 0.0, "nil_threshold": None},
        "best_ungated": {"linker_weight": 0.25, "gate": None, "nil_threshold": None}})
    shares = {}
    for row, extra in (("best", []), ("best_ungated", []), ("best", ["--set", "reranker.gate=null"])):
        result = runner.invoke(app, ["evaluate", str(tmp_path / "pipe"), str(tmp_path / "test.spacy"),
                                     "--kb", str(tmp_path / "kb.bioelkb"), "--bootstrap", "10",
                                     "--tuned", str(tmp_path / "tuning.json"), "--tuned-row", row,
                                     *extra, "--output", str(tmp_path / "t.json")])
        assert result.exit_code == 0, result.output
        report = srsly.read_json(tmp_path / "t.json")
        shares[(row, bool(extra))] = report["reranker"]["share_reranked"]
    assert shares == {("best", False): 0.0, ("best_ungated", False): 1.0, ("best", True): 1.0}
    assert "reranker.gate=null" in report["meta"]["settings"]  # --set wins over --tuned
    bad = runner.invoke(app, ["evaluate", str(tmp_path / "pipe"), str(tmp_path / "test.spacy"),
                              "--kb", str(tmp_path / "kb.bioelkb"), "--tuned",
                              str(tmp_path / "tuning.json"), "--tuned-row", "worst"])
    assert bad.exit_code == 1 and "E175" in str(bad.exception)
    from bench.cli import app as lab_app

    result = runner.invoke(lab_app, ["benchmark", str(tmp_path / "pipe"), str(tmp_path / "test.spacy"),
                                 "--output", str(tmp_path / "b.json"), "--set", "reranker.gate=0.1"])
    assert result.exit_code == 0, result.output
    assert srsly.read_json(tmp_path / "b.json")["reranker"] == {"top_k": 16, "gate": 0.1,
                                                                "share_reranked": 0.0}


@pytest.mark.parametrize("zero_head", [True, False])
def test_zero_head_starts_at_the_linker_ranking(tiny_bert_dir, zero_head):
    import torch

    torch.manual_seed(0)
    nlp = make_nlp(tiny_bert_dir, {"zero_head": zero_head}, learn_nil=False, linker_weight=1.0)
    reranker = nlp.get_pipe("bioel_reranker")
    reranker.initialize(lambda: examples(nlp), nlp=nlp, kb_loader=toy_kb)
    docs = run(nlp)
    ranked = [ent._.kb_ents for doc in docs for ent in doc.ents]
    probabilities = [[round(p, 6) for _, p in r] for r in ranked]
    if zero_head:  # s = 0 for every pair: z = log p_upstream, the linker's own order and P
        assert all([c for c, _ in r] == ["D3", "D2", "D1"] for r in ranked)
        assert all(p == [0.5, 0.3, 0.2] for p in probabilities)
    else:  # PyTorch's random head moves the probabilities away from the linker's
        assert any(p != [0.5, 0.3, 0.2] for p in probabilities)

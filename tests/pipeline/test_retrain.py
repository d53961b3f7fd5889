"""`retrain`: the encoder trained again on train + dev as long as the dev-chosen
run trained, keeping the settings `tune` chose (the anchors' final fit)."""
import json

import pytest
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_bioel.cli import app
from spacy_bioel.errors import BioELError
from spacy_bioel.pipeline.retrain import best_step, copy_tuning, scaled_steps

from ..utils import save_linker_pipeline, write_toy_linking_data

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_best_step_is_the_first_best_evaluation(tmp_path):
    log = tmp_path / "log.jsonl"
    rows = [{"step": 0, "score": 0.5}, {"step": 40, "score": 0.8}, {"step": 80, "score": 0.8},
            {"step": 120, "score": 0.7}]
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert best_step(log) == 40  # spaCy keeps the first of equal scores as model-best
    log.write_text(json.dumps({"step": 0, "losses": {}}) + "\n")
    with pytest.raises(BioELError, match="E243.*no scored evaluation"):
        best_step(log)
    with pytest.raises(BioELError, match="E243.*cannot be read"):
        best_step(tmp_path / "missing.jsonl")


def test_steps_scale_with_the_documents(tmp_path):
    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc("a"), nlp.make_doc("b")]).to_disk(tmp_path / "train.spacy")
    DocBin(docs=[nlp.make_doc("c")]).to_disk(tmp_path / "dev.spacy")
    train, dev = tmp_path / "train.spacy", tmp_path / "dev.spacy"
    assert scaled_steps(10, [train], [train, dev]) == 15
    assert scaled_steps(0, [train], [train, dev]) == 1


def test_steps_count_a_folder_of_docbins_and_an_empty_folder_is_refused(tmp_path):
    nlp = spacy.blank("en")
    (tmp_path / "traindev").mkdir()
    DocBin(docs=[nlp.make_doc("a"), nlp.make_doc("b")]).to_disk(tmp_path / "traindev" / "train.spacy")
    DocBin(docs=[nlp.make_doc("c"), nlp.make_doc("d")]).to_disk(tmp_path / "traindev" / "dev.spacy")
    assert scaled_steps(10, [tmp_path / "traindev" / "train.spacy"], [tmp_path / "traindev"]) == 20
    (tmp_path / "empty").mkdir()
    with pytest.raises(BioELError, match="E008"):
        scaled_steps(10, [tmp_path / "traindev"], [tmp_path / "empty"])


def test_a_wrong_tuned_pipeline_fails_before_any_training(tmp_path, monkeypatch):
    import spacy.cli.train

    from spacy_bioel.pipeline.retrain import retrain

    def no_training(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(spacy.cli.train, "train", no_training)
    DocBin(docs=[spacy.blank("en").make_doc("a")]).to_disk(tmp_path / "train.spacy")
    (tmp_path / "tuned").mkdir()  # no pipeline in it
    with pytest.raises((OSError, BioELError)):
        retrain(REPO / "configs" / "linker_cpu.cfg", tmp_path / "tuned", tmp_path / "out",
                [tmp_path / "train.spacy"], tmp_path / "train.spacy", steps=1)
    assert not (tmp_path / "out").exists()


def test_copy_tuning_sets_the_tuned_stages_and_refuses_another_stage(tiny_bert_dir, tmp_path):
    from spacy_bioel.index.candidates import ExactShortcut
    from spacy_bioel.pipeline.loading import find_linker

    path = save_linker_pipeline(tmp_path / "p", tiny_bert_dir, [("D1", "asthma")])
    source, target = find_linker(spacy.load(path)), find_linker(spacy.load(path))
    source.ranker.set_params(knn_k=2, knn_lambda=0.3)
    source.nil.set_params(threshold=0.4, calibration=[5.0, -2.0])
    copied = copy_tuning(source, target, {"source": "s", "target": "t"})
    assert target.ranker.get_params() == source.ranker.get_params() == copied["ranker"]
    assert target.nil.get_params() == source.nil.get_params()
    source.set_stage("shortcut", None if target.shortcut is not None else ExactShortcut())
    with pytest.raises(BioELError, match="E244.*shortcut"):
        copy_tuning(source, target, {"source": "s", "target": "t"})


def test_retrain_trains_on_train_and_dev_with_the_tuned_settings(tiny_bert_dir, tmp_path):
    from spacy_bioel.pipeline.loading import find_linker

    write_toy_linking_data(tmp_path, nil=False)
    data, kb = tmp_path / "data.spacy", tmp_path / "kb.bioelkb"
    config = REPO / "configs" / "linker_cpu.cfg"
    runner = CliRunner()
    paths = ["--paths.kb", str(kb), "--paths.encoder", str(tiny_bert_dir)]
    out = runner.invoke(app, ["init-pipeline", str(config), str(tmp_path / "init"), "--paths.train", str(data),
                              "--paths.dev", str(data), *paths])
    assert out.exit_code == 0, out.output + repr(out.exception)
    nlp = spacy.load(tmp_path / "init")  # what tune would have chosen on dev
    find_linker(nlp).ranker.set_params(knn_k=2, knn_lambda=0.3)
    find_linker(nlp).nil.set_params(calibration=[5.0, -2.0])
    nlp.to_disk(tmp_path / "tuned")
    out = runner.invoke(app, ["retrain", str(config), str(tmp_path / "tuned"), str(tmp_path / "out"),
                              "--train", str(data), "--dev", str(data), *paths])
    assert out.exit_code != 0 and "E243" in str(out.exception)  # neither --log nor --steps
    (tmp_path / "log.jsonl").write_text(json.dumps({"step": 1, "score": 0.9}) + "\n")
    out = runner.invoke(app, ["retrain", str(config), str(tmp_path / "tuned"), str(tmp_path / "out"),
                              "--train", str(data), "--dev", str(data), "--log", str(tmp_path / "log.jsonl"),
                              *paths])
    assert out.exit_code == 0, out.output + repr(out.exception)
    assert "best evaluation at step 1; 2 steps on train + dev" in out.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        p.name for p in (tmp_path / "tuned").iterdir())  # the pipeline, not spaCy's training folder
    final = find_linker(spacy.load(tmp_path / "out"))
    assert final.ranker.get_params()["knn_k"] == 2 and final.ranker.get_params()["knn_lambda"] == pytest.approx(0.3)
    assert final.nil.get_params()["calibration"] == pytest.approx([5.0, -2.0])
    tuned = find_linker(spacy.load(tmp_path / "tuned"))
    assert len(final.train_mentions) == 2 * len(tuned.train_mentions)  # train + dev in its datastore

"""init-pipeline, tune, rebuild-datastore and evaluate on a pipeline, with a tiny BERT."""
import spacy
import srsly
from spacy.tokens import DocBin
from typer.testing import CliRunner

from bench.cli import app as lab_app
from spacy_bioel.cli import app

from tests.utils import write_toy_linking_data

REPO_CONFIG = __import__("pathlib").Path(__file__).resolve().parents[2] / "configs" / "linker.cfg"


def write_data(tmp_path):
    write_toy_linking_data(tmp_path)


def init_pipeline(runner, tmp_path, tiny_bert_dir):
    """`init-pipeline` on the fixture data: an untrained linker saved at tmp_path/pipe."""
    result = runner.invoke(app, [
        "init-pipeline", str(REPO_CONFIG), str(tmp_path / "pipe"),
        "--paths.train", str(tmp_path / "data.spacy"), "--paths.dev", str(tmp_path / "data.spacy"),
        "--paths.kb", str(tmp_path / "kb.bioelkb"), "--paths.encoder", str(tiny_bert_dir)])
    assert result.exit_code == 0, result.output + repr(result.exception)


def test_init_tune_rebuild_evaluate(tiny_bert_dir, tmp_path):
    write_data(tmp_path)
    runner = CliRunner()
    init_pipeline(runner, tmp_path, tiny_bert_dir)
    result = runner.invoke(app, ["tune", str(tmp_path / "pipe"), str(tmp_path / "data.spacy"),
                                 "--output", str(tmp_path / "tuning.json"), "--k", "1,2",
                                 "--lambda", "0,0.5", "--beta1", "0.1", "--beta2", "1"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    tuning = srsly.read_json(tmp_path / "tuning.json")
    assert len(tuning["grid"]) == 3 and tuning["n"] == 3  # lambda 0: one row (k has no effect)
    # the exact mention strings are in the datastore, so kNN can only help here
    assert max(r["acc@1"] for r in tuning["grid"] if r["lambda"] == 0.5) >= \
        max(r["acc@1"] for r in tuning["grid"] if r["lambda"] == 0)
    cfg = srsly.read_json(tmp_path / "pipe" / "bioel_linker" / "cfg")  # saved by nlp.to_disk
    assert cfg["stages"]["ranker"]["knn_k"] == tuning["best"]["k"] and "threshold" in tuning["nil"]
    assert cfg["stages"]["nil"]["threshold"] == tuning["nil"]["threshold"]
    assert cfg["stages"]["nil"]["calibration"] == tuning["nil"]["calibration"]
    loaded = spacy.load(tmp_path / "pipe")
    assert loaded.get_pipe("bioel_linker").ranker.knn_lambda == tuning["best"]["lambda"]
    # the saved threshold reproduces, through the pipeline, the NIL F1 tune reported on dev
    gold_docs = list(DocBin().from_disk(tmp_path / "data.spacy").get_docs(loaded.vocab))
    predicted = [e.kb_id_ == "NIL" for d in loaded.pipe([d.copy() for d in gold_docs])
                 for e in d.ents]
    gold_nil = [e.kb_id_ == "NIL" for d in gold_docs for e in d.ents]
    tp = sum(p and g for p, g in zip(predicted, gold_nil))
    f1 = 2 * tp / (sum(predicted) + sum(gold_nil))
    assert f1 == __import__("pytest").approx(tuning["nil"]["f1"])
    result = runner.invoke(app, ["rebuild-datastore", str(tmp_path / "pipe"),
                                 str(tmp_path / "data.spacy"), "--output", str(tmp_path / "pipe2")])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert len(spacy.load(tmp_path / "pipe2").get_pipe("bioel_linker").datastore) == 3
    # --add grows the saved datastore (the final fit: dev after tune) and keeps what it held
    result = runner.invoke(app, ["rebuild-datastore", str(tmp_path / "pipe2"),
                                 str(tmp_path / "data.spacy"), "--add", "--output", str(tmp_path / "pipe3")])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "of 3 mentions grown to 6" in result.output
    grown = spacy.load(tmp_path / "pipe3").get_pipe("bioel_linker")
    held = spacy.load(tmp_path / "pipe2").get_pipe("bioel_linker").train_mentions
    assert len(grown.datastore) == 6 and grown.train_mentions == held + held
    result = runner.invoke(app, ["evaluate", str(tmp_path / "pipe"), str(tmp_path / "data.spacy"),
                                 "--kb", str(tmp_path / "kb.bioelkb"), "--set", "ranker.use_knn=false",
                                 "--label", "tiny", "--bootstrap", "10",
                                 "--output", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = srsly.read_json(tmp_path / "m.json")
    assert metrics["n"] == 3 and metrics["meta"]["linker"] == "tiny"
    assert metrics["nil"]["n_gold_nil"] == 1 and metrics["nil"]["average_precision"] is not None


def test_benchmark_command(tiny_bert_dir, tmp_path):
    write_data(tmp_path)
    runner = CliRunner()
    init_pipeline(runner, tmp_path, tiny_bert_dir)
    result = runner.invoke(lab_app, ["benchmark", str(tmp_path / "pipe"), str(tmp_path / "data.spacy"),
                                 "--output", str(tmp_path / "bench.json")])
    assert result.exit_code == 0, result.output + repr(result.exception)
    bench = srsly.read_json(tmp_path / "bench.json")
    assert bench["mentions"] == 4 and bench["mentions_per_second"] > 0 and bench["peak_rss_mb"] > 0


def test_set_stage_swaps_candidates_and_adds_a_type_filter(tiny_bert_dir, tmp_path):
    write_data(tmp_path)
    runner = CliRunner()
    init_pipeline(runner, tmp_path, tiny_bert_dir)
    result = runner.invoke(app, ["set-stage", str(tmp_path / "pipe"), str(tmp_path / "hybrid"),
                                 "candidates", "spacy-bioel.HybridCandidates.v1",
                                 "--param", "sparse_weight=0.5"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    loaded = spacy.load(tmp_path / "hybrid")
    linker = loaded.get_pipe("bioel_linker")
    assert type(linker.candidates).__name__ == "HybridCandidates"
    assert linker.candidates.sparse_weight == 0.5
    assert loaded.config["components"]["bioel_linker"]["candidates"]["sparse_weight"] == 0.5
    result = runner.invoke(app, ["set-stage", str(tmp_path / "hybrid"), str(tmp_path / "typed"),
                                 "type_filter", "spacy-bioel.TypeFilter.v1",
                                 "--param", 'allowed={"Disease": ["nope"]}'])
    assert result.exit_code != 0 and "E171" in repr(result.exception)  # no concept has the type


def test_set_stage_changes_settings_too(tiny_bert_dir, tmp_path):
    """`--setting retrieve_k=2` is saved with the swapped stage (config and linker);
    evaluate then reports recall at the candidates written, not at its --k."""
    write_data(tmp_path)
    runner = CliRunner()
    init_pipeline(runner, tmp_path, tiny_bert_dir)
    result = runner.invoke(app, ["set-stage", str(tmp_path / "pipe"), str(tmp_path / "short"),
                                 "shortcut", "null", "--setting", "retrieve_k=2", "--setting", "top_k=2"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    loaded = spacy.load(tmp_path / "short")
    linker = loaded.get_pipe("bioel_linker")
    assert (linker.cfg["retrieve_k"], linker.cfg["top_k"]) == (2, 2)
    assert loaded.config["components"]["bioel_linker"]["retrieve_k"] == 2
    result = runner.invoke(app, ["evaluate", str(tmp_path / "short"), str(tmp_path / "data.spacy"),
                                 "--kb", str(tmp_path / "kb.bioelkb"), "--output", str(tmp_path / "m.json"),
                                 "--bootstrap", "0"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = srsly.read_json(tmp_path / "m.json")
    assert "recall@2" in report and "recall@64" not in report and report["meta"]["k"] == 2
    result = runner.invoke(app, ["set-stage", str(tmp_path / "pipe"), str(tmp_path / "bad"),
                                 "shortcut", "null", "--setting", "no_such_setting=2"])
    assert result.exit_code != 0 and "E172" in repr(result.exception)


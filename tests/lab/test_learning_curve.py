"""`python -m bench learning-curve`: dev scores per epoch from the JSONL of
spaCy's console logger, epochs taken from each log, bad lines named and counted."""
import json

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.learning_curve import curve, read_log, steps_per_epoch, summarize


def write_log(path, rows):
    """rows: (epoch, step, acc@1 in percent); one line as spaCy's ConsoleLogger.v3 writes it."""
    with open(path, "w", encoding="utf-8") as handle:
        for epoch, step, acc in rows:
            handle.write(json.dumps({"epoch": epoch, "step": step, "losses": {"bioel_linker": 2.0},
                                     "scores": {"bioel_acc@1": acc, "bioel_acc@5": 90.0},
                                     "score": acc / 100}) + "\n")


def test_curve_counts_epochs_from_the_log(tmp_path):
    log = tmp_path / "log.jsonl"
    write_log(log, [(0, 0, 50.0), (0, 40, 70.0), (1, 80, 80.0), (2, 120, 79.0)])
    points = read_log(log)
    assert steps_per_epoch(points) == 60  # step 120 after 2 epochs: at most 60 an epoch
    assert curve(points) == [(0.0, 50.0), (40 / 60, 70.0), (80 / 60, 80.0), (2.0, 79.0)]
    assert curve(points, 80) == [(0.0, 50.0), (0.5, 70.0), (1.0, 80.0), (1.5, 79.0)]
    summary = summarize({"paper": log})
    assert summary["runs"]["paper"]["best"]["step"] == 80


def test_a_run_that_never_finished_an_epoch_is_drawn_by_steps(tmp_path):
    log = tmp_path / "log.jsonl"
    write_log(log, [(0, 0, 50.0), (0, 40, 60.0)])
    assert steps_per_epoch(read_log(log)) is None
    assert curve(read_log(log)) == [(0.0, 50.0), (40.0, 60.0)]


def test_bad_lines_are_named_and_skipped(tmp_path, caplog):
    log = tmp_path / "log.jsonl"
    write_log(log, [(0, 0, 50.0)])
    with open(log, "a", encoding="utf-8") as handle:
        handle.write("{not json\n")
        handle.write(json.dumps({"epoch": 0, "step": 5, "scores": {}}) + "\n")
    with caplog.at_level("WARNING"):
        assert len(read_log(log)) == 1
    assert f"{log} line 2 skipped" in caplog.text and f"{log} line 3 skipped" in caplog.text
    assert "2 of its lines skipped" in caplog.text


def test_cli_writes_json_table_and_figure(tmp_path):
    pytest.importorskip("matplotlib")
    paper, cpu = tmp_path / "paper.jsonl", tmp_path / "cpu.jsonl"
    write_log(paper, [(0, 0, 50.0), (1, 40, 80.0), (2, 80, 85.0)])
    write_log(cpu, [(0, 0, 50.0), (2, 200, 86.0)])
    out = tmp_path / "curves.json"
    result = CliRunner().invoke(app, ["learning-curve", f"paper={paper}", f"cpu={cpu}",
                                      "--epoch-steps", "cpu=75", "--output", str(out)])
    assert result.exit_code == 0, result.output
    table = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "| paper | 3 | 40 | 85.00 | 80 | 2.0 |" in table
    assert "| cpu | 2 | 75 | 86.00 | 200 | 2.7 |" in table
    assert out.with_suffix(".png").stat().st_size > 0
    missing = CliRunner().invoke(app, ["learning-curve", f"x={tmp_path / 'none.jsonl'}"])
    assert missing.exit_code != 0 and "no such log" in missing.output


def test_a_console_output_is_read_when_no_jsonl_was_saved(tmp_path):
    from bench.learning_curve import read_console

    console = tmp_path / "train.log"
    console.write_text(
        "Encoding names:  50%|#####     | 1/2\r\n"
        "E    #       LOSS BIOEL...  BIOEL_ACC@1  BIOEL_ACC@5  NEL_MICRO_F  SCORE \n"
        "---  ------  -------------  -----------  -----------  -----------  ------\n"
        "  0       0           3.61        86.15        96.57        83.48    0.86\n"
        "bioel_linker: step 2 | epoch 1, 5% of 5,145 mentions | loss 3.041\n"
        "Encoding concepts:  46%|####6     | 117/256\r"
        "  1      40          40.83        85.01        96.19        82.85    0.85\n", encoding="utf-8")
    assert read_console(console) == [{"step": 0, "epoch": 0, "score": 86.15, "loss": 3.61},
                                     {"step": 40, "epoch": 1, "score": 85.01, "loss": 40.83}]
    assert summarize({"paper": console})["runs"]["paper"]["steps_per_epoch"] == 40


GPU_TABLE = """# GPU check on NVIDIA H100

| stage | seconds | dev Acc@1 | test Acc@1 | test Acc@5 |
|---|---:|---:|---:|---:|
| untrained | 0.0 | 0.8108 | | |
| epoch 1 (34 steps) | 21.9 | 0.8325 | | |
| epoch 2 (34 steps) | 22.9 | 0.8496 | | |
| best epoch (2) | 238.6 total | 0.8496 | 0.8925 | 0.9620 |
"""


def test_gpu_check_runs_are_read_from_json_or_table(tmp_path):
    from bench.learning_curve import read_run, summarize

    table = tmp_path / "gpu_check.md"
    table.write_text(GPU_TABLE, encoding="utf-8")
    report = {"before_training": {"dev": {"acc@1": 0.8108}},
              "training": {"epochs": [{"epoch": 1, "steps": 34, "mean_loss": 1.0, "dev": {"acc@1": 0.8325}},
                                      {"epoch": 2, "steps": 34, "mean_loss": 0.7, "dev": {"acc@1": 0.8496}}]}}
    as_json = tmp_path / "gpu_check.json"
    as_json.write_text(json.dumps(report), encoding="utf-8")
    for path in (table, as_json):
        points = read_run(path)
        assert [(p["step"], p["epoch"]) for p in points] == [(0, 0), (34, 1), (68, 2)]
        assert [round(p["score"], 2) for p in points] == [81.08, 83.25, 84.96]
    summary = summarize({"md": table, "json": as_json})
    for run in summary["runs"].values():  # the best-epoch row is not an evaluation
        assert run["steps_per_epoch"] == 34 and run["best"]["step"] == 68
        assert run["curve"][-1] == (2.0, run["best"]["score"])


def test_a_json_that_is_not_a_gpu_check_is_named(tmp_path):
    from bench.learning_curve import read_run

    other = tmp_path / "scores.json"
    other.write_text(json.dumps({"acc@1": 0.9}), encoding="utf-8")
    with pytest.raises(ValueError, match="scores.json: not a GPU check report"):
        read_run(other)

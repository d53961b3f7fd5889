"""The side-by-side benchmark: systems parsed from the command line, workers run
in fresh processes (a tiny pipeline here; scispaCy where its environment
exists), Acc@1 read the way `evaluate` reads it, summaries with min/median and
ratios, and a worker that fails is a coded error naming it."""
import importlib.util
import sys

import pytest
import spacy

from spacy_bioel.errors import BioELError
from bench.sidebyside import (SCISPACY, System, accuracy, parse_system,
                                               side_by_side, summarize, summary_table, on_test_part)
from tests.utils import tiny_linker_config, write_toy_linking_data


def test_systems_from_the_command_line():
    system = parse_system("fast=pipelines/onnx@/opt/deploy/bin/python")
    assert (system.label, system.pipeline, system.python) == ("fast", "pipelines/onnx",
                                                               "/opt/deploy/bin/python")
    assert parse_system("plain=p").python == sys.executable
    for bad in ("p", "=p", "x="):
        with pytest.raises(BioELError, match="E175"):
            parse_system(bad)


def test_accuracy_counts_mentions_with_gold_ids():
    assert accuracy(["D1", "NIL", "D3"], [["D1"], ["D2"], []]) == 0.5
    assert accuracy(["D1"], [[]]) is None
    assert accuracy(["D1", "NIL", "D3"], [["D1"], ["D2"], ["D3"]], [False, True, True]) == 0.5


def test_accuracy_on_the_test_part_of_a_natural_corpus():
    """Docs marked with their source (natural-corpus) are scored on the test part:
    a trained linker's kNN datastore holds the training mentions."""
    from spacy.tokens import Span

    nlp = spacy.blank("en")
    docs = []
    for source, n in (("ncbi/train", 2), ("ncbi/test", 1), ("bc5cdr/test", 2)):
        doc = nlp.make_doc("a b c")
        doc.ents = [Span(doc, i, i + 1, label="Disease", kb_id="D1") for i in range(n)]
        doc.user_data["bioel_source"] = source
        docs.append(doc)
    assert on_test_part(docs) == [False, False, True, True, True]
    assert on_test_part([nlp.make_doc("a")]) is None
    table = summary_table([{"summary": [], "dataset": "natural", "acc_scope": "the 3 mentions"}])
    assert "Acc@1 of natural: the 3 mentions." in table


def test_summary_medians_minimums_and_ratios():
    systems = [System("sci", SCISPACY, "py"), System("ours", "bioel", "py")]
    systems[1].build = {"build_s": 12.0}
    runs = [{"round": r, "repeat": 1, "system": s, "load_s": load, "import_s": 1.0,
             "mentions": 10, "mentions_per_s": speed, "peak_rss_mb": rss,
             "rss_after_import_mb": 90.0, "acc@1": acc}
            for r, (s, load, speed, rss, acc) in enumerate(
                [("sci", 1.0, 100.0, 300.0, 0.5), ("sci", 3.0, 200.0, 310.0, 0.5),
                 ("sci", 2.0, 150.0, 305.0, 0.5), ("ours", 2.0, 400.0, 150.0, 0.9),
                 ("ours", 2.0, 600.0, 155.0, 0.9), ("ours", 2.0, 500.0, 160.0, 0.9)])]
    rows = summarize(runs, systems)
    sci, ours = rows
    assert (sci["mentions_per_s_min"], sci["mentions_per_s_median"], sci["load_s"]) == (100, 150, 2)
    assert ours["speed_x_scispacy"] == pytest.approx(500 / 150)
    assert ours["rss_x_scispacy"] == pytest.approx(160 / 310) and ours["build_s"] == 12.0
    assert ours["start_s"] == 3.0 and ours["start_minus_scispacy_s"] == 0.0  # import + load
    assert "| x1 | 10 | ours | 12.0 | 2.00 | 3.00 | 400 | 500 | 160 | 90.0 | 3.33 | 0.52 |" in \
        summary_table([{"summary": rows}])


def test_stage_shares_of_the_linking_time():
    """Shares per stage from the linker's timings (median over rounds): the
    encoder without tokenising, the linker's untimed rest, spaCy's rest."""
    from bench.sidebyside import STAGES, stage_shares, stage_table

    timings = {"tokenize": 1.0, "encode": 4.0, "search": 2.0, "knn": 0.5, "decide": 0.5,
               "early": 0.5, "linker": 9.0}
    runs = [{"link_s": 10.0, "timings": timings}, {"link_s": 20.0, "timings": timings},
            {"link_s": 10.0, "timings": timings}]
    shares = stage_shares(runs)
    assert shares == pytest.approx({"tokenisation": 0.1, "encoder": 0.3, "name search": 0.2,
                                    "kNN": 0.05, "rank + NIL": 0.05,
                                    "shortcut + abbreviations": 0.05, "rest of the linker": 0.15,
                                    "spaCy and the doc stream": 0.1})
    assert sum(shares.values()) == pytest.approx(1.0) and len(shares) == len(STAGES)
    assert stage_shares([{"link_s": 1.0}]) is None  # scispaCy records none
    table = stage_table([{"dataset": "d", "summary": [
        {"repeat": 1, "system": "ours", "stage_shares": shares},
        {"repeat": 1, "system": "sci", "stage_shares": None}]}])
    assert "| d x1 | ours | 10% | 30% | 20% | 5% | 5% | 5% | 15% | 10% |" in table
    assert "sci" not in table and stage_table([{"summary": []}]) == ""


def test_a_pipeline_side_by_side_with_itself(tiny_bert_dir, tmp_path):
    write_toy_linking_data(tmp_path)
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    from spacy_bioel import KnowledgeBase
    from spacy_bioel.cli._app import read_docs

    nlp.get_pipe("bioel_linker").set_kb(KnowledgeBase.from_disk(tmp_path / "kb.bioelkb"))
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    systems = [parse_system(f"a={tmp_path / 'pipeline'}"), parse_system(f"b={tmp_path / 'pipeline'}")]
    docs = read_docs([tmp_path / "data.spacy"])
    result = side_by_side(systems, docs, [2], 2, tmp_path / "work", build=True, timeout=600,
                          build_only=["a"])  # b is a (set-stage) variant of a: not built again
    assert len(result["runs"]) == 2 * 2 and result["mentions"] == 4
    assert [r["system"] for r in result["runs"]] == ["a", "b", "b", "a"]  # alternating
    for row in result["summary"]:
        assert row["mentions"] == 4 * row["repeat"]
        assert (row["build_s"] > 0) if row["system"] == "a" else row["build_s"] is None
        assert row["acc_same_every_round"] and 0 <= row["acc@1"] <= 1
        assert 0 < row["stage_shares"]["encoder"] < 1  # the worker reports the linker's timings
        where = row["where"]  # the worker's own process: its CPU, install and threads
        assert where["cpu"] and where["usable_cores"] >= 1 and where["door"] is None
        assert where["torch_installed"] == (importlib.util.find_spec("torch") is not None)
    systems[0].door = "add_pipe defaults"
    result["summary"] = summarize(result["runs"], systems)
    table = summary_table([result])
    assert "Where each system ran:" in table and "door: add_pipe defaults" in table
    assert {r["acc@1"] for r in result["runs"]} == {result["runs"][0]["acc@1"]}


def test_a_failing_worker_is_a_coded_error(tmp_path):
    scispacy = System("sci", SCISPACY, sys.executable, kb_jsonl=str(tmp_path / "kb.jsonl"),
                      index_dir=str(tmp_path / "index"))
    with pytest.raises(BioELError, match="E181") as err:
        side_by_side([scispacy], [], [1], 1, tmp_path / "work", timeout=120)
    assert "scispacy_worker.py build" in str(err.value)


def test_a_worker_reports_its_own_peak_memory_not_its_parents():
    """ru_maxrss survives exec, so a worker would report at least its parent's
    RSS; the workers read VmHWM, which starts afresh in the new program."""
    import subprocess
    import sys
    from pathlib import Path

    import numpy as np

    from bench import sidebyside

    ballast = np.ones(300 * 2 ** 20 // 8)  # 300 MB in this (the parent) process
    folder = Path(sidebyside.__file__).parent
    for worker in ("bioel_worker", "scispacy_worker"):
        code = f"import sys; sys.path.insert(0, {str(folder)!r}); import {worker}; print({worker}.peak_rss_mb())"
        reported = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                        check=True).stdout)
        assert 0 < reported < 200, (worker, reported)
    del ballast


def test_the_predictions_diff_counts_each_kind_of_change():
    from bench.cli.predictions import diff

    row = {"doc": 0, "start": 0, "end": 4, "kb_id": "D1", "is_nil": False, "nil_score": 0.1,
           "candidates": [["D1", 0.9], ["D2", 0.1]]}
    assert diff([row], [dict(row)], 1e-5)["identical"]
    moved = dict(row, kb_id="D2", candidates=[["D2", 0.6], ["D1", 0.4]])
    result = diff([row], [moved], 1e-5)
    assert not result["identical"] and result["changed"] == {"kb_id": 1, "is_nil": 0,
                                                             "candidate_order": 1}
    assert abs(result["largest_score_change"] - 0.3) < 1e-9
    assert diff([row], [dict(row, start=1)], 1e-5) == {"same_mentions": False}

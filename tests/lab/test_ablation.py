"""Ablation summaries: mean +- std over seeds and paired comparisons."""
import pytest

from bench.ablation import compare, comparison_table, summarise


def run(variant, seed, acc_off, acc_on, ap=0.5):
    report = lambda acc: {"acc@1": acc, "refined": {"acc@1": acc / 2}, "nil": {"average_precision": ap}}
    return {"dataset": "toy", "variant": variant, "seed": seed, "describe": {"loss": variant},
            "evaluations": {"knn_off": report(acc_off), "knn_on": report(acc_on)}}


RUNS = [run("a", 0, 0.8, 0.9), run("a", 1, 0.6, 0.7), run("b", 0, 0.7, 0.7), run("b", 1, 0.7, 0.6),
        run("b", 2, 0.9, 0.9)]  # b seed 2 has no partner in a


def test_summarise_mean_std_over_seeds():
    rows = {(r["variant"], r["knn"]): r for r in summarise(RUNS)}
    assert rows[("a", "off")]["seeds"] == 2
    assert rows[("a", "off")]["Acc@1"]["mean"] == pytest.approx(0.7)
    assert rows[("a", "off")]["Acc@1"]["std"] == pytest.approx(0.1414, abs=1e-4)
    assert rows[("b", "on")]["seeds"] == 3


def test_compare_pairs_by_seed():
    rows = compare(RUNS, [{"question": "a vs b", "a": "a", "b": "b", "metrics": ["Acc@1", "NIL AP"]},
                          {"question": "kNN", "a": {"variant": "*", "knn": "on"},
                           "b": {"variant": "*", "knn": "off"}, "metrics": ["refined Acc@1"]}])
    by = {(r["question"], r["metric"]): r for r in rows}
    first = by[("a vs b", "Acc@1")]
    assert first["pairs"] == 2 and first["a_better"] == 1  # +0.1 (seed 0), -0.1 (seed 1)
    assert first["mean"] == pytest.approx(0.0) and first["std"] == pytest.approx(0.1414, abs=1e-4)
    assert by[("a vs b", "NIL AP")]["a_better"] == 0
    knn = by[("kNN", "refined Acc@1")]
    assert knn["pairs"] == 5  # every (variant, seed) with both settings
    assert knn["mean"] == pytest.approx((0.05 + 0.05 + 0 - 0.05 + 0) / 5)
    assert "| a vs b | toy | a (kNN off) | b (kNN off) | Acc@1 | +0.0 ± 14.1 | 2 | 1 |" in \
        comparison_table(rows)
    unrun = compare(RUNS, [{"question": "c vs a", "a": "c", "b": "a"}])
    assert unrun[0]["pairs"] == 0
    assert "| c vs a |" not in comparison_table(unrun)
    assert "Not answered yet (no run pairs): c vs a." in comparison_table(unrun)

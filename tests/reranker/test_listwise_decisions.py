"""The reranker's loss and decision rules, without a model."""
import math

import numpy as np
import pytest

from spacy_bioel.losses.listwise import listwise_softmax_loss
from spacy_bioel.reranker.decisions import decide, gated, linker_margin, no_candidates


def test_listwise_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=7)
    groups = [(0, 4, 2), (4, 3, 0)]
    loss, grad = listwise_softmax_loss(scores, groups)
    eps = 1e-5
    for i in range(len(scores)):
        up, down = scores.copy(), scores.copy()
        up[i] += eps
        down[i] -= eps
        numeric = (listwise_softmax_loss(up, groups)[0] - listwise_softmax_loss(down, groups)[0]) / (2 * eps)
        assert grad[i] == pytest.approx(numeric, abs=1e-4)
    assert loss == pytest.approx(np.mean([
        -np.log(np.exp(scores[2]) / np.exp(scores[:4]).sum()),
        -np.log(np.exp(scores[4]) / np.exp(scores[4:]).sum())]))


def test_listwise_descends_to_the_gold():
    scores = np.zeros(3)
    for _ in range(200):
        _, grad = listwise_softmax_loss(scores, [(0, 3, 1)])
        scores -= 1.0 * grad
    assert int(np.argmax(scores)) == 1
    assert listwise_softmax_loss(np.zeros(0), [])[0] == 0.0


def test_margin_gate():
    assert linker_margin([("A", 0.9), ("B", 0.2)]) == pytest.approx(0.7)
    assert linker_margin([("A", 0.9)]) == math.inf
    assert gated([("A", 0.9), ("B", 0.2)], 0.5) and not gated([("A", 0.6), ("B", 0.5)], 0.5)
    assert not gated([("A", 0.9), ("B", 0.2)], None)


def test_decide_reorders_and_interpolates():
    candidates = [("A", 0.9), ("B", 0.05), ("C", 0.05)]
    result = decide(candidates, np.array([0.0, 2.0, -1.0]), None, 0.0, None)
    assert [c for c, _ in result["candidates"]] == ["B", "A", "C"]
    assert sum(p for _, p in result["candidates"]) == pytest.approx(1.0)
    assert result["probability"] == result["candidates"][0][1] and not result["is_nil"]
    # a strong weight on the linker's log-probability keeps its choice
    assert decide(candidates, np.array([0.0, 2.0, -1.0]), None, 3.0, None)["candidates"][0][0] == "A"


def test_decide_nil_rules():
    candidates = [("A", 0.5), ("B", 0.4)]
    learned = decide(candidates, np.array([1.0, 0.0]), 3.0, 0.0, None)
    assert learned["is_nil"] and learned["candidates"][0][0] == "A"
    assert learned["nil_score"] == pytest.approx(1.0 - learned["probability"])
    flat = decide(candidates, np.array([0.1, 0.0]), None, 0.0, 0.4)
    assert flat["is_nil"]  # P(best) ~ 0.52 -> nil score ~ 0.48 > 0.4
    assert not decide(candidates, np.array([5.0, 0.0]), None, 0.0, 0.4)["is_nil"]
    # neither a learned option nor a threshold: the linker's NIL decision stands
    kept = decide(candidates, np.array([5.0, 0.0]), None, 0.0, None, linker_nil=(True, 0.8))
    assert kept["is_nil"] and kept["nil_score"] == 0.8
    assert no_candidates()["is_nil"] and no_candidates()["candidates"] == []

import numpy as np
import pytest

from spacy_bioel.nil import calibrate_nil_threshold, nil_f1_at


def test_calibration_on_a_synthetic_case():
    # NIL mentions score high, linkable ones low, with one overlap
    scores = [0.9, 0.8, 0.75, 0.3, 0.2, 0.1, 0.78]
    gold = [True, True, True, False, False, False, False]
    best = calibrate_nil_threshold(scores, gold)
    # threshold 0.75 -> predicted NIL: 0.9, 0.8, 0.75, 0.78 -> P 3/4, R 1, F1 6/7; it is
    # placed halfway to the next observed score (0.3), where it takes the same decisions
    assert best["threshold"] == pytest.approx((0.75 + 0.3) / 2)
    assert nil_f1_at(best["threshold"], np.array(scores), np.array(gold))["f1"] == best["f1"]
    assert best["precision"] == pytest.approx(0.75) and best["recall"] == 1.0
    assert best["f1"] == pytest.approx(6 / 7)
    # exhaustively no threshold does better
    for t in np.linspace(0, 1, 101):
        assert nil_f1_at(t, np.array(scores), np.array(gold))["f1"] <= best["f1"] + 1e-12


def test_separable_and_no_nil():
    assert calibrate_nil_threshold([0.9, 0.1], [True, False])["f1"] == 1.0
    assert calibrate_nil_threshold([0.9, 0.1], [False, False])["threshold"] == float("inf")

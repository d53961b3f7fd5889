"""The NIL stages: Platt calibration against a logistic fit written from the
likelihood, the two nil_score definitions, and fitting on dev."""
import math

import numpy as np
import pytest

from spacy_bioel.nil.stages import ThresholdNIL, fit_platt, sigmoid


def test_fit_platt_recovers_a_known_sigmoid():
    rng = np.random.default_rng(0)
    support = rng.uniform(0.2, 1.0, size=4000)
    correct = rng.uniform(size=4000) < 1 / (1 + np.exp(-(10 * support - 6)))
    a, b = fit_platt(support, correct)
    assert a == pytest.approx(10, rel=0.15) and b == pytest.approx(-6, rel=0.15)
    # the fit maximises the (smoothed-target) likelihood: nudging a or b lowers it
    n_pos, n_neg = correct.sum(), (~correct).sum()
    target = np.where(correct, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def loglik(a_, b_):
        p = 1 / (1 + np.exp(-(a_ * support + b_)))
        return np.sum(target * np.log(p) + (1 - target) * np.log(1 - p))
    for da, db in [(0.1, 0), (-0.1, 0), (0, 0.1), (0, -0.1)]:
        assert loglik(a, b) >= loglik(a + da, b + db)


def test_separable_dev_set_gives_a_finite_calibration():
    a, b = fit_platt([0.9, 0.95, 0.3, 0.2], [True, True, False, False])
    assert math.isfinite(a) and math.isfinite(b) and a > 0
    assert sigmoid(a * 0.92 + b) > 0.5 > sigmoid(a * 0.25 + b)


def test_v1_and_v2_scores():
    v1 = ThresholdNIL(threshold=0.3)
    assert v1.decide(0.9, True) == (False, pytest.approx(0.1), None)
    assert v1.decide(0.6, True)[0] is True
    assert v1.decide(1.0000001, True)[1] == 0.0  # clipped: never negative
    assert v1.decide(0.99, False)[0] is True  # no candidate: NIL
    v2 = ThresholdNIL(threshold=0.5, calibration=(10.0, -7.0), nil_score_from="probability")
    nil, score, prob = v2.decide(0.8, True)
    assert prob == pytest.approx(sigmoid(1.0)) and score == pytest.approx(1 - prob) and not nil
    assert v2.decide(0.6, True)[0] is True  # p = sigmoid(-1) < 0.5


def test_fit_sets_calibration_and_threshold():
    rng = np.random.default_rng(1)
    support = np.r_[rng.uniform(0.7, 1.0, 50), rng.uniform(0.3, 0.75, 50)]
    correct = [True] * 50 + [False] * 50
    gold_nil = [False] * 50 + [True] * 20 + [False] * 30
    v2 = ThresholdNIL(0.5, (1.0, 0.0), nil_score_from="probability")
    result = v2.fit(support, correct, gold_nil)
    assert v2.calibration == tuple(result["calibration"]) and v2.threshold == result["threshold"]
    assert 0 < result["f1"] <= 1
    no_nil = ThresholdNIL(0.5, (1.0, 0.0), nil_score_from="probability")
    cut = no_nil.fit(support, correct, [False] * 100)["threshold"]
    # 100 dev mentions cannot certify 2% at 95% confidence: no right link may reach the cut,
    # so it is raised from 0.5 just above the highest right link's nil score
    right_scores = [no_nil.decide(s, True)[1] for s in support[:50]]
    assert cut > max(right_scores) > 0.5 and cut < 1.0
    assert no_nil.get_params()["calibration"] == list(no_nil.calibration)
    no_nil.set_params(threshold=float("inf"))
    assert no_nil.threshold is None


def test_a_stale_calibration_is_forgotten_and_saved_so():
    """Training changes the encoder a v2 stage was calibrated for: it forgets
    (no probability, NIL only without candidates) and `set_params` restores
    that state from what was saved; v1 keeps the threshold a user set."""
    v2 = ThresholdNIL(0.1931, (13.2, -10.6), nil_score_from="probability")
    assert v2.decide(0.8, True)[0] is True  # p = sigmoid(-0.04): the untrained rule throws it
    assert v2.forget_calibration() and not v2.forget_calibration()
    nil, score, prob = v2.decide(0.8, True)
    assert nil is False and prob is None and score == pytest.approx(0.2)
    assert v2.decide(0.8, False)[0] is True  # no candidate: still NIL
    saved = v2.get_params()
    again = ThresholdNIL(0.1931, (13.2, -10.6), nil_score_from="probability")
    again.set_params(**saved)
    assert again.calibration is None and again.threshold is None
    v1 = ThresholdNIL(0.3, None, nil_score_from="similarity")
    assert not v1.forget_calibration() and v1.threshold == 0.3


def test_a_fit_that_finds_no_safe_threshold_never_answers_nil_by_score():
    """Dev's NIL mentions score as its right links do: every threshold that finds
    one throws right links away, so none is used (and the result is JSON)."""
    import srsly

    support = [0.6] * 5
    correct = [False, False, True, True, True]
    gold_nil = [True, True, False, False, False]
    v2 = ThresholdNIL(0.5, (1.0, 0.0), nil_score_from="probability")
    result = v2.fit(support, correct, gold_nil)
    assert v2.threshold is None and result["threshold"] is None
    assert v2.decide(0.6, True)[0] is False
    srsly.json_dumps(result)

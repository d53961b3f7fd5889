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


def test_thresholds_that_throw_right_links_to_nil_are_left_out():
    """NIL F1 is best at 0.55 (every NIL found, but 2 of the 10 linkable
    mentions' right links thrown away): with at most 2% of them thrown (none
    here) the threshold stays above every right link's score."""
    from spacy_bioel.nil.threshold import right_as_nil_at

    scores = [0.9, 0.6, 0.55] + [0.8, 0.7] + [0.3] * 8
    gold = [True] * 3 + [False] * 10
    right = [False] * 3 + [True] * 10
    free = calibrate_nil_threshold(scores, gold, max_right_as_nil=1.0, confidence=None)
    assert free["threshold"] == pytest.approx((0.55 + 0.3) / 2) and free["f1"] == pytest.approx(0.75)
    held = calibrate_nil_threshold(scores, gold, right)
    assert held["threshold"] == pytest.approx(0.85) and held["f1"] == pytest.approx(0.5)
    assert held["right_as_nil"] == 0.0
    assert right_as_nil_at(held["threshold"], np.array(scores), np.array(right), np.array(gold)) == 0.0
    assert right_as_nil_at(free["threshold"], np.array(scores), np.array(right), np.array(gold)) == 0.2
    # 20% of dev's right links allowed (the point estimate): the F1-best threshold again;
    # 20% at 95% confidence: 10 linkable mentions cannot certify it, none may be thrown
    assert calibrate_nil_threshold(scores, gold, right, max_right_as_nil=0.2, confidence=None)[
        "threshold"] == pytest.approx(free["threshold"])
    assert calibrate_nil_threshold(scores, gold, right, max_right_as_nil=0.2)["threshold"] == \
        pytest.approx(held["threshold"])
    # the NIL mentions all below the right links: no threshold helps, never NIL by score
    assert calibrate_nil_threshold([0.1, 0.9], [True, False], [False, True])["threshold"] == float("inf")


def test_conservative_threshold_without_gold_nil():
    from spacy_bioel.nil.threshold import conservative_threshold

    right = [True] * 100
    scores = np.linspace(0.0, 0.99, 100)  # right links up to nil_score 0.99
    cut = conservative_threshold(scores, right, floor=0.5)
    assert np.sum(scores >= cut) <= 2 and cut > 0.96  # at most 2% of them reach it
    assert conservative_threshold(np.linspace(0.0, 0.4, 100), right, floor=0.5) == 0.5
    wrong_high = np.r_[np.linspace(0.0, 0.4, 90), np.linspace(0.6, 0.9, 10)]
    assert conservative_threshold(wrong_high, [True] * 90 + [False] * 10, floor=0.5) == 0.5


def test_a_conservative_threshold_survives_being_saved_rounded():
    """The threshold lies halfway to the next observed score, not one ulp above
    the highest right link it keeps: written to 10 decimals, as the linker's cfg
    is saved, it still answers NIL for no more right links than it did on dev
    (AskAPatient: 0.5473817951 saved under a kept link's 0.54738179513)."""
    import srsly

    from spacy_bioel.nil.threshold import conservative_threshold

    kept = 0.5473817951326105
    scores = np.r_[[0.9, 0.8, 0.5591553134407781, kept, 0.5028], np.linspace(0.3, 0.0, 95)]
    right = np.ones(len(scores), dtype=bool)
    right[2] = False  # 100 mentions allow 2 right links at or above it: kept is the third
    cut = conservative_threshold(scores, right, floor=0.5, confidence=None)
    assert kept < cut < 0.5591553134407781
    saved = srsly.json_loads(srsly.json_dumps({"threshold": cut}))["threshold"]
    assert np.sum((scores >= saved) & right) == np.sum((scores >= cut) & right) <= 2


def test_the_right_links_a_threshold_may_throw_are_bounded_at_95_percent_confidence():
    """The count is the largest k whose one-sided Clopper-Pearson upper bound
    on the rate stays within 2%: P(X <= k | n, 0.02) <= 0.05 < P(X <= k + 1 | n, 0.02)
    (AskAPatient dev, 845 mentions: 10, where 2% of them is 16)."""
    from spacy_bioel.nil.threshold import allowed_right_as_nil, binomial_cdf

    assert allowed_right_as_nil(845) == 10 and allowed_right_as_nil(845, confidence=None) == 16
    for n in (149, 787, 960, 4228, 20000):
        k = allowed_right_as_nil(n)
        assert binomial_cdf(k, n, 0.02) <= 0.05 < binomial_cdf(k + 1, n, 0.02)
        assert k < allowed_right_as_nil(n, confidence=None)
    assert allowed_right_as_nil(148) == 0 and allowed_right_as_nil(0) == 0  # nothing certified
    assert binomial_cdf(0, 148, 0.02) > 0.05 >= binomial_cdf(0, 149, 0.02)
    assert binomial_cdf(3, 10, 0.5) == pytest.approx(176 / 1024)  # (1 + 10 + 45 + 120) / 2^10


def test_a_threshold_fitted_on_dev_keeps_a_margin_for_the_test_set():
    """On 1,000 dev mentions, all right, the exact 2% rule throws 20 of them to
    NIL; the 95% bound throws 12, so the same rule on a fresh sample from the
    same scores exceeds 2% far less often (seeded draws, the guarantee in counts)."""
    from spacy_bioel.nil.threshold import conservative_threshold

    rng = np.random.default_rng(0)
    dev = rng.uniform(0.0, 1.0, 1000)
    right = np.ones(1000, dtype=bool)
    point = conservative_threshold(dev, right, floor=0.5, confidence=None)
    bounded = conservative_threshold(dev, right, floor=0.5)
    assert np.sum(dev >= point) == 20 and np.sum(dev >= bounded) == 12
    over = {name: np.mean([np.mean(rng.uniform(0.0, 1.0, 1000) >= cut) > 0.02 for _ in range(400)])
            for name, cut in (("point", point), ("bounded", bounded))}
    assert over["bounded"] <= 0.05 < 0.3 < over["point"]

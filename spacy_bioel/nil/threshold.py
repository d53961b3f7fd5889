"""NIL detection by a score threshold chosen on dev to maximise NIL F1, among
the thresholds that throw at most 2% of the right links to NIL: not 2% of dev's
own right links, which a test set then exceeds about half the time, but so few
that a one-sided 95% upper confidence bound on the rate stays within 2%.

References:
    Wiatrak et al., Proxy-based Zero-Shot Entity Linking by Effective Candidate
    Retrieval (Sec. 5, NIL detection with a threshold tuned on the dev set).
    Clopper & Pearson 1934, The use of confidence or fiducial limits
    illustrated in the case of the binomial (the exact upper bound).

A mention is NIL when its NIL score (e.g. 1 - the final top probability or
similarity) is at least the threshold, or when it has no candidate at all.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np


def nil_f1_at(threshold: float, nil_scores: np.ndarray, gold_nil: np.ndarray) -> Dict[str, float]:
    """Precision / recall / F1 of 'NIL iff score >= threshold'."""
    predicted = nil_scores >= threshold
    tp = float(np.sum(predicted & gold_nil))
    precision = tp / predicted.sum() if predicted.any() else 0.0
    recall = tp / gold_nil.sum() if gold_nil.any() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"threshold": float(threshold), "precision": precision, "recall": recall, "f1": f1}


MAX_RIGHT_AS_NIL = 0.02  # right links a NIL threshold may throw away (share of linkable mentions)
RIGHT_AS_NIL_CONFIDENCE = 0.95  # ... with this confidence on new data, not only on dev


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed exactly in log space."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return min(1.0, sum(_binomial_terms(k, n, p)))


def _binomial_terms(k: int, n: int, p: float) -> List[float]:
    """P(X = i) for i = 0..k, X ~ Binomial(n, p), 0 < p < 1, from log-gamma."""
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n = math.lgamma(n + 1)
    return [math.exp(log_n - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)
            for i in range(k + 1)]


def allowed_right_as_nil(n: int, max_rate: float = MAX_RIGHT_AS_NIL,
                         confidence: Optional[float] = RIGHT_AS_NIL_CONFIDENCE) -> int:
    """How many right links (top candidate right) among `n` linkable dev mentions
    a NIL threshold may answer NIL for. With `confidence`: the largest count k
    whose one-sided Clopper-Pearson upper bound on the rate k / n is at most
    `max_rate`, i.e.
    P(X <= k | n, max_rate) <= 1 - confidence (a dev set smaller than that bound
    can certify, 149 mentions at 2% and 95%, may throw none). With None: the point
    estimate, floor(max_rate * n), which a test set exceeds about half the time.

    RETURNS (int): the count, >= 0.
    """
    if n <= 0:
        return 0
    if confidence is None:
        return int(math.floor(max_rate * n + 1e-9))
    if max_rate <= 0.0 or max_rate >= 1.0:  # P(X <= k) is 1 for every k, or 0 below n
        return 0 if max_rate <= 0.0 else n - 1
    # the count lies at or below the point estimate: the CDF up to it, summed once
    cdf = np.cumsum(_binomial_terms(min(n, int(math.floor(max_rate * n))), n, max_rate))
    return max(int(np.sum(cdf <= 1.0 - confidence)) - 1, 0)


def right_as_nil_at(threshold: float, nil_scores: np.ndarray, right: np.ndarray,
                    gold_nil: np.ndarray) -> float:
    """The share of linkable mentions whose top candidate is right but whose
    score reaches `threshold` (a right link answered NIL)."""
    linkable = int((~gold_nil).sum())
    return float(np.sum((nil_scores >= threshold) & right & ~gold_nil)) / linkable if linkable else 0.0


def calibrate_nil_threshold(nil_scores: Sequence[float], gold_nil: Sequence[bool],
                            right: Optional[Sequence[bool]] = None,
                            max_right_as_nil: float = MAX_RIGHT_AS_NIL,
                            confidence: Optional[float] = RIGHT_AS_NIL_CONFIDENCE
                            ) -> Dict[str, float]:
    """The threshold that maximises NIL F1 over the observed scores (ties: the
    highest, i.e. the fewest NIL answers), placed halfway to the next lower
    observed score: every value in that gap gives the same dev F1, and the
    middle keeps the decisions when the same mentions are re-encoded with
    float noise (other batches). Without gold NIL the threshold is +inf.

    right: per mention, whether its top candidate is a gold id; given, only
        thresholds that answer NIL for at most `allowed_right_as_nil(linkable,
        max_right_as_nil, confidence)` of them count (a user reads `kb_id_`: a
        right link thrown to NIL is lost), +inf when none does.
    RETURNS (Dict[str, float]): threshold, precision, recall, f1 and
        right_as_nil on the given data.
    """
    scores = np.asarray(nil_scores, dtype=np.float64)
    gold = np.asarray(gold_nil, dtype=bool)
    correct = np.zeros(len(scores), dtype=bool) if right is None else np.asarray(right, dtype=bool)
    never = {"threshold": float("inf"), "precision": 0.0, "recall": 0.0, "f1": 0.0,
             "right_as_nil": 0.0}
    if not gold.any():
        return never
    linkable = int((~gold).sum())
    allowed = allowed_right_as_nil(linkable, max_right_as_nil, confidence)
    thrown_if_cut = correct & ~gold  # right links a threshold at or below their score throws
    best, below = None, None
    observed = sorted(set(scores.tolist()), reverse=True)
    for position, threshold in enumerate(observed):
        thrown = int(np.sum(thrown_if_cut & (scores >= threshold)))
        if thrown > allowed:
            break  # lower thresholds answer NIL for more mentions: more right links thrown
        result = dict(nil_f1_at(threshold, scores, gold),
                      right_as_nil=thrown / linkable if linkable else 0.0)
        if best is None or result["f1"] > best["f1"]:
            best = result
            below = observed[position + 1] if position + 1 < len(observed) else None
    if best is None or best["f1"] == 0.0:
        return never
    cut = (best["threshold"] + below) / 2 if below is not None else \
        max(0.0, best["threshold"] - 1e-6)  # nil_score and its thresholds lie in [0, 1]
    best["threshold"] = cut
    return best  # type: ignore[return-value]


def conservative_threshold(nil_scores: Sequence[float], right: Sequence[bool], floor: float,
                           max_right_as_nil: float = MAX_RIGHT_AS_NIL,
                           confidence: Optional[float] = RIGHT_AS_NIL_CONFIDENCE) -> float:
    """Without gold NIL: `floor` (e.g. 0.5, NIL when the top candidate is more
    likely wrong than right), raised until at most `allowed_right_as_nil(n,
    max_right_as_nil, confidence)` of the n mentions have a right top candidate
    and a score at or above it. The raised
    threshold lies halfway between the highest right link it must keep and the
    next observed score above that: every value in the gap gives dev the same
    answers, and the middle keeps them when the threshold is saved rounded (the
    cfg's JSON keeps 10 decimals) or the scores move by float noise; one ulp
    above the kept link, a saved AskAPatient threshold fell below it."""
    scores = np.asarray(nil_scores, dtype=np.float64)
    correct = np.asarray(right, dtype=bool)
    if not len(scores):
        return floor
    allowed = allowed_right_as_nil(len(scores), max_right_as_nil, confidence)
    right_scores = np.sort(scores[correct])[::-1]  # the right ones most likely to be thrown first
    if len(right_scores) <= allowed:
        return floor
    kept = right_scores[allowed]  # the (allowed + 1)-th highest score of a right link stays below
    if kept < floor:
        return floor
    above = scores[scores > kept]
    cut = (kept + above.min()) / 2 if len(above) else (kept + 1.0) / 2
    return float(min(1.0, max(cut, np.nextafter(kept, np.inf))))


__all__ = ["allowed_right_as_nil", "binomial_cdf", "calibrate_nil_threshold", "conservative_threshold",
           "nil_f1_at", "right_as_nil_at", "MAX_RIGHT_AS_NIL", "RIGHT_AS_NIL_CONFIDENCE"]

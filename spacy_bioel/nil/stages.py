"""The `nil` stage: a calibrated probability that a mention's top candidate is
its concept, and the NIL decision (the seam where a learned NIL model or a
reranker's decision goes later).

The evidence is the ranker's `support`: the best cosine similarity among the
candidates and (kNN on) the nearest training mention. It is mapped to a
probability by Platt scaling, p = sigmoid(a * support + b), fitted on a dev set
where the label is "the top candidate is a gold id" (a NIL mention's top
candidate is always wrong). The probability is monotone in the support, so
ranking mentions by it is ranking by similarity; what it adds is a scale a
user can read and threshold.

- `ThresholdNIL.v1`: nil_score = 1 - support (clipped to [0, 1]); NIL when
  nil_score >= threshold (None: never by score). The behaviour before stages.
- `CalibratedNIL.v1` (saved pipelines name it `ThresholdNIL.v2`): nil_score = 1 - p; NIL when nil_score >= threshold. The
  shipped a, b and threshold were fitted once for the untrained embedded
  MiniLM (docs/results/stages.md, "NIL out of the box"); `python -m spacy_bioel tune` refits them for a
  trained pipeline on its own dev set.

References:
    Platt 1999 (probabilistic outputs by a fitted sigmoid); Wiatrak et al.,
    Sec. 5 (a NIL threshold tuned on dev).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ..errors import BioELError, Errors
from ..validation import as_float
from .threshold import RIGHT_AS_NIL_CONFIDENCE, calibrate_nil_threshold, conservative_threshold

# Fitted for the untrained embedded MiniLM as it ships (the int8 tower, one scale per token row)
# on BC5CDR-NIL dev (`python -m bench project nil-default`; docs/results/stages.md, "NIL out of the box"):
# the calibration (a, b) and the threshold on nil_score = 1 - p with the best dev NIL F1 among
# those whose right links answered NIL stay within 2% at 95% confidence (NIL when p < 0.202,
# i.e. a best cosine below 0.696).
DEFAULT_CALIBRATION = (13.1062, -10.4985)
DEFAULT_THRESHOLD = 0.7976


def sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value)) if value >= 0 else math.exp(value) / (1.0 + math.exp(value))


def fit_platt(support: Sequence[float], correct: Sequence[bool]) -> Tuple[float, float]:
    """(a, b) of p = sigmoid(a * support + b) by logistic regression (Platt's
    smoothed targets keep a separable dev set from sending a to infinity)."""
    x = np.asarray(support, dtype=np.float64)
    y = np.asarray(correct, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    target = np.where(y, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    a, b = 1.0, 0.0
    for _ in range(100):  # Newton steps on the cross-entropy (2 parameters)
        p = 1.0 / (1.0 + np.exp(-(a * x + b)))
        w = np.maximum(p * (1 - p), 1e-12)
        grad = np.array([np.sum((p - target) * x), np.sum(p - target)])
        hess = np.array([[np.sum(w * x * x), np.sum(w * x)], [np.sum(w * x), np.sum(w)]])
        step = np.linalg.solve(hess + 1e-9 * np.eye(2), grad)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-9:
            break
    return float(a), float(b)


class ThresholdNIL:
    """threshold (Optional[float]): NIL when nil_score >= threshold (None: never).
    calibration (Optional[Sequence[float]]): (a, b) of the Platt sigmoid.
    nil_score_from (str): 'similarity' (v1) or 'probability' (v2)."""

    def __init__(self, threshold: Optional[float], calibration: Optional[Sequence[float]] = None,
                 nil_score_from: str = "similarity") -> None:
        self.threshold: Optional[float] = None
        self.calibration: Optional[Tuple[float, float]] = None
        self.nil_score_from = nil_score_from
        self.set_params(threshold=threshold, calibration=calibration)

    def get_params(self) -> Dict[str, Any]:
        return {"threshold": self.threshold,
                "calibration": list(self.calibration) if self.calibration else None}

    def set_params(self, **params: Any) -> None:
        """threshold: None or inf (never NIL by score: NIL only without candidates) or a
        number in [0, 1], the range of nil_score (above 1 would silently never be reached);
        calibration: [a, b], two finite numbers (E175 otherwise), or None (uncalibrated)."""
        if "threshold" in params:
            value = params["threshold"]
            if value is None or (isinstance(value, float) and math.isinf(value)):
                self.threshold = None
            else:
                self.threshold = as_float("nil.threshold", value, 0, 1)
        value = params.get("calibration")
        if "calibration" in params and value is None:  # uncalibrated (`forget_calibration`, saved so)
            self.calibration = None
        elif value is not None:
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
                raise BioELError(Errors.E175.format(name="nil.calibration", value=repr(value)[:80],
                                                    expected="a list [a, b] of two numbers"))
            self.calibration = (as_float("nil.calibration[0]", value[0]),
                                as_float("nil.calibration[1]", value[1]))

    def probability(self, support: float) -> Optional[float]:
        """RETURNS (Optional[float]): P(the top candidate is right), None uncalibrated."""
        if self.calibration is None:
            return None
        a, b = self.calibration
        return sigmoid(a * support + b)

    def decide(self, support: float, has_candidates: bool) -> Tuple[bool, float, Optional[float]]:
        """RETURNS (Tuple[bool, float, Optional[float]]): (is_nil, nil_score in [0, 1],
            calibrated probability)."""
        probability = self.probability(support)
        if self.nil_score_from == "probability" and probability is not None:
            nil_score = 1.0 - probability
        else:
            nil_score = min(1.0, max(0.0, 1.0 - support))
        nil = not has_candidates or (self.threshold is not None and nil_score >= self.threshold)
        return nil, nil_score, probability

    def fit(self, support: Sequence[float], correct: Sequence[bool], gold_nil: Sequence[bool],
            confidence: Optional[float] = RIGHT_AS_NIL_CONFIDENCE) -> Dict[str, Any]:
        """Refit on dev: the calibration always; the threshold for NIL F1 where dev
        has gold NIL, else (v2) the probability 0.5 (NIL when the top candidate is
        more likely wrong than right); either way no lower than what keeps the
        share of right links answered NIL within 2% (`threshold.MAX_RIGHT_AS_NIL`)
        at `confidence` (one-sided, Clopper-Pearson; None: 2% of dev's own, which
        a test set exceeds about half the time; `threshold.allowed_right_as_nil`).
        RETURNS (dict): what was fitted and its dev scores."""
        self.calibration = fit_platt(support, correct)
        nil_scores = [self.decide(s, True)[1] for s in support]
        result: Dict[str, Any] = {"calibration": list(self.calibration), "confidence": confidence}
        if any(gold_nil):
            result.update(calibrate_nil_threshold(nil_scores, gold_nil, right=correct,
                                                  confidence=confidence))
            self.set_params(threshold=result["threshold"])
            result["threshold"] = self.threshold  # None: never by score (JSON has no infinity)
        elif self.nil_score_from == "probability":
            self.threshold = result["threshold"] = conservative_threshold(
                nil_scores, correct, 0.5, confidence=confidence)
        return result

    def forget_calibration(self) -> bool:
        """Training changed the encoder this stage was calibrated for: no
        probability and NIL only without candidates until `tune` fits it again on
        dev (a stale calibration throws right links to NIL). Only for the
        calibrated (v2) stage. RETURNS (bool): whether anything was forgotten."""
        if self.nil_score_from != "probability" or (self.calibration is None and self.threshold is None):
            return False
        self.calibration, self.threshold = None, None
        return True


__all__ = ["ThresholdNIL", "fit_platt", "sigmoid", "DEFAULT_CALIBRATION", "DEFAULT_THRESHOLD"]

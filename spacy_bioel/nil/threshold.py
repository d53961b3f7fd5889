"""NIL detection by a score threshold chosen on dev to maximise NIL F1.

References:
    Wiatrak et al., Proxy-based Zero-Shot Entity Linking by Effective Candidate
    Retrieval (Sec. 5, NIL detection with a threshold tuned on the dev set).

A mention is NIL when its NIL score (e.g. 1 - the final top probability or
similarity) is at least the threshold, or when it has no candidate at all.
"""
from __future__ import annotations

from typing import Dict, Sequence

import numpy as np


def nil_f1_at(threshold: float, nil_scores: np.ndarray, gold_nil: np.ndarray) -> Dict[str, float]:
    """Precision / recall / F1 of 'NIL iff score >= threshold'."""
    predicted = nil_scores >= threshold
    tp = float(np.sum(predicted & gold_nil))
    precision = tp / predicted.sum() if predicted.any() else 0.0
    recall = tp / gold_nil.sum() if gold_nil.any() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"threshold": float(threshold), "precision": precision, "recall": recall, "f1": f1}


def calibrate_nil_threshold(nil_scores: Sequence[float], gold_nil: Sequence[bool]
                            ) -> Dict[str, float]:
    """The threshold that maximises NIL F1 over the observed scores (ties: the
    highest, i.e. the fewest NIL answers), placed halfway to the next lower
    observed score: every value in that gap gives the same dev F1, and the
    middle keeps the decisions when the same mentions are re-encoded with
    float noise (other batches). Without gold NIL the threshold is +inf.

    RETURNS (Dict[str, float]): threshold, precision, recall, f1 on the given data.
    """
    scores = np.asarray(nil_scores, dtype=np.float64)
    gold = np.asarray(gold_nil, dtype=bool)
    if not gold.any():
        return {"threshold": float("inf"), "precision": 0.0, "recall": 0.0, "f1": 0.0}
    best, below = None, None
    observed = sorted(set(scores.tolist()), reverse=True)
    for position, threshold in enumerate(observed):
        result = nil_f1_at(threshold, scores, gold)
        if best is None or result["f1"] > best["f1"]:
            best = result
            below = observed[position + 1] if position + 1 < len(observed) else None
    best["threshold"] = (best["threshold"] + below) / 2 if below is not None else \
        max(0.0, best["threshold"] - 1e-6)  # nil_score and its thresholds lie in [0, 1]
    return best  # type: ignore[return-value]


__all__ = ["calibrate_nil_threshold", "nil_f1_at"]

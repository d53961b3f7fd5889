"""How the reranker turns cross-encoder scores into a decision: interpolation
with the linker's score, the NIL option and threshold, and the margin gate
that leaves confident linker decisions alone. Pure numpy, shared by the
component and dev tuning (`tuning`), so both decide alike."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

PROBABILITY_FLOOR = 1e-6


def linker_margin(candidates: Sequence[Tuple[str, float]]) -> float:
    """The upstream score of the best candidate minus the second's (inf with one)."""
    if len(candidates) < 2:
        return math.inf
    return float(candidates[0][1]) - float(candidates[1][1])


def log_upstream(candidates: Sequence[Tuple[str, float]]) -> np.ndarray:
    """log of each candidate's upstream score, floored at PROBABILITY_FLOOR."""
    return np.log(np.array([max(float(p), PROBABILITY_FLOOR) for _, p in candidates],
                           dtype=np.float64))


def gated(candidates: Sequence[Tuple[str, float]], gate: Optional[float]) -> bool:
    """True when the linker is sure enough to skip reranking: a margin of at
    least `gate` (None: rerank every entity with candidates)."""
    return gate is not None and linker_margin(candidates) >= gate


def decide(candidates: Sequence[Tuple[str, float]], scores: np.ndarray,
           nil_logit: Optional[float], linker_weight: float, nil_threshold: Optional[float],
           linker_nil: Optional[Tuple[bool, float]] = None) -> Dict[str, Any]:
    """One entity's decision.

    candidates: the upstream (concept id, score) pairs that were scored, best first.
    scores: (len(candidates),) cross-encoder logits.
    nil_logit: the logit of the learned "no concept" option, or None.
    linker_weight: w in z_c = s_c + w * log p_c (p_c the upstream score, floored;
        0 uses the cross-encoder alone).
    nil_threshold: NIL when 1 - P(best concept) exceeds it (None: no threshold).
    linker_nil: the upstream (is_nil, nil_score), kept when neither a learned
        option nor a threshold decides NIL.
    RETURNS: {'candidates': [(id, P)] best first, 'is_nil', 'nil_score',
        'probability'} with P the softmax over the candidates (and NIL option).
    """
    z = np.asarray(scores, dtype=np.float64)
    if linker_weight:
        z = z + linker_weight * log_upstream(candidates)
    logits = z if nil_logit is None else np.append(z, nil_logit)
    shifted = np.exp(logits - logits.max())
    probabilities = shifted / shifted.sum()
    order = np.argsort(-z, kind="stable")
    ranked = [(candidates[i][0], float(probabilities[i])) for i in order]
    best = float(ranked[0][1])
    nil_score = 1.0 - best
    if nil_logit is None and nil_threshold is None and linker_nil is not None:
        is_nil, nil_score = bool(linker_nil[0]), float(linker_nil[1] if linker_nil[1] is not None
                                                         else nil_score)
    else:
        learned = nil_logit is not None and nil_logit > float(z.max())
        is_nil = bool(learned or (nil_threshold is not None and nil_score > nil_threshold))
    return {"candidates": ranked, "is_nil": is_nil, "nil_score": nil_score, "probability": best}


def no_candidates() -> Dict[str, Any]:
    """The decision for an entity without candidates: NIL."""
    return {"candidates": [], "is_nil": True, "nil_score": 1.0, "probability": None}


__all__ = ["linker_margin", "log_upstream", "gated", "decide", "no_candidates", "PROBABILITY_FLOOR"]

"""One entity's decision from its retrieved alternatives (the mention, and the
long form of a defined abbreviation): rank each with the ranker stage, keep the
better-supported one, apply the NIL stage. An entity without alternatives (no
letter or digit, see `shortcuts`) is NIL.

Supports that tie (both alternatives exact KB names) differ by float noise that
depends on the batch composition, so a later alternative (the long form) wins
unless it has less support by more than SUPPORT_TIE: the author's own
expansion is the more specific of the two (untrained default, NCBI dev Acc@1
82.34 vs 81.83 the other way round).
"""
from __future__ import annotations

from array import array
from typing import Any, Dict, List, Tuple

SUPPORT_TIE = 1e-5
Retrieved = List[Dict[str, Any]]  # per mention alternative: candidates, neighbours
NIL_WITHOUT_ALNUM = {"candidates": [], "nil_score": 1.0, "is_nil": True, "probability": 0.0,
                     "support": -1.0, "similarity": None, "reason": "nil_without_alnum"}


def prefers_later(later_support: float, best_support: float) -> bool:
    """Whether a later alternative replaces the best so far (see SUPPORT_TIE)."""
    return later_support >= best_support - SUPPORT_TIE


def decide_entity(alternatives: Retrieved, ranker, nil, top_k: int) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): candidates [(id, p)], nil_score, is_nil,
    probability, support, similarity, and `reason` when no encoder was involved."""
    if not alternatives:
        return dict(NIL_WITHOUT_ALNUM)
    rankings = [ranker.rank(a["candidates"], a["neighbours"], top_k) for a in alternatives]
    best = rankings[0]
    for ranking in rankings[1:]:
        best = ranking if prefers_later(ranking.support, best.support) else best
    is_nil, nil_score, probability = nil.decide(best.support, bool(best.candidates))
    result = {"candidates": best.candidates, "nil_score": nil_score, "is_nil": is_nil,
              "probability": probability, "support": best.support,
              "similarity": best.similarity}
    if alternatives[0].get("shortcut"):
        result["reason"] = "exact_shortcut"
    return result


def pack_decision(decision: Dict[str, Any]) -> Tuple[Any, ...]:
    """A decision as a cache holds it: its candidate ids in a tuple, their
    probabilities in one float64 array and its other fields in a tuple (a third
    of the memory of the dict of (id, p) tuples). Exact:
    `unpack_decision` gives back an equal dict."""
    candidates = decision["candidates"]
    if all(len(c) == 2 for c in candidates):
        ids = tuple(c[0] for c in candidates)
        probs = array("d", [c[1] for c in candidates])
    else:  # not (id, p) pairs: kept as they are
        ids, probs = tuple(candidates), None
    rest = tuple((k, v) for k, v in decision.items() if k != "candidates")
    return ids, probs, rest


def unpack_decision(packed: Tuple[Any, ...]) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): a fresh decision dict from `pack_decision`."""
    ids, probs, rest = packed
    candidates = list(zip(ids, probs)) if probs is not None else list(ids)
    return {"candidates": candidates, **dict(rest)}


__all__ = ["decide_entity", "prefers_later", "pack_decision", "unpack_decision",
           "SUPPORT_TIE", "NIL_WITHOUT_ALNUM", "Retrieved"]

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
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Tuple

from ..kb.knowledge_base import NIL
from ..kb.xrefs import id_of

SUPPORT_TIE = 1e-5
Retrieved = List[Dict[str, Any]]  # per mention alternative: candidates, neighbours


@dataclass
class Decision:
    """One entity's link, as the linker writes it on its span and caches it.

    candidates: [(concept id, probability)] best first (`top_k` of them).
    nil_score: the NIL stage's score (NIL when it reaches the threshold).
    is_nil: whether the entity links to no concept.
    probability: the probability that the top candidate is right.
    support: the best cosine among the candidates and the nearest training mention.
    similarity: the cosine of the top candidate's best name (None without one).
    reason: why no encoder was needed ('exact_shortcut', 'nil_without_alnum'), or a rule
        that made it NIL after ranking ('nil_undefined_abbreviation'), or None.
    """

    candidates: List[Tuple[str, float]]
    nil_score: float
    is_nil: bool
    probability: float
    support: float
    similarity: Optional[float]
    reason: Optional[str] = None

    @property
    def concept_id(self) -> Optional[str]:
        """The linked concept's id (None for NIL)."""
        return None if self.is_nil or not self.candidates else self.candidates[0][0]

    def annotate(self, ent, kb, cfg: Dict[str, Any]) -> bool:
        """Write this decision on its span `ent`: `ent.kb_id_` (NIL, the concept's id,
        or with the cfg's `id_space` its id there, NIL when it has none) and the
        extensions the cfg names (candidates, NIL flag and score, similarity,
        probability, the linked concept's cross-references, read in `kb`).
        RETURNS (bool): whether `id_space` had no id for the linked concept."""
        concept_id, id_space, xrefs_attr = self.concept_id, cfg.get("id_space"), cfg.get("xrefs_attr")
        primary = kb.resolve(concept_id) if concept_id is not None and kb is not None and (
            id_space or xrefs_attr) else None  # None: not needed, or a concept the KB does not know
        xrefs = kb.field_values("xrefs", (primary,))[0] if primary is not None else None
        unmapped = False
        if concept_id is None:
            ent.kb_id_ = NIL
        elif id_space and primary is not None:
            in_space = id_of(primary, xrefs, id_space)
            ent.kb_id_, unmapped = (in_space, False) if in_space is not None else (NIL, True)
        else:
            ent.kb_id_ = concept_id
        extensions = ent._  # one accessor for the six values (each `ent._` builds one)
        if xrefs_attr:
            extensions.set(xrefs_attr, list(xrefs) if xrefs is not None else [])
        for attr, value in (("kb_ents_attr", self.candidates), ("is_nil_attr", self.is_nil),
                            ("nil_score_attr", self.nil_score), ("similarity_attr", self.similarity),
                            ("probability_attr", self.probability)):
            extensions.set(cfg[attr], value)
        return unmapped


def nil_without_alnum() -> Decision:
    """The decision of a mention with no letter or digit: NIL, unencoded."""
    return Decision([], 1.0, True, 0.0, -1.0, None, "nil_without_alnum")


def nil_undefined_abbreviation(decision: Decision) -> Decision:
    """`decision` made NIL: an abbreviation its document does not define and no
    KB name names, linked without training mentions (`nil_undefined_abbreviations`).
    Its candidates and probability stay as ranked (what the encoder proposed)."""
    if decision.is_nil:
        return replace(decision, reason="nil_undefined_abbreviation")
    return replace(decision, is_nil=True, nil_score=1.0, reason="nil_undefined_abbreviation")


def prefers_later(later_support: float, best_support: float) -> bool:
    """Whether a later alternative replaces the best so far (see SUPPORT_TIE)."""
    return later_support >= best_support - SUPPORT_TIE


def decide_entity(alternatives: Retrieved, ranker, nil, top_k: int) -> Decision:
    """RETURNS (Decision): the best-supported alternative ranked, then the NIL stage."""
    if not alternatives:
        return nil_without_alnum()
    rankings = [ranker.rank(a["candidates"], a["neighbours"], top_k) for a in alternatives]
    best = rankings[0]
    for ranking in rankings[1:]:
        best = ranking if prefers_later(ranking.support, best.support) else best
    is_nil, nil_score, probability = nil.decide(best.support, bool(best.candidates))
    return Decision(best.candidates, nil_score, is_nil, probability, best.support, best.similarity,
                    "exact_shortcut" if alternatives[0].get("shortcut") else None)


def pack_decision(decision: Decision) -> Tuple[Any, ...]:
    """A decision as a cache holds it: its candidate ids in a tuple, their
    probabilities in one float64 array and its other fields in a tuple (a third
    of the memory of a list of (id, p) tuples). Exact: `unpack_decision` gives
    back an equal decision."""
    candidates = decision.candidates
    if all(len(c) == 2 for c in candidates):
        ids = tuple(c[0] for c in candidates)
        probs = array("d", [c[1] for c in candidates])
    else:  # not (id, p) pairs: kept as they are
        ids, probs = tuple(candidates), None
    return ids, probs, replace(decision, candidates=[])


def unpack_decision(packed: Tuple[Any, ...]) -> Decision:
    """RETURNS (Decision): a fresh decision from `pack_decision`."""
    ids, probs, rest = packed
    candidates = list(zip(ids, probs)) if probs is not None else list(ids)
    return replace(rest, candidates=candidates)


__all__ = ["Decision", "decide_entity", "nil_undefined_abbreviation", "nil_without_alnum", "prefers_later", "pack_decision",
           "unpack_decision", "SUPPORT_TIE", "Retrieved"]

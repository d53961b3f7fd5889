"""Tune a reranker on dev exactly as it predicts (`decisions.decide` and
`decisions.gated`): the weight of the linker's score, the margin gate, the
NIL threshold and, when a "no concept" option was learned, whether it decides
NIL (`use_nil_option`; else the threshold or the linker's own NIL decision).
The upstream components run once and every entity's pairs are scored once;
the grid replays the decisions from those scores.

Without a gold NIL mention on dev, NIL recall cannot be measured, and
accuracy alone would choose whichever NIL rule predicts NIL least; so the NIL
rule is then not tuned: no threshold, and a learned option is left unused
(the linker's own NIL decisions stand; W008). Thresholds the caller passes are
still tried, with a warning (W009).

Selection: the highest dev accuracy (a gold NIL mention is right when it is
predicted NIL, a linkable one when its top concept is a gold id and it is not
NIL); among settings within `tolerance` of it, the one that reranks the fewest
entities (the cheapest), then the smallest linker weight. Gate 0.0 reranks
nothing (a top-2 margin is never negative), so a reranker that loses on dev is
tuned off rather than kept at its least harmful setting.
"""
import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc, Span

from ..errors import Warnings, warn
from ..kb.ids import split_gold_ids
from ..kb.knowledge_base import NIL
from ..training.readers import gold_spans_doc
from .component import NIL_MARKERS, BioELReranker
from .decisions import decide, gated

logger = logging.getLogger(__name__)
DEFAULT_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)
DEFAULT_GATES = (None, 0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)  # 0.0: rerank nothing
DEFAULT_THRESHOLDS = tuple(round(v, 2) for v in np.arange(0.1, 0.95, 0.05))


@dataclass
class DevEntity:
    """One gold dev mention with its upstream result and cross-encoder scores."""
    candidates: List[Tuple[str, float]]
    scores: np.ndarray
    nil_logit: Optional[float]
    linker_id: str
    linker_nil: Optional[Tuple[bool, float]]
    gold: Set[str]
    gold_nil: bool


def collect(nlp: Language, reranker: BioELReranker, docs: Sequence[Doc]) -> List[DevEntity]:
    """Run the components before the reranker on `docs`' gold spans and score
    every entity's pairs once (gate off)."""
    inputs = [gold_spans_doc(nlp, doc) for doc in docs]
    before = nlp.pipe_names[:nlp.pipe_names.index(reranker.name)]
    with nlp.select_pipes(enable=before):
        predicted = list(nlp.pipe(inputs))
    entities: List[DevEntity] = []
    scored: List[Tuple[Span, List[Tuple[str, float]]]] = []
    for gold_doc, doc in zip(docs, predicted):
        for gold, ent in zip(gold_doc.ents, doc.ents):
            if not gold.kb_id_:
                continue
            candidates = reranker.read_candidates(ent) or []
            gold_ids = {reranker.kb.resolve(i) or i for i in split_gold_ids(gold.kb_id_)}
            entities.append(DevEntity(candidates, np.zeros(0), None, ent.kb_id_,
                                      reranker.linker_nil(ent), gold_ids,
                                      gold.kb_id_ in NIL_MARKERS))
            if candidates:
                scored.append((ent, candidates))
    with_candidates = [entity for entity in entities if entity.candidates]
    for entity, (scores, nil_logit) in zip(with_candidates, reranker.score_entities(scored)):
        entity.scores, entity.nil_logit = scores, nil_logit
    return entities


def _predicted(entity: DevEntity, weight: float, gate: Optional[float],
               threshold: Optional[float], use_option: bool = True) -> Tuple[str, bool]:
    """(predicted id or NIL, whether the entity was reranked)."""
    if not entity.candidates:
        return NIL, False
    if gated(entity.candidates, gate):
        return entity.linker_id or entity.candidates[0][0], False
    result = decide(entity.candidates, entity.scores, entity.nil_logit if use_option else None,
                    weight, threshold, entity.linker_nil)
    return (NIL if result["is_nil"] else result["candidates"][0][0]), True


def accuracy(entities: Sequence[DevEntity], weight: float, gate: Optional[float],
             threshold: Optional[float], resolve, use_option: bool = True) -> Dict[str, float]:
    """Dev accuracy and the share of entities reranked under one setting."""
    right = reranked = 0
    for entity in entities:
        predicted, was_reranked = _predicted(entity, weight, gate, threshold, use_option)
        reranked += was_reranked
        if entity.gold_nil:
            right += predicted == NIL
        else:
            right += predicted != NIL and (resolve(predicted) or predicted) in entity.gold
    n = max(len(entities), 1)
    return {"accuracy": right / n, "reranked": reranked / n}


def tune_reranker(nlp: Language, reranker: BioELReranker, docs: Sequence[Doc],
                  weights: Sequence[float] = DEFAULT_WEIGHTS,
                  gates: Sequence[Optional[float]] = DEFAULT_GATES,
                  thresholds: Optional[Sequence[Optional[float]]] = None,
                  tolerance: float = 0.001) -> Dict[str, Any]:
    """Grid-search linker_weight x gate x nil_threshold (x use_nil_option when a
    "no concept" option was learned) on dev and set the best on the reranker.
    Thresholds default to none, plus a grid when dev has gold NIL mentions
    (without one: the module docstring, W008 / W009).
    RETURNS: {'grid': rows, 'best': row, 'best_ungated': row, 'linker_accuracy':
    the upstream decisions' accuracy (nothing reranked), 'n': mentions}."""
    entities = collect(nlp, reranker, docs)
    has_nil = any(e.gold_nil for e in entities)
    learned = any(e.nil_logit is not None for e in entities)
    if thresholds is None:
        thresholds = (None, *DEFAULT_THRESHOLDS) if has_nil else (None,)
    if not has_nil:  # the NIL rule cannot be tuned (module docstring)
        if learned:
            warn(Warnings.W008.format(n=len(entities), name=reranker.name))
        if any(t is not None for t in thresholds):  # only thresholds the caller passed
            warn(Warnings.W009.format(n=len(entities), name=reranker.name,
                                      thresholds=", ".join(str(t) for t in thresholds)))
    # without a learned option, "used" changes nothing
    options = (True, False) if learned and has_nil else (not learned,)
    rows = []
    for weight in weights:
        for gate in gates:
            for threshold in thresholds:
                for use_option in options:
                    row = accuracy(entities, weight, gate, threshold, reranker.kb.resolve,
                                   use_option)
                    rows.append({"linker_weight": weight, "gate": gate,
                                 "nil_threshold": threshold, "use_nil_option": use_option, **row})
    top = max(r["accuracy"] for r in rows) if rows else 0.0
    near = [r for r in rows if r["accuracy"] >= top - tolerance]
    best = min(near, key=lambda r: (r["reranked"], r["linker_weight"], -r["accuracy"],
                                    not r["use_nil_option"]))
    ungated = max((r for r in rows if r["gate"] is None), key=lambda r: r["accuracy"], default=None)
    for key in ("linker_weight", "gate", "nil_threshold", "use_nil_option"):
        reranker.set_option(key, best[key])
    linker = accuracy(entities, 0.0, -np.inf, None, reranker.kb.resolve)["accuracy"]  # all gated
    logger.info("%s tuned on %d dev mentions: %s (the linker's own decisions: %.4f)",
                reranker.name, len(entities), best, linker)
    return {"grid": rows, "best": best, "best_ungated": ungated, "linker_accuracy": linker,
            "n": len(entities)}


__all__ = ["DevEntity", "collect", "accuracy", "tune_reranker"]

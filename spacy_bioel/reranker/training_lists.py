"""The reranker's training lists: for each gold mention of a batch, its
upstream candidates as (query, candidate text) pairs, the gold's position among
them and the linker's log score of each (the prior of `train_linker_weight`).

Only the first `train_top_k` candidates are read (each pair costs a forward and
backward pass); when retrieval missed the gold, it replaces the last of them
with the lowest upstream score kept; a NIL mention's target is the "no
concept" option. Mentions skipped are counted in the reranker's `counts`.

With `train_candidates = "seen"` the list keeps only candidates whose concept
has a training mention (read from the top_k upstream candidates). The gold of a
training mention is always such a concept, so with every candidate trained on
"all" the cross-encoder can learn that a concept seen in training tends to be
the gold, which ranks seen concepts above the right unseen one at test time.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Protocol, Sequence, Set, Tuple

import numpy as np
from spacy.training import Example

from ..errors import BioELError, Errors
from ..kb.ids import split_gold_ids
from ..kb.knowledge_base import NIL, KnowledgeBase
from .decisions import log_upstream



class Lister(Protocol):
    """What building training lists reads of a reranker (its public attributes
    and methods; `component.BioELReranker` has them and is not imported here)."""

    name: str
    cfg: Dict[str, Any]
    kb: Optional[KnowledgeBase]
    seen: Optional[set]  # concepts with training mentions ('seen' candidates)
    counts: Counter
    train_k: int

    def read_candidates(self, ent: Any) -> Optional[List[Tuple[str, float]]]: ...

    def pairs_for(self, ent: Any, candidates: List[Tuple[str, float]]) -> List[Tuple[str, str]]: ...


NIL_MARKERS = (NIL, "-1")
Pair = Tuple[str, str]
Candidates = List[Tuple[str, float]]


class TrainingLists(NamedTuple):
    """A batch's training pairs. groups: per mention, (start, length, gold
    position); priors: per pair, the log upstream score (0 for the "no concept"
    option); unannotated: gold mentions that had no candidate list at all."""

    pairs: List[Pair]
    groups: List[Tuple[int, int, int]]
    priors: np.ndarray
    unannotated: int


def build_training_lists(reranker: Lister, examples: Sequence[Example]) -> TrainingLists:
    """The pairs, groups and priors of every trainable gold mention of `examples`."""
    pairs: List[Pair] = []
    groups: List[Tuple[int, int, int]] = []
    priors: List[np.ndarray] = []
    unannotated = 0
    extra = int(reranker.cfg["nil_option"])
    seen_only = reranker.cfg["train_candidates"] == "seen"
    if seen_only and reranker.seen is None:
        raise BioELError(Errors.E193.format(name=reranker.name))
    for eg in examples:
        predicted = {(e.start_char, e.end_char): e for e in eg.predicted.ents}
        for gold in eg.reference.ents:
            ent = predicted.get((gold.start_char, gold.end_char))
            if ent is None or not gold.kb_id_:
                continue
            candidates = reranker.read_candidates(ent)
            if candidates is None:
                unannotated += 1
                continue
            if seen_only:
                kept = [c for c in candidates if reranker.kb.resolve(c[0]) in reranker.seen]
                reranker.counts["train_unseen_dropped"] += len(candidates) - len(kept)
                candidates = kept
            target = gold_target(reranker, gold.kb_id_, candidates[:reranker.train_k])
            if target is None:
                continue
            candidates, position = target
            if len(candidates) + extra < 2:
                reranker.counts["train_single_option"] += 1
                continue
            groups.append((len(pairs), len(candidates) + extra, position))
            pairs.extend(reranker.pairs_for(ent, candidates))
            priors.append(np.append(log_upstream(candidates), np.zeros(extra)))
    return TrainingLists(pairs, groups, np.concatenate(priors) if priors else np.zeros(0),
                         unannotated)


def seen_concepts(kb: KnowledgeBase, examples: Iterable[Example]) -> Set[str]:
    """The KB concepts (resolved ids) that a gold mention of `examples` names."""
    return {p for eg in examples for ent in eg.reference.ents if ent.kb_id_ not in NIL_MARKERS
            for p in (kb.resolve(i) for i in split_gold_ids(ent.kb_id_)) if p}


def gold_target(reranker: Lister, gold_field: str, candidates: Candidates
                ) -> Optional[Tuple[Candidates, int]]:
    """(candidates with the gold in them, gold position), or None to skip the mention."""
    if gold_field in NIL_MARKERS:
        if not reranker.cfg["nil_option"]:
            reranker.counts["train_nil_skipped"] += 1
            return None
        return candidates, len(candidates)
    kb = reranker.kb
    gold_ids = [p for p in (kb.resolve(i) for i in split_gold_ids(gold_field)) if p]
    if not gold_ids:
        reranker.counts["train_gold_not_in_kb"] += 1
        return None
    for position, (cid, _) in enumerate(candidates):
        if kb.resolve(cid) in gold_ids:
            return candidates, position
    reranker.counts["train_gold_inserted"] += 1
    kept = candidates[:-1] if len(candidates) >= reranker.train_k else candidates
    lowest = min((score for _, score in kept), default=0.0)
    return kept + [(gold_ids[0], lowest)], len(kept)


__all__ = ["TrainingLists", "build_training_lists", "gold_target", "seen_concepts",
           "NIL_MARKERS"]

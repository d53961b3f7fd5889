"""Synonym sets and synonym pairs of knowledge bases: the training data of
self-alignment pre-training (no torch here).

References:
    Liu et al., SapBERT (NAACL 2021), Sec. 2.1-2.2: every pair of names of one
    concept (a UMLS CUI there) is a positive pair; a training batch holds
    pairs of many concepts, so that the other concepts' names are negatives.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..kb.knowledge_base import KnowledgeBase
from ..kb.normalize import normalize_text


@dataclass(frozen=True)
class SynonymSet:
    """The distinct names of one concept (canonical name first).

    concept_id (str): The concept's primary id.
    names (Tuple[str, ...]): Names that differ after `normalize_text`.
    """

    concept_id: str
    names: Tuple[str, ...]


@dataclass(frozen=True)
class SynonymPair:
    """Two names of one concept; `label` numbers the concept within a run."""

    first: str
    second: str
    label: int


def collect_synonym_sets(kbs: Sequence[KnowledgeBase]) -> List[SynonymSet]:
    """The names of every concept of `kbs`, merged by concept id: MEDIC and the
    CTD vocabulary share MeSH/OMIM ids, and a concept in both gets the union of
    its names (first spelling of each normalised name kept, KB order).

    RETURNS (List[SynonymSet]): One set per concept id, first-seen order.
    """
    merged: Dict[str, Dict[str, str]] = {}
    for kb in kbs:
        for concept_id, name in kb.names():
            merged.setdefault(concept_id, {}).setdefault(normalize_text(name), name)
    return [SynonymSet(concept_id, tuple(names.values())) for concept_id, names in merged.items()]


@dataclass
class LeakageReport:
    """What the leakage rules removed, and why (printed by `pretrain-encoder`)."""

    excluded_concepts: int = 0
    excluded_concept_names: int = 0
    excluded_concept_pairs: int = 0
    query_names: int = 0
    query_pairs: int = 0
    unknown_excluded_ids: int = 0
    examples: Dict[str, List[str]] = field(default_factory=dict)

    @property
    def pairs_dropped(self) -> int:
        return self.excluded_concept_pairs + self.query_pairs

    def to_dict(self) -> Dict[str, object]:
        return {**asdict(self), "pairs_dropped": self.pairs_dropped}

    def lines(self) -> List[str]:
        """Human-readable summary, one reason per line."""
        return [
            f"excluded concepts: {self.excluded_concepts} ({self.excluded_concept_names} names, "
            f"{self.excluded_concept_pairs} synonym pairs dropped)",
            f"names equal to a query string (normalised): {self.query_names} "
            f"({self.query_pairs} further synonym pairs dropped)",
            f"excluded ids that no KB has: {self.unknown_excluded_ids}",
            f"synonym pairs dropped in all: {self.pairs_dropped}",
        ]


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def apply_leakage_rules(sets: Sequence[SynonymSet], exclude_concepts: Iterable[str] = (),
                        exclude_strings: Iterable[str] = (),
                        kbs: Sequence[KnowledgeBase] = ()) -> Tuple[List[SynonymSet], LeakageReport]:
    """Remove the concepts a zero-shot evaluation holds out, and every name
    equal (after `normalize_text`) to one of its query strings, so that no
    synonym pair of a test concept, and no pair one of whose strings is a test
    query, is trained on. Pair counts are over all synonym pairs (before the
    per-concept caps of `make_pairs`).

    sets (Sequence[SynonymSet]): From `collect_synonym_sets`.
    exclude_concepts (Iterable[str]): Concept ids; alternate ids and prefixed
        forms resolve through `kbs` (e.g. 'MESH:D003920').
    exclude_strings (Iterable[str]): Query strings (any spelling).
    kbs (Sequence[KnowledgeBase]): The KBs the sets came from (id resolution).
    RETURNS (Tuple[List[SynonymSet], LeakageReport]): The kept sets (a set left
        with one name is kept: it can still be a negative) and the report.
    """
    report = LeakageReport()
    excluded: Set[str] = set()
    for concept_id in exclude_concepts:
        resolved = {kb.resolve(concept_id) for kb in kbs} - {None}
        excluded.update(resolved or {concept_id.strip()})
    strings = {normalize_text(s) for s in exclude_strings} - {""}
    known = {s.concept_id for s in sets}
    report.unknown_excluded_ids = len(excluded - known)
    kept: List[SynonymSet] = []
    concept_examples: List[str] = []
    query_examples: List[str] = []
    for synonym_set in sets:
        n = len(synonym_set.names)
        if synonym_set.concept_id in excluded:
            report.excluded_concepts += 1
            report.excluded_concept_names += n
            report.excluded_concept_pairs += _pairs(n)
            if len(concept_examples) < 5:
                concept_examples.append(synonym_set.concept_id)
            continue
        names = tuple(name for name in synonym_set.names if normalize_text(name) not in strings)
        if len(names) < n:
            report.query_names += n - len(names)
            report.query_pairs += _pairs(n) - _pairs(len(names))
            if len(query_examples) < 5:
                query_examples.extend(name for name in synonym_set.names if name not in names)
        if names:
            kept.append(SynonymSet(synonym_set.concept_id, names))
    report.examples = {"excluded_concepts": concept_examples, "query_strings": query_examples[:5]}
    return kept, report


def make_pairs(sets: Sequence[SynonymSet], *, max_names_per_concept: Optional[int] = None,
               max_pairs_per_concept: Optional[int] = 50, seed: int = 0) -> List[SynonymPair]:
    """Every pair of names of each concept (SapBERT Sec. 2.1), within caps.

    max_names_per_concept (Optional[int]): Keep the canonical name and a random
        sample of the others (None: all names).
    max_pairs_per_concept (Optional[int]): Sample this many of a concept's
        pairs (SapBERT: 50); None keeps all.
    seed (int): Seed of the samples.
    RETURNS (List[SynonymPair]): In concept order; a concept with one name
        gives no pair. `label` is the concept's position in `sets`.
    """
    rng = random.Random(seed)
    pairs: List[SynonymPair] = []
    for label, synonym_set in enumerate(sets):
        names = list(synonym_set.names)
        if max_names_per_concept is not None and len(names) > max_names_per_concept:
            names = names[:1] + rng.sample(names[1:], max(0, max_names_per_concept - 1))
        candidates = list(combinations(names, 2))
        if max_pairs_per_concept is not None and len(candidates) > max_pairs_per_concept:
            candidates = rng.sample(candidates, max_pairs_per_concept)
        pairs.extend(SynonymPair(first, second, label) for first, second in candidates)
    return pairs


def pair_batches(pairs: Sequence[SynonymPair], batch_size: int, seed: int,
                 epoch: int) -> List[List[int]]:
    """Indices of `pairs` shuffled for `epoch` (reproducible from seed and
    epoch alone, so a resumed run sees the same order) and cut into batches."""
    order = list(range(len(pairs)))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


__all__ = ["SynonymSet", "SynonymPair", "LeakageReport", "collect_synonym_sets",
           "apply_leakage_rules", "make_pairs", "pair_batches"]

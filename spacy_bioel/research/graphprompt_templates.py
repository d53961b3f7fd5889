"""GraphPrompt's graph templates, built from a KB's typed relations.

References:
    Xu et al., GraphPrompt (paper 003), Sec. 5 and Appendix A.1 (Table 3):
    T1_r(v_i, v_j) = "v_i r' v_j" for an edge (v_i, r, v_j), v_i or v_j masked
        (eq. 7: y = BioBERT(T1_r([MASK], v_j)));
    T2_r(v_i, v_j, v_k) = "v_i r' v_j, which is a kind of v_k" for a 2-hop path
        (v_i, r, v_j, is_a, v_k), two of the three masked: ([MASK], v_j, [MASK])
        and (v_i, [MASK], [MASK]);
    the unmasked entity is its name or, at random, one of its training synonyms.

Only the KB (names, relations) and the training mentions given to
`GraphTemplates` are read, so no test synonym can enter a template.

Example:
    >>> templates = GraphTemplates(kb, concept_ids, train_pairs, mask="[MASK]")
    >>> texts, targets = templates.first_order(rng, 32)
"""
from __future__ import annotations

import logging
from collections import Counter, defaultdict
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..kb.knowledge_base import KnowledgeBase

logger = logging.getLogger(__name__)

# Table 3 of the paper; any other relation reads as its name with spaces
RELATION_PHRASES = {
    "identical": "is identical with", "is_a": "is a kind of", "capable_of": "is capable of",
    "negatively_regulates": "negatively regulates", "positively_regulates": "positively regulates",
    "regulates": "regulates", "part_of": "is part of", "has_part": "has",
    "develops_from": "develops from", "synapsed_to": "is synapsed to",
    "synapsed_by": "is synapsed by", "continuous_with": "is continuous with",
}
Edge = Tuple[int, str, int]  # (v_i, relation, v_j) as concept indices
Template = Tuple[str, List[int]]  # text, the concept index of each [MASK] in reading order


def relation_phrase(relation: str) -> str:
    """r' of a relation name (Table 3, else underscores read as spaces)."""
    return RELATION_PHRASES.get(relation, relation.replace("_", " "))


class GraphTemplates:
    """First- and second-order templates of a KB graph over the linker's concepts.

    kb (KnowledgeBase): Names and typed relations (`Concept.relations`).
    concept_ids (Sequence[str]): The linker's concepts, in index order.
    train_pairs (Sequence[Tuple[str, str]]): (training synonym, concept id)
        pairs: the surface forms an unmasked entity may take.
    mask (str): The tokenizer's mask token.
    synonym_rate (float): Chance that an unmasked entity reads as one of its
        training synonyms (when it has any) rather than its name.
    max_words (int): Names are cut to this many words (and longer synonyms
        are not used), so that a template's [MASK] tokens survive the encoder's
        truncation.

    `report` counts edges by relation, 2-hop paths, edges whose end is not a
    linker concept or is the concept itself (skipped) and synonyms too long.
    """

    def __init__(self, kb: KnowledgeBase, concept_ids: Sequence[str],
                 train_pairs: Sequence[Tuple[str, str]], mask: str,
                 synonym_rate: float = 0.5, max_words: int = 12) -> None:
        self.mask, self.synonym_rate, self.max_words = mask, synonym_rate, max_words
        index = {cid: i for i, cid in enumerate(concept_ids)}
        self.names = [self._cut(kb[cid].canonical_name) for cid in concept_ids]
        self.synonyms: Dict[int, List[str]] = defaultdict(list)
        self.report: Counter = Counter()
        for text, cid in train_pairs:
            if cid not in index:
                continue
            if len(text.split()) > max_words:  # never cut: a cut synonym could be another string
                self.report["synonyms_too_long"] += 1
                continue
            self.synonyms[index[cid]].append(text)
        edges: List[Edge] = []
        for cid, i in index.items():
            for relation, target in kb[cid].relations:
                j = index.get(kb.resolve(target) or target)
                if j is None or j == i:
                    self.report["edges_skipped"] += 1
                    continue
                edges.append((i, relation, j))
                self.report[f"edges_{relation}"] += 1
        self.edges = edges
        parents: Dict[int, List[int]] = defaultdict(list)
        for i, relation, j in edges:
            if relation == "is_a":
                parents[i].append(j)
        self.paths = [(i, r, j, k) for i, r, j in edges for k in parents.get(j, ()) if k != i]
        self.report["paths_2hop"] = len(self.paths)
        logger.info("GraphPrompt templates: %d edges, %d 2-hop paths (%s)", len(edges),
                    len(self.paths), dict(self.report))

    def _cut(self, text: str) -> str:
        return " ".join(text.split()[:self.max_words])

    def surface(self, concept: int, rng: np.random.Generator) -> str:
        """The concept's name or, with `synonym_rate`, a training synonym."""
        options = self.synonyms.get(concept)
        if options and rng.random() < self.synonym_rate:
            return options[int(rng.integers(len(options)))]
        return self.names[concept]

    def first_order(self, rng: np.random.Generator, n: int) -> List[Template]:
        """n T1 templates of random edges, v_i or v_j masked (eq. 7)."""
        out: List[Template] = []
        if not self.edges or n <= 0:
            return out
        for e in rng.integers(len(self.edges), size=n):
            i, relation, j = self.edges[int(e)]
            phrase = relation_phrase(relation)
            if rng.random() < 0.5:
                out.append((f"{self.mask} {phrase} {self.surface(j, rng)}", [i]))
            else:
                out.append((f"{self.surface(i, rng)} {phrase} {self.mask}", [j]))
        return out

    def second_order(self, rng: np.random.Generator, n: int) -> List[Template]:
        """n T2 templates of random 2-hop paths, masked ([MASK], v_j, [MASK]) or
        (v_i, [MASK], [MASK]) at random (the L_2 term's two kinds)."""
        out: List[Template] = []
        if not self.paths or n <= 0:
            return out
        for p in rng.integers(len(self.paths), size=n):
            i, relation, j, k = self.paths[int(p)]
            phrase, mask = relation_phrase(relation), self.mask
            if rng.random() < 0.5:
                out.append((f"{mask} {phrase} {self.surface(j, rng)}, which is a kind of {mask}",
                            [i, k]))
            else:
                out.append((f"{self.surface(i, rng)} {phrase} {mask}, which is a kind of {mask}",
                            [j, k]))
        return out


__all__ = ["GraphTemplates", "RELATION_PHRASES", "relation_phrase"]

"""Candidate generators of the `bioel_linker` (the `candidates` stage).

Each generator is built once per KB (`initialize(kb, index)`) and maps a batch
of mentions to up to k candidates per mention, as (concept index, retrieval
score, similarity) triples, best first:
- concept index: a row of the linker's `NameTable.concept_ids`;
- retrieval score: what the generator ranks by (the ranker's eq. 4 softmax
  takes it as s(m, e));
- similarity: the bi-encoder cosine between the mention and the concept's best
  name (the NIL stage and `Span._.kb_similarity` read it).

`masks` (from the semantic-type filter) restrict each mention to the allowed
concepts before anything is ranked.

References:
    kNN-BioEL Sec. 3.1 (dense FAISS retrieval over all names); the
    prototype-triplet paper, Sec. 3.1 (sparse char + word TF-IDF retrieval
    merged with the dense candidates); Cormack et al. 2009 (reciprocal rank
    fusion, RRF(d) = sum_r 1 / (k0 + rank_r(d))).

Example:
    >>> generator = HybridCandidates(sparse_weight=0.2)
    >>> generator.initialize(kb, index)
    >>> generator(["colon cancer"], mention_embeddings, k=64)
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import BioELError, Errors
from ..kb.knowledge_base import KnowledgeBase
from ..kb.normalize import normalize_text
from ..validation import as_bool, as_float, as_int
from .name_index import NameIndex
from .names import KeyLookup

Candidate = Tuple[int, float, float]  # (concept index, retrieval score, similarity)
Masks = Optional[Sequence[Optional[np.ndarray]]]
FUSIONS = ("weighted", "rrf")


class DenseCandidates:
    """The top-k concepts by bi-encoder similarity (the dense store of `NameIndex`)."""

    name = "dense"

    def initialize(self, kb: KnowledgeBase, index: NameIndex) -> None:
        """Nothing to build: the name index is the dense store."""

    @staticmethod
    def text_key(text: str) -> str:
        """What of a mention's text the generator reads beside its embedding: nothing
        (a decision cache keys entities by this and what the encoder reads)."""
        return ""

    def __call__(self, mentions: Sequence[str], queries: np.ndarray, index: NameIndex, k: int,
                 masks: Masks = None) -> List[List[Candidate]]:
        return [[(c, s, s) for c, _, s in row]
                for row in index.search(queries, k, masks, names=False)]


class SparseCandidates:
    """The top-k concepts by char 2-5 + word TF-IDF (exact, chunked; see
    `TfidfCandidates`); each candidate's similarity comes from the name index."""

    name = "sparse"
    text_key = staticmethod(normalize_text)  # what of the text TF-IDF reads (see DenseCandidates)

    def __init__(self, ngram_range: Sequence[int] = (2, 5), analyzer: str = "char_wb",
                 word_weight: float = 0.25, batch_size: int = 256) -> None:
        self.settings = {"ngram_range": tuple(ngram_range), "analyzer": analyzer,
                         "word_weight": word_weight, "batch_size": batch_size}
        self.tfidf = None

    def initialize(self, kb: KnowledgeBase, index: NameIndex) -> None:
        from .sparse import TfidfCandidates

        self.tfidf = TfidfCandidates(kb, table=index.names, progress=False, **self.settings)

    def search(self, mentions: Sequence[str], k: int, masks: Masks = None
               ) -> List[List[Tuple[int, float]]]:
        if self.tfidf is None:
            raise BioELError(Errors.E168)
        return self.tfidf.search(list(mentions), k, masks)

    def __call__(self, mentions: Sequence[str], queries: np.ndarray, index: NameIndex, k: int,
                 masks: Masks = None) -> List[List[Candidate]]:
        rows = self.search(mentions, k, masks)
        sims = index.similarities(queries, [[c for c, _ in row] for row in rows])
        return [[(c, s, sim) for (c, s), sim in zip(row, row_sims)]
                for row, row_sims in zip(rows, sims)]


class ExactCandidates:
    """Concepts having a name equal to the mention after normalisation (score 1.0,
    KB order); no match, no candidate."""

    name = "exact"
    text_key = staticmethod(normalize_text)  # what of the text the lookup reads

    def __init__(self) -> None:
        self.lookup = KeyLookup([], [])

    def initialize(self, kb: KnowledgeBase, index: NameIndex) -> None:
        self.lookup = KeyLookup(index.names.key_ids, index.names.owners)

    def __call__(self, mentions: Sequence[str], queries: np.ndarray, index: NameIndex, k: int,
                 masks: Masks = None) -> List[List[Candidate]]:
        rows = []
        for i, mention in enumerate(mentions):
            mask = masks[i] if masks is not None else None
            rows.append([c for c in self.lookup.get(normalize_text(mention), [])
                         if mask is None or mask[c]][:k])
        sims = index.similarities(queries, rows)
        return [[(c, 1.0, sim) for c, sim in zip(row, row_sims)] for row, row_sims in zip(rows, sims)]


class ExactShortcut:
    """The `shortcut` stage: a mention whose normalised text is a KB name of
    exactly one concept (that the type filter allows for its label) links to
    it without the encoder, the candidate search or the kNN datastore. The
    linker skips it for abbreviations defined in their document (their long
    form decides). With `defer_to_training`, a name that a training mention (the
    kNN datastore's) links to another concept is not shortcut: the corpus'
    convention differs from the KB's there, and the trained model decides. Its
    accuracy effect is measured in docs/results/speed.md; the linker counts its uses
    (`counts['exact_shortcut']`).

    With `min_training_count` > 0 it also remembers the training mentions: a
    mention whose normalised text was annotated at least that many times in
    training, always with the same concept, links to that concept (the corpus'
    own convention for that string, as BioSyn adds training mentions to its
    dictionary; docs/results/accuracy.md, "Training mentions as dictionary
    entries"). A text annotated with two concepts is left to the model.

    defer_to_training (bool): Leave names the training mentions contradict to the model.
    min_training_count (int): Unanimous training annotations a text needs to be
        linked from memory; 0 remembers nothing (v1).
    """

    name = "exact_shortcut"

    def __init__(self, defer_to_training: bool = True, min_training_count: int = 0) -> None:
        self.exact = ExactCandidates()
        self.defer_to_training = defer_to_training
        self.min_training_count = as_int("shortcut.min_training_count", min_training_count, 0)
        self.contradicted: set = set()  # normalised names the training mentions link elsewhere (deferred or not)
        self.remembered: Dict[str, int] = {}  # normalised training text -> its one concept
        self._concept_ids: Sequence[str] = []
        self._concept_index: Optional[Dict[str, int]] = None  # concept id -> index, built once a KB
        self._mentions: Sequence[Tuple[str, str]] = []

    def initialize(self, kb: KnowledgeBase, index: NameIndex) -> None:
        self.exact.initialize(kb, index)
        self._concept_ids = index.names.concept_ids
        self._concept_index = None
        self.contradicted = set()
        self.remembered = {}

    def learn(self, mentions: Sequence[Tuple[str, str]]) -> None:
        """Note the names that training (mention text, concept id) pairs link to
        another concept than the KB's only one, and (`min_training_count`) the
        texts they always link to one concept."""
        self._mentions = mentions
        contradicted = set()
        for text, concept_id in mentions:
            key = normalize_text(text)
            concepts = self.exact.lookup.get(key)
            if concepts and len(concepts) == 1 and self._concept_ids[concepts[0]] != concept_id:
                contradicted.add(key)
        self.contradicted = contradicted
        self.remembered = self._remember(mentions)

    def _remember(self, mentions: Sequence[Tuple[str, str]]) -> Dict[str, int]:
        if not self.min_training_count or not mentions:
            return {}
        seen: Dict[str, Dict[str, int]] = {}
        for text, concept_id in mentions:
            counts = seen.setdefault(normalize_text(text), {})
            counts[concept_id] = counts.get(concept_id, 0) + 1
        if self._concept_index is None:
            self._concept_index = {concept_id: i for i, concept_id in enumerate(self._concept_ids)}
        index_of = self._concept_index
        return {key: index_of[concept_id] for key, counts in seen.items() if len(counts) == 1
                for concept_id, count in counts.items()
                if count >= self.min_training_count and concept_id in index_of}

    def concept(self, text: str, label: str, type_filter=None) -> Optional[int]:
        """RETURNS (Optional[int]): the one concept `text` names, or None."""
        key = normalize_text(text)
        concept = self.remembered.get(key)
        if concept is None:
            concepts = self.exact.lookup.get(key)
            if not concepts or len(concepts) != 1 or (self.defer_to_training and key in self.contradicted):
                return None
            concept = concepts[0]
        mask = type_filter.masks([label])[0] if type_filter is not None else None
        return concept if mask is None or mask[concept] else None

    def get_params(self) -> Dict[str, Any]:
        return {"defer_to_training": self.defer_to_training,
                "min_training_count": self.min_training_count}

    def set_params(self, defer_to_training: Optional[bool] = None,
                   min_training_count: Optional[int] = None) -> None:
        if defer_to_training is not None:
            self.defer_to_training = as_bool("shortcut.defer_to_training", defer_to_training)
        if min_training_count is not None:  # the deference is read at lookup: no learning again
            self.min_training_count = as_int("shortcut.min_training_count", min_training_count, 0)
            self.remembered = self._remember(self._mentions)


class HybridCandidates:
    """Dense and sparse candidates merged (prototype-triplet paper Sec. 3.1).

    The union of the dense top-k and the sparse top-k is scored by
    'weighted' fusion, (1 - w) * cosine + w * TF-IDF (both in [0, 1] for
    normalised embeddings; each side is computed exactly for every member of
    the union), or by 'rrf', reciprocal rank fusion; the best k are kept.
    w = 0 ranks exactly like the dense generator; `tune` picks w on dev.

    fusion (str): 'weighted' or 'rrf'.
    sparse_weight (float): w of the weighted fusion.
    rrf_k (int): k0 of RRF.
    sparse: the TF-IDF settings (see `SparseCandidates`).
    """

    name = "hybrid"
    text_key = staticmethod(normalize_text)  # what of the text its TF-IDF side reads

    def __init__(self, fusion: str = "weighted", sparse_weight: float = 0.2, rrf_k: int = 60,
                 ngram_range: Sequence[int] = (2, 5), analyzer: str = "char_wb",
                 word_weight: float = 0.25, batch_size: int = 256) -> None:
        if fusion not in FUSIONS:
            raise BioELError(Errors.E169.format(fusion=fusion, weight=sparse_weight))
        self.fusion = fusion
        self.sparse_weight = as_float("candidates.sparse_weight", sparse_weight, 0, 1)
        self.rrf_k = rrf_k
        self.sparse = SparseCandidates(ngram_range, analyzer, word_weight, batch_size)

    def initialize(self, kb: KnowledgeBase, index: NameIndex) -> None:
        self.sparse.initialize(kb, index)

    def __call__(self, mentions: Sequence[str], queries: np.ndarray, index: NameIndex, k: int,
                 masks: Masks = None) -> List[List[Candidate]]:
        dense = index.search(queries, k, masks)
        sparse = self.sparse.search(mentions, k, masks)
        unions = [list(dict.fromkeys([c for c, _, _ in d] + [c for c, _ in s]))
                  for d, s in zip(dense, sparse)]
        dense_sims = [{c: s for c, _, s in row} for row in dense]
        sparse_scores = [dict(row) for row in sparse]
        # each side computed exactly for the union members the other side found
        missing = [[c for c in u if c not in d] for u, d in zip(unions, dense_sims)]
        for known, cs, sims in zip(dense_sims, missing, index.similarities(queries, missing)):
            known.update(zip(cs, sims))
        missing = [[c for c in u if c not in s] for u, s in zip(unions, sparse_scores)]
        for known, cs, sims in zip(sparse_scores, missing,
                                   self.sparse.tfidf.score_concepts(mentions, missing)):
            known.update(zip(cs, sims))
        out = []
        for union, dense_row, sparse_row, dense_sim, sparse_score in zip(
                unions, dense, sparse, dense_sims, sparse_scores):
            fused = self._fuse(union, dense_row, sparse_row, dense_sim, sparse_score)
            ranked = sorted(range(len(union)), key=lambda j: -fused[j])[:k]  # stable: dense first
            out.append([(union[j], fused[j], dense_sim[union[j]]) for j in ranked])
        return out

    def _fuse(self, union, dense_row, sparse_row, dense_sim, sparse_score) -> List[float]:
        if self.fusion == "weighted":
            w = self.sparse_weight
            return [(1.0 - w) * dense_sim[c] + w * sparse_score[c] for c in union]
        dense_rank = {c: r for r, (c, _, _) in enumerate(dense_row, start=1)}
        sparse_rank = {c: r for r, (c, _) in enumerate(sparse_row, start=1)}
        return [sum(1.0 / (self.rrf_k + ranks[c]) for ranks in (dense_rank, sparse_rank)
                    if c in ranks) for c in union]

    def get_params(self) -> Dict[str, float]:
        return {"sparse_weight": self.sparse_weight}

    def set_params(self, sparse_weight: Optional[float] = None) -> None:
        if sparse_weight is not None:
            self.sparse_weight = as_float("candidates.sparse_weight", sparse_weight, 0, 1)


__all__ = ["DenseCandidates", "SparseCandidates", "ExactCandidates", "ExactShortcut", "HybridCandidates",
           "Candidate", "FUSIONS"]

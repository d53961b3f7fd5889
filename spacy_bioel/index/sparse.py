"""Sparse TF-IDF candidate generation over concept names.

Two TF-IDF spaces, as in the sparse retriever of the prototype-based triplet
loss paper (Sec. 3.1, "Sparse representation"): character n-grams (default
2-5) and word unigrams (split on non-alphanumerics, English stop words
removed), both over lower-cased text. The paper merges the two candidate
lists; we merge them into one score, ``(1 - w) * cos_char + w * cos_word``,
so one ranking serves Acc@k. Search is exact (every name scored) and
max-aggregated per concept, with no min_df pruning. It never builds a dense
mentions x names matrix: mentions go in batches and names in column blocks
(`name_block`), each product stays sparse, and a concept's score is merged
across blocks (a concept in the global top k is in the top k of the block that
holds its best name, so merging per-block top-k lists is exact). Memory is
bounded by batch_size x name_block stored entries, whatever the KB's size.
"""
from __future__ import annotations

import logging
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import BioELError, Errors
from ..kb.knowledge_base import KnowledgeBase
from ..kb.normalize import normalize_text
from ..progress import progress_bar
from .names import NameTable

logger = logging.getLogger(__name__)
Candidates = List[Tuple[str, float]]


class TfidfCandidates:
    """Exact sparse TF-IDF search over every name of every concept.

    kb (KnowledgeBase): The concepts and their names.
    extra_names (Iterable[Tuple[str, str]]): (concept_id, name) pairs added to
        the dictionary (e.g. training mention strings).
    ngram_range (Tuple[int, int]): Character n-gram range (default (2, 5)).
    analyzer (str): 'char_wb' (n-grams inside word boundaries) or 'char'.
    word_weight (float): Weight w of the word-unigram similarity (0 disables it).
    batch_size (int): Mentions scored per sparse product.
    progress (bool): Progress bar when scoring many mentions.
    table (Optional[NameTable]): Share a linker's name table (concept indices
        then match its dense index); built from `kb` and `extra_names` when None.
    name_block (int): Names per column block of the sparse product.

    Example:
        >>> gen = TfidfCandidates(kb)
        >>> gen(["colorectal carcinoma"], k=3)[0][0]
        ('D1', 0.71...)
    """

    name = "tfidf"

    def __init__(self, kb: KnowledgeBase, extra_names: Iterable[Tuple[str, str]] = (), *,
                 ngram_range: Tuple[int, int] = (2, 5), analyzer: str = "char_wb",
                 word_weight: float = 0.25, batch_size: int = 256, progress: bool = True,
                 table: Optional[NameTable] = None, name_block: int = 100_000) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        lo, hi = (int(v) for v in ngram_range)
        if not 1 <= lo <= hi:
            raise BioELError(Errors.E103.format(value=ngram_range))
        self.table = table if table is not None else NameTable(kb, extra_names)
        if not len(self.table):
            raise BioELError(Errors.E105)
        self.word_weight = float(word_weight)
        self.batch_size = batch_size
        self.name_block = max(1, int(name_block))
        self.progress = progress
        texts = [normalize_text(n) for n in self.table.names]
        self.char_vectorizer = TfidfVectorizer(analyzer=analyzer, ngram_range=(lo, hi),
                                               lowercase=True, min_df=1, dtype=np.float32)
        self.char_matrix = self.char_vectorizer.fit_transform(texts).tocsr()  # (n_names, F)
        self.word_vectorizer = None
        if self.word_weight > 0:
            self.word_vectorizer = TfidfVectorizer(analyzer="word", token_pattern=r"[^\W_]+",
                                                   stop_words="english", lowercase=True,
                                                   min_df=1, dtype=np.float32)
            try:
                self.word_matrix = self.word_vectorizer.fit_transform(texts).tocsr()  # (n_names, W)
            except ValueError:  # every name is a stop word: no vocabulary
                self.word_vectorizer = None
        bounds = range(0, len(self.table), self.name_block)
        self._blocks = [(start, self.char_matrix[start:start + self.name_block].T.tocsr(),
                         self.word_matrix[start:start + self.name_block].T.tocsr()
                         if self.word_vectorizer is not None else None) for start in bounds]
        logger.info("TF-IDF index: %d names of %d concepts, %d char features",
                    len(self.table), len(self.table.concept_ids), self.char_matrix.shape[1])

    def _vectorize(self, texts: Sequence[str]):
        texts = [normalize_text(m) for m in texts]
        words = self.word_vectorizer.transform(texts) if self.word_vectorizer is not None else None
        return self.char_vectorizer.transform(texts), words

    def _combine(self, char, word):
        """(1 - w) * char + w * word, kept sparse."""
        return char if word is None else (1.0 - self.word_weight) * char + self.word_weight * word

    def search(self, mentions: Sequence[str], k: int,
               masks: Optional[Sequence[Optional[np.ndarray]]] = None
               ) -> List[List[Tuple[int, float]]]:
        """Top-k concepts per mention as (concept index, score > 0), best first;
        ties by KB order.

        masks: per mention, a (n_concepts,) bool mask of allowed concepts, or None.
        """
        if k < 1:
            raise BioELError(Errors.E104.format(k=k))
        out: List[List[Tuple[int, float]]] = []
        batches = range(0, len(mentions), self.batch_size)
        for start in progress_bar(batches, desc="TF-IDF search", unit=" batches",
                                  disable=not self.progress or len(batches) < 4):
            texts = mentions[start:start + self.batch_size]
            char, word = self._vectorize(texts)
            best: List[Dict[int, float]] = [{} for _ in texts]
            for offset, char_block, word_block in self._blocks:
                sims = self._combine(char @ char_block,
                                     word @ word_block if word is not None else None).tocsr()
                for row, merged in enumerate(best):
                    lo, hi = sims.indptr[row], sims.indptr[row + 1]
                    concepts, scores = self._per_concept(sims.indices[lo:hi] + offset,
                                                         sims.data[lo:hi])
                    mask = masks[start + row] if masks is not None else None
                    if mask is not None:
                        keep = mask[concepts]
                        concepts, scores = concepts[keep], scores[keep]
                    for i in np.lexsort((concepts, -scores))[:k]:
                        concept = int(concepts[i])
                        merged[concept] = max(merged.get(concept, 0.0), float(scores[i]))
            for merged in best:
                ranked = sorted(merged.items(), key=lambda item: (-item[1], item[0]))[:k]
                out.append([(c, s) for c, s in ranked if s > 0])
        return out

    def _per_concept(self, names: np.ndarray, scores: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Max score per concept of the scored names."""
        owners = self.table.owners[names]
        order = np.lexsort((-scores, owners))  # grouped by concept, best name first
        owners, scores = owners[order], scores[order].astype(np.float32)
        first = np.ones(len(owners), dtype=bool)
        first[1:] = owners[1:] != owners[:-1]
        return owners[first], scores[first]

    def score_concepts(self, mentions: Sequence[str], concepts: Sequence[Sequence[int]]
                       ) -> List[List[float]]:
        """The score of each listed concept (its best name) per mention, 0 when no
        n-gram is shared: the sparse side of a hybrid candidate list.

        concepts: per mention, concept indices. RETURNS: aligned with `concepts`.
        """
        char, word = self._vectorize(mentions)

        def scorer(i):
            def score_rows(rows):  # (n_rows,): a few names
                sims = self._combine(char[i] @ self.char_matrix[rows].T,
                                     word[i] @ self.word_matrix[rows].T if word is not None else None)
                return np.asarray(sims.todense(), dtype=np.float32)[0]
            return score_rows
        return [self.table.best_per_listed(row, scorer(i)) for i, row in enumerate(concepts)]

    def __call__(self, mentions: Sequence[str], k: int = 10) -> List[Candidates]:
        """Top-k (concept_id, score) per mention (the baseline generator's API)."""
        ids = self.table.concept_ids
        return [[(ids[c], s) for c, s in row] for row in self.search(mentions, k)]


__all__ = ["TfidfCandidates"]

"""Registered candidate generators (entry points in `spacy_misc`). Each returns a
builder ``(kb, extra_names) -> generator`` so the linker component and the
evaluation harness build them from the same config block."""
from __future__ import annotations

from typing import Callable, Iterable, List, Tuple

from spacy.util import registry

from ..kb.knowledge_base import KnowledgeBase

GeneratorBuilder = Callable[..., Callable]


@registry.misc("spacy-bioel.ExactMatchCandidates.v1")
def create_exact_match_candidates() -> GeneratorBuilder:
    """Exact normalised-name lookup (see `spacy_bioel.index.exact`)."""
    def build(kb: KnowledgeBase, extra_names: Iterable[Tuple[str, str]] = ()):
        from .exact import ExactMatchCandidates
        return ExactMatchCandidates(kb, extra_names)
    return build


@registry.misc("spacy-bioel.TfidfCandidates.v1")
def create_tfidf_candidates(ngram_range: List[int] = [2, 5], analyzer: str = "char_wb",
                            word_weight: float = 0.25, batch_size: int = 256) -> GeneratorBuilder:
    """Exact sparse TF-IDF over char n-grams + word unigrams (see `spacy_bioel.index.sparse`)."""
    def build(kb: KnowledgeBase, extra_names: Iterable[Tuple[str, str]] = ()):
        from .sparse import TfidfCandidates
        return TfidfCandidates(kb, extra_names, ngram_range=tuple(ngram_range),
                               analyzer=analyzer, word_weight=word_weight,
                               batch_size=batch_size)
    return build


BASELINES = {"exact": "spacy-bioel.ExactMatchCandidates.v1",
             "tfidf": "spacy-bioel.TfidfCandidates.v1"}

"""The ranker stage against the interpolation of kNN-BioEL eqs. 4-6."""
import pytest

from spacy_bioel.datastore.interpolation import interpolate, model_distribution
from spacy_bioel.datastore.ranker import KNNRanker

CANDIDATES = [("D1", 0.9, 0.9), ("D2", 0.85, 0.85), ("D3", 0.5, 0.5)]
NEIGHBOURS = [("D2", 0.97), ("D4", 0.95), ("D2", 0.9)]


def test_model_only_is_eq4_and_ignores_neighbours():
    ranking = KNNRanker(use_knn=False, beta1=0.05).rank(CANDIDATES, NEIGHBOURS, top_k=64)
    expected = model_distribution([(c, s) for c, s, _ in CANDIDATES], 0.05)
    assert ranking.candidates == [(c, pytest.approx(expected[c])) for c, _, _ in CANDIDATES]
    assert ranking.support == 0.9 and ranking.similarity == 0.9


def test_knn_is_eq6_on_the_first_k_neighbours():
    ranker = KNNRanker(use_knn=True, knn_k=2, knn_lambda=0.5, beta1=0.05, beta2=0.1)
    ranking = ranker.rank(CANDIDATES, NEIGHBOURS, top_k=3)
    expected = interpolate([(c, s) for c, s, _ in CANDIDATES], NEIGHBOURS[:2], 0.5, 0.05, 0.1)[:3]
    assert [c for c, _ in ranking.candidates] == [c for c, _ in expected]
    assert [p for _, p in ranking.candidates] == pytest.approx([p for _, p in expected])
    assert ranking.support == 0.97  # the nearest neighbour counts with kNN on
    assert all(0 <= p <= 1 for _, p in ranking.candidates)


def test_similarity_of_a_concept_found_by_the_datastore_alone():
    ranker = KNNRanker(use_knn=True, knn_k=2, knn_lambda=0.99, beta1=0.05, beta2=0.01)
    ranking = ranker.rank(CANDIDATES[2:], [("D4", 0.96), ("D4", 0.8)], top_k=3)
    assert ranking.candidates[0][0] == "D4" and ranking.similarity == 0.96
    assert KNNRanker().rank([], [], top_k=3).similarity is None


def test_params_round_trip():
    ranker = KNNRanker()
    ranker.set_params(knn_k=8, knn_lambda="0.3", use_knn=False, unknown=1)
    assert ranker.get_params() == {"use_knn": False, "knn_k": 8, "knn_lambda": 0.3,
                                   "beta1": 0.05, "beta2": 1.0}

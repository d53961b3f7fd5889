"""The synthetic UMLS-scale KB: exactly the names asked for, deterministic for
a seed, grown from the source names (qualified concepts, surface variants)."""
from spacy_bioel import Concept, KnowledgeBase
from bench.synthetic import QUALIFIERS, surface_variants, synthetic_kb


def sources():
    kb = KnowledgeBase(name="src")
    kb.add(Concept("D1", "colon cancer", ("colorectal tumor",), types=("disease",)))
    kb.add(Concept("D2", "asthma"))
    other = KnowledgeBase(name="other")
    other.add(Concept("D1", "heart attack"))  # the same id in another KB stays apart
    return [kb, other]


def test_exactly_the_names_asked_for_and_deterministic():
    kb = synthetic_kb(sources(), 40, seed=3, progress=False)
    assert kb.stats()["names"] == 40 == len(list(kb.names()))
    again = synthetic_kb(sources(), 40, seed=3, progress=False)
    assert list(kb.names()) == list(again.names())
    assert {"S0:D1", "S1:D1", "S0:D1#q1"} <= set(kb.concept_ids)
    assert kb["S0:D1"].types == ("disease",)
    assert kb["S0:D1#q1"].canonical_name == QUALIFIERS[0].format("colon cancer")


def test_variants_are_distinct_names_of_the_same_concept():
    import random

    from spacy_bioel.kb.normalize import normalize_text

    names = surface_variants(["colorectal tumor", "colon cancer"], random.Random(0), per_name=6)
    keys = [normalize_text(n) for n in names]
    assert names[:2] == ["colorectal tumor", "colon cancer"] and len(set(keys)) == len(keys)
    assert "colorectal tumour" in names and "cancer, colon" in names


def test_small_sources_stop_at_what_they_give():
    kb = synthetic_kb(sources(), 10 ** 6, progress=False)
    assert 0 < kb.stats()["names"] < 10 ** 6

from itertools import combinations

import pytest

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.pretraining import (apply_leakage_rules, collect_synonym_sets, make_pairs,
                                     pair_batches)


def kbs():
    medic = KnowledgeBase(name="medic", strip_prefixes=("MESH:",))
    medic.add(Concept("D1", "colorectal carcinoma", ("colon cancer", "Colon  Cancer", "CRC")))
    medic.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    medic.add(Concept("D3", "asthma"))
    ctd = KnowledgeBase(name="ctd", strip_prefixes=("MESH:",))
    ctd.add(Concept("D1", "colorectal cancer", ("colon cancer",)))
    ctd.add(Concept("D4", "type 2 diabetes", ("NIDDM", "diabetes mellitus type 2", "T2DM")))
    return [medic, ctd]


def test_sets_merge_by_concept_id_and_normalised_name():
    sets = {s.concept_id: s.names for s in collect_synonym_sets(kbs())}
    assert sets["D1"] == ("colorectal carcinoma", "colon cancer", "CRC", "colorectal cancer")
    assert sets["D3"] == ("asthma",)
    assert list(sets) == ["D1", "D2", "D3", "D4"]


def test_leakage_rules_drop_exactly_the_held_out_concepts_and_query_strings():
    sources = kbs()
    sets = collect_synonym_sets(sources)
    kept, report = apply_leakage_rules(sets, exclude_concepts=["MESH:D4", "X9"],
                                       exclude_strings=["Heart-Attack", "crc"], kbs=sources)
    kept = {s.concept_id: s.names for s in kept}
    assert "D4" not in kept  # resolved through the KB's prefix
    assert kept["D1"] == ("colorectal carcinoma", "colon cancer", "colorectal cancer")
    assert kept["D2"] == ("myocardial infarction",)  # kept as a negative, gives no pair
    assert kept["D3"] == ("asthma",)
    assert report.excluded_concepts == 1 and report.excluded_concept_names == 4
    assert report.excluded_concept_pairs == 6
    assert report.query_names == 2
    assert report.query_pairs == (6 - 3) + 1  # CRC's 3 pairs in D1, heart attack's 1 in D2
    assert report.unknown_excluded_ids == 1
    assert report.pairs_dropped == 10
    pairs = make_pairs(list(apply_leakage_rules(sets, ["D4"], ["heart attack", "CRC"], sources)[0]),
                       max_pairs_per_concept=None)
    strings = {p.first for p in pairs} | {p.second for p in pairs}
    assert not strings & {"heart attack", "CRC", "NIDDM", "T2DM", "type 2 diabetes"}
    # nothing excluded: nothing dropped
    same, empty = apply_leakage_rules(sets)
    assert same == sets and empty.pairs_dropped == 0


def test_pairs_are_all_synonym_pairs_within_the_caps():
    sets = collect_synonym_sets(kbs())
    pairs = make_pairs(sets, max_pairs_per_concept=None)
    assert len(pairs) == 6 + 1 + 0 + 6
    assert {(p.first, p.second) for p in pairs if p.label == 0} == set(combinations(sets[0].names, 2))
    assert make_pairs(sets, max_pairs_per_concept=None, seed=3) == pairs
    capped = make_pairs(sets, max_pairs_per_concept=2, seed=1)
    assert [sum(p.label == i for p in capped) for i in range(4)] == [2, 1, 0, 2]
    by_names = make_pairs(sets, max_names_per_concept=2, max_pairs_per_concept=None)
    assert [p.first for p in by_names if p.label == 0] == ["colorectal carcinoma"]  # canonical kept


def test_batches_are_reproducible_per_epoch():
    first = pair_batches(list(range(10)), 4, seed=0, epoch=0)
    assert first == pair_batches(list(range(10)), 4, seed=0, epoch=0)
    assert [len(b) for b in first] == [4, 4, 2]
    assert sorted(i for b in first for i in b) == list(range(10))
    assert first != pair_batches(list(range(10)), 4, seed=0, epoch=1)

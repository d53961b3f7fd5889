"""Tests for the OBO-syn style zero-shot / few-shot synonym splits."""

import pytest
import spacy

from spacy_bioel.corpora import DOC_ID_KEY
from spacy_bioel.corpora.obo_syn import obo_synonym_splits
from spacy_bioel.errors import BioELError
from spacy_bioel.kb.concept import Concept
from spacy_bioel.kb.knowledge_base import KnowledgeBase
from spacy_bioel.kb.normalize import normalize_text

SHARED = "Common finding"
N_WITH_SYNONYMS = 24     # HP:0000001-24 have non-trivial synonyms
N_PAIRS = 24 * 2 + 8     # two own synonyms each + the shared synonym on 1-8
N_TRIVIAL = 7            # 1-3 (case variant), 4 (punctuation only), 28-30 (only trivial)


def hp(i: int) -> str:
    return f"HP:{i:07d}"


def build_kb() -> KnowledgeBase:
    kb = KnowledgeBase(name="toy-hpo")
    for i in range(1, 31):
        name = f"Phenotype number {i}"
        synonyms = []
        if i <= 24:
            synonyms = [f"alpha variant {i}", f"beta form {i}"]
            if i <= 8:
                synonyms.append(SHARED)
            if i <= 3:
                synonyms.append(f"PHENOTYPE-number {i}")     # trivial: same normalised name
            if i == 4:
                synonyms.append("---")                       # normalises to ''
        elif i >= 28:
            synonyms = [f"phenotype   NUMBER {i}"]           # trivial only
        kb.add(Concept(hp(i), name, tuple(synonyms)))
    return kb


@pytest.fixture
def nlp():
    return spacy.blank("en")


@pytest.fixture
def kb():
    return build_kb()


def pairs(docs):
    out = []
    for doc in docs:
        assert len(doc.ents) == 1
        ent = doc.ents[0]
        assert (ent.start_char, ent.end_char) == (0, len(doc.text))
        out.append((ent.kb_id_, doc.text))
    return out


def concepts(docs):
    return {kb_id for kb_id, _ in pairs(docs)}


def all_pairs(kb):
    """The (concept, synonym) queries the splitter should use (non-trivial synonyms)."""
    out = []
    for concept in kb:
        canonical = normalize_text(concept.canonical_name)
        for synonym in concept.synonyms:
            key = normalize_text(synonym)
            if key and key != canonical:
                out.append((concept.concept_id, synonym))
    return out


def test_fixture_shape(kb):
    assert len(kb) == 30
    assert len(all_pairs(kb)) == N_PAIRS
    assert len({c for c, _ in all_pairs(kb)}) == N_WITH_SYNONYMS


# -- zero-shot ---------------------------------------------------------------

def test_zero_shot_concepts_disjoint(nlp, kb):
    docs, _, report = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=0)
    assert set(docs) == {"train", "test"}
    train, test = concepts(docs["train"]), concepts(docs["test"])
    assert not train & test
    assert len(test) == N_WITH_SYNONYMS // 3 == 8
    assert len(train) == 16
    assert report.counts["test_concepts"] == 8
    assert report.counts["train_concepts"] == 16
    assert report.counts["trivial_synonyms"] == N_TRIVIAL


def test_zero_shot_all_synonyms_of_test_concepts_are_test_queries(nlp, kb):
    docs, _, report = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=0)
    test = concepts(docs["test"])
    expected = sorted(p for p in all_pairs(kb) if p[0] in test)
    assert sorted(pairs(docs["test"])) == expected
    assert report.counts["test_queries"] == len(expected)


def test_zero_shot_test_strings_never_in_train(nlp, kb):
    docs, _, report = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=0)
    train_strings = {normalize_text(text) for _, text in pairs(docs["train"])}
    test_strings = {normalize_text(text) for _, text in pairs(docs["test"])}
    assert not train_strings & test_strings
    # train keeps every non-trivial synonym of its concepts except the held-out strings
    train = concepts(docs["train"])
    candidates = [p for p in all_pairs(kb) if p[0] in train]
    dropped = [p for p in candidates if normalize_text(p[1]) in test_strings]
    assert sorted(pairs(docs["train"])) == sorted(set(candidates) - set(dropped))
    assert report.counts["train_synonyms_equal_to_heldout_query"] == len(dropped)
    assert report.counts["train_queries"] == len(candidates) - len(dropped)


def test_zero_shot_shared_synonym_dropped_from_train(nlp, kb):
    # find a seed whose test split holds a concept with the shared synonym
    for seed in range(20):
        docs, _, report = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=seed)
        test = concepts(docs["test"])
        shared_in_test = {hp(i) for i in range(1, 9)} & test
        if shared_in_test and len(shared_in_test) < 8:
            break
    else:  # pragma: no cover
        pytest.fail("no seed put some (not all) shared-synonym concepts in test")
    assert report.counts["train_synonyms_equal_to_heldout_query"] == 8 - len(shared_in_test)
    assert SHARED not in {text for _, text in pairs(docs["train"])}
    assert [text for _, text in pairs(docs["test"])].count(SHARED) == len(shared_in_test)


def test_zero_shot_same_seed_same_split(nlp, kb):
    a, _, _ = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=13)
    b, _, _ = obo_synonym_splits(nlp, build_kb(), setting="zero-shot", seed=13)
    for split in ("train", "test"):
        assert pairs(a[split]) == pairs(b[split])


def test_zero_shot_different_seed_different_split(nlp, kb):
    a, _, _ = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=0)
    b, _, _ = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=1)
    assert concepts(a["test"]) != concepts(b["test"])
    assert len(concepts(a["test"])) == len(concepts(b["test"])) == 8


def test_zero_shot_dev_split(nlp, kb):
    docs, _, report = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=0,
                                         zero_shot_dev_fraction=0.25)
    assert set(docs) == {"train", "dev", "test"}
    train, dev, test = (concepts(docs[s]) for s in ("train", "dev", "test"))
    assert len(test) == 8
    assert len(dev) == round(16 * 0.25) == 4
    assert len(train) == 12
    assert not train & dev and not train & test and not dev & test
    # the test concepts do not depend on the dev fraction
    plain, _, _ = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=0)
    assert concepts(plain["test"]) == test
    held_out = {normalize_text(t) for s in ("dev", "test") for _, t in pairs(docs[s])}
    assert not held_out & {normalize_text(t) for _, t in pairs(docs["train"])}
    assert report.counts["dev_concepts"] == 4
    assert report.counts["dev_queries"] == len(docs["dev"])


def test_zero_shot_docs(nlp, kb):
    docs, _, _ = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=0)
    doc = docs["test"][0]
    assert doc.user_data[DOC_ID_KEY] == "test:0"
    assert docs["train"][3].user_data[DOC_ID_KEY] == "train:3"
    assert {e.label_ for d in docs["train"] + docs["test"] for e in d.ents} == {"HP"}
    # trivial synonyms are never queries
    texts = {t for s in docs.values() for _, t in pairs(s)}
    assert not any(t.startswith("PHENOTYPE-number") or "NUMBER" in t for t in texts)
    assert "---" not in texts
    assert not {hp(i) for i in range(25, 31)} & {c for s in docs.values() for c in concepts(s)}


def test_label_without_prefix(nlp):
    kb = KnowledgeBase(name="plain")
    for i in range(3):
        kb.add(Concept(f"T{i}", f"name {i}", (f"other {i}",)))
    docs, _, _ = obo_synonym_splits(nlp, kb, setting="zero-shot", seed=0)
    assert len(docs["test"]) == 1
    assert len(docs["train"]) == 2
    assert {d.ents[0].label_ for s in docs.values() for d in s} == {"Term"}


# -- few-shot ----------------------------------------------------------------

def test_few_shot_sizes_and_disjoint_pairs(nlp, kb):
    docs, _, report = obo_synonym_splits(nlp, kb, setting="few-shot", seed=0)
    assert set(docs) == {"train", "dev", "test"}
    n = N_PAIRS
    assert len(docs["test"]) == len(docs["dev"]) == n // 6 == 9
    train, dev, test = (set(pairs(docs[s])) for s in ("train", "dev", "test"))
    assert len(dev) == 9 and len(test) == 9
    assert not train & dev and not train & test and not dev & test
    # train is the other 38 pairs less those whose string is a dev or test query
    held_out = {normalize_text(t) for _, t in dev | test}
    rest = set(all_pairs(kb)) - dev - test
    dropped = {p for p in rest if normalize_text(p[1]) in held_out}
    assert len(rest) == n - 2 * (n // 6) == 38
    assert train == rest - dropped
    assert report.counts["train_synonyms_equal_to_heldout_query"] == len(dropped)
    assert report.counts["test_queries"] == 9
    assert report.counts["dev_queries"] == 9
    assert report.counts["train_queries"] == 38 - len(dropped)
    assert report.counts["trivial_synonyms"] == N_TRIVIAL


def test_few_shot_held_out_strings_never_in_train(nlp):
    """A synonym shared by two terms, and two spellings of one term that normalise
    alike: whichever copy is held out, the other never reaches train."""
    kb = KnowledgeBase(name="dupes")
    for i in range(12):
        synonyms = [f"own synonym {i}", f"second synonym {i}"]
        if i < 4:
            synonyms.append(SHARED)
        if i == 5:
            synonyms += ["Stiff-Man syndrome", "stiff man syndrome"]
        kb.add(Concept(hp(i), f"Term {i}", tuple(synonyms)))
    seen_drop = set()
    for seed in range(30):
        docs, _, report = obo_synonym_splits(nlp, kb, setting="few-shot", seed=seed)
        held_out = {normalize_text(t) for s in ("dev", "test") for _, t in pairs(docs[s])}
        train = {normalize_text(t) for _, t in pairs(docs["train"])}
        assert not train & held_out
        for entry in report.examples.get("train_synonyms_equal_to_heldout_query", []):
            seen_drop.add(normalize_text(entry.split(": ", 1)[1]))
    assert seen_drop == {normalize_text(SHARED), "stiff man syndrome"}


def test_few_shot_seed(nlp, kb):
    a, _, _ = obo_synonym_splits(nlp, kb, setting="few-shot", seed=3)
    b, _, _ = obo_synonym_splits(nlp, kb, setting="few-shot", seed=3)
    c, _, _ = obo_synonym_splits(nlp, kb, setting="few-shot", seed=4)
    assert pairs(a["test"]) == pairs(b["test"])
    assert set(pairs(a["test"])) != set(pairs(c["test"]))


# -- the names-only KB ---------------------------------------------------------

@pytest.mark.parametrize("setting", ["zero-shot", "few-shot"])
def test_names_only_kb(nlp, kb, setting):
    _, names_kb, _ = obo_synonym_splits(nlp, kb, setting=setting, seed=7)
    assert names_kb.concept_ids == kb.concept_ids
    assert all(c.synonyms == () for c in names_kb)
    assert [c.canonical_name for c in names_kb] == [c.canonical_name for c in kb]
    assert names_kb.stats()["synonyms"] == 0
    assert names_kb.lookup_alias("alpha variant 1") == []
    assert names_kb.lookup_alias("phenotype number 1") == [hp(1)]
    assert names_kb.name == "toy-hpo (names only)"
    assert names_kb.meta["obo_syn_setting"] == setting
    assert names_kb.meta["seed"] == 7
    # the input KB is untouched
    assert kb[hp(1)].synonyms[:2] == ("alpha variant 1", "beta form 1")


# -- errors ------------------------------------------------------------------

def test_bad_setting_e054(nlp, kb):
    with pytest.raises(BioELError) as err:
        obo_synonym_splits(nlp, kb, setting="one-shot")
    assert err.value.code == "E054"
    assert "'one-shot'" in str(err.value)


def test_kb_without_synonyms_e056(nlp):
    kb = KnowledgeBase(name="bare")
    kb.add(Concept("HP:1", "Eye"))
    kb.add(Concept("HP:2", "Ear", ("EAR",)))    # trivial synonyms do not count
    with pytest.raises(BioELError) as err:
        obo_synonym_splits(nlp, kb)
    assert err.value.code == "E056"
    assert "'bare'" in str(err.value)


@pytest.mark.parametrize("fraction", [1.5, 1.0, -0.1])
def test_bad_dev_fraction_e057(nlp, kb, fraction):
    with pytest.raises(BioELError) as err:
        obo_synonym_splits(nlp, kb, zero_shot_dev_fraction=fraction)
    assert err.value.code == "E057"
    assert str(fraction) in str(err.value)

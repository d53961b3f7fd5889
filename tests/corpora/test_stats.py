"""Tests for corpus statistics and their markdown table, on hand-built docs."""
from typing import List, Tuple

import pytest
import spacy
from spacy.tokens import Doc

from spacy_bioel.corpora.pubtator import convert_pubtator
from spacy_bioel.corpora.stats import corpus_statistics, split_statistics, statistics_table
from spacy_bioel.kb.concept import Concept
from spacy_bioel.kb.knowledge_base import NIL, KnowledgeBase

NLP = spacy.blank("en")


def make_doc(text: str, mentions: List[Tuple[str, str]]) -> Doc:
    """mentions: (surface text, kb_id); each surface is found left to right."""
    doc = NLP.make_doc(text)
    spans, position = [], 0
    for surface, kb_id in mentions:
        start = text.index(surface, position)
        position = start + len(surface)
        span = doc.char_span(start, position, label="Disease", kb_id=kb_id)
        assert span is not None
        spans.append(span)
    doc.ents = spans
    return doc


@pytest.fixture
def splits():
    train = [
        make_doc("aspirin causes asthma", [("aspirin", "D1"), ("asthma", "D2")]),
        make_doc("fever and cough", [("fever", NIL), ("cough", "D3|D4")]),
    ]
    test = [
        make_doc("asthma and eczema and gout", [("asthma", "D2"), ("eczema", "D5"),
                                                  ("gout", "D6+D3")]),
        make_doc("unknown thing and rash", [("thing", NIL), ("rash", "D7")]),
    ]
    dev = [make_doc("nothing here", [])]
    return {"train": train, "dev": dev, "test": test}


@pytest.fixture
def kb():
    kb = KnowledgeBase(name="tiny")
    kb.add(Concept("D1", "Aspirin"))
    kb.add(Concept("D2", "Asthma", alt_ids=("D5",)))
    kb.add(Concept("D3", "Cough"))
    kb.finalize_alt_ids()
    return kb


def test_counts_without_kb(splits):
    stats = corpus_statistics(splits)
    assert list(stats) == ["train", "dev", "test"]
    assert stats["train"] == {"documents": 2, "mentions": 4, "nil_mentions": 1,
                              "composite_mentions": 1, "unique_concepts": 4}
    # test concepts D2, D3, D5, D6, D7; unseen in train: D5, D6, D7
    assert stats["test"] == {"documents": 2, "mentions": 5, "nil_mentions": 1,
                             "composite_mentions": 1, "unique_concepts": 5,
                             "unseen_concepts": 3, "unseen_concepts_share": 3 / 5,
                             "unseen_mentions_share": 2 / 4}
    assert stats["dev"] == {"documents": 1, "mentions": 0, "nil_mentions": 0,
                            "composite_mentions": 0, "unique_concepts": 0,
                            "unseen_concepts": 0, "unseen_concepts_share": 0.0,
                            "unseen_mentions_share": 0.0}


def test_kb_coverage(splits, kb):
    stats = corpus_statistics(splits, kb)
    train, test, dev = stats["train"], stats["test"], stats["dev"]
    assert (train["kb_covered_concepts"], train["kb_coverage"], train["missing_ids"]) == \
        (3, 0.75, ["D4"])
    # D5 is an alternate id of D2: covered
    assert (test["kb_covered_concepts"], test["kb_coverage"], test["missing_ids"]) == \
        (3, 0.6, ["D6", "D7"])
    assert (dev["kb_covered_concepts"], dev["kb_coverage"], dev["missing_ids"]) == (0, 1.0, [])
    assert "unseen_concepts" not in train


def test_without_train_split_no_unseen_keys(splits):
    stats = corpus_statistics({"test": splits["test"]})
    assert "unseen_concepts_share" not in stats["test"]
    assert stats["test"]["unique_concepts"] == 5


def test_split_statistics_all_nil_test():
    docs = [make_doc("a b", [("a", NIL), ("b", "")])]
    stats = split_statistics(docs, train_concepts={"D1"})
    assert stats["mentions"] == 2
    assert stats["nil_mentions"] == 2
    assert stats["unique_concepts"] == 0
    assert stats["unseen_concepts_share"] == 0.0
    assert stats["unseen_mentions_share"] == 0.0


def test_statistics_table(splits, kb):
    table = statistics_table(corpus_statistics(splits, kb), title="Toy corpus")
    lines = table.splitlines()
    assert lines[0] == "### Toy corpus"
    assert lines[1] == ""
    assert lines[2].startswith("| split | docs | mentions | NIL | composite |")
    assert lines[4] == "| train | 2 | 4 | 1 | 1 | 4 | - | 3/4 (75.0%) |"
    assert lines[5] == "| dev | 1 | 0 | 0 | 0 | 0 | 0.0% / 0.0% | 0/0 (100.0%) |"
    assert lines[6] == "| test | 2 | 5 | 1 | 1 | 5 | 60.0% / 50.0% | 3/5 (60.0%) |"
    assert table.endswith("|\n")
    assert len(lines) == 7


def test_statistics_table_without_kb_or_title(splits):
    table = statistics_table(corpus_statistics(splits))
    lines = table.splitlines()
    assert lines[0].startswith("| split |")
    assert lines[2] == "| train | 2 | 4 | 1 | 1 | 4 | - | - |"
    assert lines[4] == "| test | 2 | 5 | 1 | 1 | 5 | 60.0% / 50.0% | - |"


def test_statistics_of_converted_pubtator(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(
        "1|t|Ovarian cancer and colorectal cancer.\n1|a|x.\n"
        "1\t0\t14\tOvarian cancer\tDisease\tD010051\n"
        "1\t19\t36\tcolorectal cancer\tDisease\tD015179|D009369\n\n"
        "2|t|Ovarian cancer and fever.\n2|a|y.\n"
        "2\t0\t14\tOvarian cancer\tDisease\tD010051\n"
        "2\t19\t24\tfever\tDisease\t-1\n\n"
        "3|t|Gout and lupus.\n3|a|z.\n"
        "3\t0\t4\tGout\tDisease\tD006073\n"
        "3\t9\t14\tlupus\tDisease\tD008180+D009369\n",
        encoding="utf-8")
    docs, _ = convert_pubtator(spacy.blank("en"), path, progress=False)
    stats = corpus_statistics({"train": docs[:1], "test": docs[1:]})
    assert stats["train"]["unique_concepts"] == 3
    assert stats["train"]["composite_mentions"] == 1
    test = stats["test"]
    assert (test["mentions"], test["nil_mentions"], test["composite_mentions"]) == (4, 1, 1)
    # test ids: D010051 (seen), D006073, D008180, D009369 (seen)
    assert test["unique_concepts"] == 4
    assert test["unseen_concepts"] == 2
    assert test["unseen_concepts_share"] == 0.5
    # linkable test mentions: ovarian (seen), gout (unseen), lupus (D009369 seen)
    assert test["unseen_mentions_share"] == pytest.approx(1 / 3)

"""compare_records: two systems on the same mentions, on hand-built records whose
counts are worked out by hand in the tests."""
import pytest

from spacy_bioel.errors import BioELError
from spacy_bioel.evaluation import MentionRecord
from bench.paired import compare_records, comparison_markdown


def rec(text, gold, doc, top, seen=None):
    """A record whose top candidate is `top` (None: no candidate)."""
    return MentionRecord(text, "Disease", tuple(gold), doc, candidates=[top] if top else [],
                         predicted=top or "NIL", seen=seen)


# (text, gold, doc, a's top, b's top, seen)
ROWS = [
    ("pancreatic cancer", ["C1"], "d1", "C9", "C1", True),    # won
    ("pancreatic cancer", ["C1"], "d1", "C9", "C1", True),    # won
    ("PC", ["C1"], "d2", "C9", "C1", True),                   # won
    ("anemia", ["C2"], "d3", "C2", "C7", False),              # lost
    ("B-cell lymphoma", ["C3", "C4"], "d3", "C4", "C3", False),  # both right (any gold id counts)
    ("rare disease", ["C5"], "d4", None, None, False),        # both wrong
    ("no concept", [], "d4", "C1", "C2", None),               # NIL gold: left out
]


def systems():
    a = [rec(t, g, d, x, s) for t, g, d, x, _, s in ROWS]
    b = [rec(t, g, d, y, s) for t, g, d, _, y, s in ROWS]
    return a, b


def test_counts_by_hand():
    a, b = systems()
    names = {"C1": "Pancreatic Neoplasms", "C2": "Anemia"}
    result = compare_records(a, b, n_bootstrap=500, concept_name=lambda i: names.get(i, ""))
    assert result["n"] == 6 and result["docs"] == 4
    assert result["acc@1"]["a"] == pytest.approx(2 / 6) and result["acc@1"]["b"] == pytest.approx(4 / 6)
    assert result["delta"] == pytest.approx(100 * 2 / 6)
    assert (result["won"]["mentions"], result["won"]["concepts"], result["won"]["docs"]) == (3, 1, 2)
    assert (result["lost"]["mentions"], result["lost"]["concepts"], result["lost"]["docs"]) == (1, 1, 1)
    assert result["won"]["top_concepts"] == [{"gold": "C1", "name": "Pancreatic Neoplasms",
                                              "mentions": 3, "docs": 2}]
    assert result["lost"]["top_concepts"][0]["gold"] == "C2"
    seen, unseen = result["subsets"]["seen"], result["subsets"]["unseen"]
    assert (seen["n"], seen["a"], seen["b"], seen["delta"]) == (3, 0.0, 1.0, pytest.approx(100.0))
    assert (unseen["n"], unseen["a"], unseen["b"]) == (3, pytest.approx(2 / 3), pytest.approx(1 / 3))
    low, high = result["ci95"]
    assert low <= result["delta"] <= high
    # resampling documents, d1 (+2 of 2), d2 (+1 of 1), d3 (−1 of 2), d4 (0 of 1): no sample
    # is below d3 drawn four times (−50) or above d1 / d2 alone (+100)
    assert -50.0 - 1e-9 <= low < 0.0 < high <= 100.0 + 1e-9
    table = comparison_markdown(result, "base", "loop")
    assert table.startswith("## loop against base")
    assert "| 6 | 4 | 33.3 | 66.7 | +33.3 |" in table
    assert "| C1 | Pancreatic Neoplasms | 3 | 2 |" in table


def test_interval_narrows_to_a_point_when_every_document_moves_alike():
    a = [rec("x", ["C1"], f"d{i}", "C9") for i in range(5)]
    b = [rec("x", ["C1"], f"d{i}", "C1") for i in range(5)]
    result = compare_records(a, b, n_bootstrap=200)
    assert result["ci95"] == [pytest.approx(100.0), pytest.approx(100.0)]
    assert compare_records(a, a, n_bootstrap=0)["ci95"] is None
    assert compare_records(a, a, n_bootstrap=0)["delta"] == 0.0


def test_documents_not_mentions_are_resampled():
    # one document holds all the gain: a mention-level bootstrap would give a narrow
    # interval above 0; resampling documents can draw samples without it
    a = [rec("x", ["C1"], "big", "C9") for _ in range(10)] + \
        [rec("y", ["C2"], f"d{i}", "C2") for i in range(9)]
    b = [rec("x", ["C1"], "big", "C1") for _ in range(10)] + \
        [rec("y", ["C2"], f"d{i}", "C2") for i in range(9)]
    low, high = compare_records(a, b, n_bootstrap=2000)["ci95"]
    assert low == pytest.approx(0.0)
    assert high > 50.0


def test_misaligned_records_are_refused():
    a, b = systems()
    with pytest.raises(BioELError) as error:
        compare_records(a, b[:-1])
    assert error.value.code == "E220" and "7 against 6" in str(error.value)
    b[2] = rec("other", ["C1"], "d2", "C1")
    with pytest.raises(BioELError, match="record 2: 'PC'") as error:
        compare_records(a, b)
    assert error.value.code == "E220"

"""Evaluation metrics, subsets and report tables, on hand-built records whose
values are computed by hand in the tests."""
from typing import List, Optional, Sequence

import numpy as np
import pytest
import spacy
from spacy.tokens import Doc, Span

from spacy_bioel.evaluation import (MentionRecord, annotate_subsets, evaluate_records,
                                    linking_metrics, metrics_table, nil_metrics,
                                    records_from_docs, summary_table)
from spacy_bioel.evaluation.metrics import (average_precision, bootstrap_intervals,
                                            failure_stages)
from spacy_bioel.kb import KnowledgeBase
from spacy_bioel.kb.concept import Concept

NIL = "NIL"


def record(gold: Sequence[str], candidates: Sequence[str] = (), *, text: str = "m",
           label: str = "Disease", predicted: Optional[str] = None,
           nil_score: Optional[float] = None, **kwargs) -> MentionRecord:
    cands = list(candidates)
    if predicted is None:
        predicted = cands[0] if cands else NIL
    return MentionRecord(text, label, tuple(gold), candidates=cands,
                         scores=[1.0] * len(cands), predicted=predicted,
                         nil_score=nil_score, **kwargs)


def ranked_at(gold: str, rank: Optional[int], length: int = 10) -> List[str]:
    """A candidate list with `gold` at 1-based `rank` (absent when None)."""
    fillers = [f"X{i}" for i in range(length)]
    if rank is None:
        return fillers
    return fillers[:rank - 1] + [gold] + fillers[rank - 1:]


@pytest.fixture
def four_records() -> List[MentionRecord]:
    """Linkable mentions with gold ranks 1, 3, absent, 7."""
    return [record(["A"], ranked_at("A", 1)), record(["B"], ranked_at("B", 3)),
            record(["C"], ranked_at("C", None)), record(["D"], ranked_at("D", 7))]


FOUR_MAP = (1 + 1 / 3 + 0 + 1 / 7) / 4


# -- records -----------------------------------------------------------------
def test_rank_is_one_based_and_none_when_absent():
    assert record(["A"], ["A", "B"]).rank() == 1
    assert record(["A"], ["B", "C", "A"]).rank() == 3
    assert record(["A"], ["B", "C"]).rank() is None
    assert record([], ["A"]).rank() is None
    assert record([]).is_nil and not record(["A"]).is_nil


def test_composite_rank_is_first_of_any_gold_id():
    assert record(["A", "B"], ["B", "A"]).rank() == 1
    assert record(["A", "B"], ["C", "A", "B"]).rank() == 2


# -- linking metrics ---------------------------------------------------------
def test_kb_id_accuracy_scores_the_answer_and_counts_right_links_thrown_to_nil():
    """Acc@1 scores the top candidate; kb_id_ accuracy the answer a user reads:
    a right top candidate answered NIL counts against it (and in right_as_nil),
    a composite is right with any of its ids, gold NIL mentions are left out."""
    records = [record(["A"], ["A", "B"]),                 # right, linked
               record(["B"], ["B", "A"], predicted=NIL),  # right top-1, thrown to NIL
               record(["C"], ["X", "C"], predicted=NIL),  # wrong top-1, NIL
               record(["D", "E"], ["E"]),                 # composite: right
               record([], ["A"], predicted=NIL)]          # gold NIL: not linkable
    m = linking_metrics(records, n_bootstrap=0)
    assert m["n"] == 4 and m["acc@1"] == 0.75
    assert m["kb_id_acc"] == 0.5 and m["right_as_nil"] == 0.25
    empty = linking_metrics([record([], ["A"])], n_bootstrap=0)
    assert empty["kb_id_acc"] is None and empty["right_as_nil"] is None


def test_linking_metrics_hand_computed(four_records):
    m = linking_metrics(four_records, n_bootstrap=0)
    assert m["n"] == 4
    assert m["acc@1"] == pytest.approx(0.25)
    assert m["acc@5"] == pytest.approx(0.5)
    assert m["acc@10"] == pytest.approx(0.75)
    assert m["recall@64"] == pytest.approx(0.75)
    assert m["map"] == pytest.approx(FOUR_MAP)
    assert m["ci95"] == {}


def test_linking_metrics_custom_ks_and_recall_k(four_records):
    m = linking_metrics(four_records, ks=(2, 3), recall_k=6, n_bootstrap=0)
    assert m["acc@2"] == pytest.approx(0.25)
    assert m["acc@3"] == pytest.approx(0.5)
    assert m["recall@6"] == pytest.approx(0.5)
    assert "acc@1" not in m and "recall@64" not in m


def test_composite_gold_correct_when_second_id_ranks_first():
    records = [record(["A", "B"], ["B", "X"]), record(["C"], ["X", "C"])]
    m = linking_metrics(records, n_bootstrap=0)
    assert m["acc@1"] == pytest.approx(0.5)
    assert m["acc@5"] == pytest.approx(1.0)
    assert m["map"] == pytest.approx((1 + 1 / 2) / 2)


def test_linking_metrics_empty_subset_is_none_not_zero():
    m = linking_metrics([], n_bootstrap=100)
    assert m == {"n": 0, "acc@1": None, "acc@5": None, "acc@10": None, "recall@64": None,
                 "map": None, "kb_id_acc": None, "right_as_nil": None, "ci95": {}}


# -- NIL ---------------------------------------------------------------------
@pytest.fixture
def nil_records() -> List[MentionRecord]:
    """3 linkable + 3 gold NIL mentions; 4 predicted NIL, 2 of them correctly."""
    return [
        record(["A"], ["A"], nil_score=0.1),                     # linkable, correct
        record(["B"], [], predicted=NIL, nil_score=0.8),         # linkable, predicted NIL
        record(["C"], ["Z", "C"], predicted=NIL, nil_score=0.3),  # linkable, predicted NIL
        record([], [], predicted=NIL, nil_score=0.9),            # NIL, predicted NIL
        record([], ["X"], predicted="X", nil_score=0.4),         # NIL, linked
        record([], [], predicted=NIL, nil_score=0.6),            # NIL, predicted NIL
    ]


def test_nil_precision_recall_f1_by_hand(nil_records):
    m = nil_metrics(nil_records)
    assert m["n_gold_nil"] == 3
    assert m["n_pred_nil"] == 4
    precision, recall = 2 / 4, 2 / 3
    assert m["precision"] == pytest.approx(precision)
    assert m["recall"] == pytest.approx(recall)
    assert m["f1"] == pytest.approx(2 * precision * recall / (precision + recall))
    assert m["f1"] == pytest.approx(4 / 7)


def test_nil_average_precision_by_hand(nil_records):
    # ranking by nil_score: 0.9 (NIL), 0.8, 0.6 (NIL), 0.4 (NIL), 0.3, 0.1
    # precision at each NIL: 1/1, 2/3, 3/4
    expected = (1 / 1 + 2 / 3 + 3 / 4) / 3
    assert nil_metrics(nil_records)["average_precision"] == pytest.approx(expected)


def test_average_precision_ties_are_one_threshold():
    # sklearn's definition: AP = sum_n (R_n - R_{n-1}) P_n over distinct thresholds.
    # threshold 0.5: P = 1/2, R = 1/2; threshold 0.2: P = 2/3, R = 1.
    gold = np.array([True, False, True])
    scores = np.array([0.5, 0.5, 0.2])
    assert average_precision(gold, scores) == pytest.approx(0.5 * 1 / 2 + 0.5 * 2 / 3)
    # perfect ranking
    assert average_precision(np.array([True, False]), np.array([0.9, 0.1])) == pytest.approx(1.0)
    # worst ranking: the positive last of 4 -> precision 1/4
    assert average_precision(np.array([False, False, False, True]),
                             np.array([0.9, 0.8, 0.7, 0.1])) == pytest.approx(0.25)


def test_nil_average_precision_none_without_scores(nil_records):
    nil_records[0].nil_score = None
    m = nil_metrics(nil_records)
    assert m["average_precision"] is None
    assert m["precision"] == pytest.approx(0.5)


def test_nil_metrics_no_predictions_no_gold():
    m = nil_metrics([record(["A"], ["A"], nil_score=0.0)])
    assert m == {"n_gold_nil": 0, "n_pred_nil": 0, "precision": 0.0, "recall": 0.0, "f1": 0.0,
                 "average_precision": None}


def test_gold_nil_excluded_from_accuracy(nil_records):
    report = evaluate_records(nil_records, n_bootstrap=0)
    assert report["n_total"] == 6
    assert report["n"] == 3
    assert report["acc@1"] == pytest.approx(1 / 3)
    assert report["acc@5"] == pytest.approx(2 / 3)
    assert report["map"] == pytest.approx((1 + 0 + 1 / 2) / 3)
    assert report["nil"]["n_gold_nil"] == 3
    assert report["nil"]["f1"] == pytest.approx(4 / 7)
    # by_type also counts only the linkable mentions
    assert report["by_type"]["Disease"]["n"] == 3


def test_no_nil_key_without_gold_nil(four_records):
    assert "nil" not in evaluate_records(four_records, n_bootstrap=0)


# -- failure stages ----------------------------------------------------------
def test_failure_stages():
    records = [
        record(["A"], ["A", "B"]),                      # correct
        record(["A", "B"], ["B"]),                      # correct (composite)
        record(["A"], ["B", "A"]),                      # ranked too low
        record(["A"], ["B", "C"]),                      # not in candidates
        record(["A"], []),                              # not in candidates
        record(["Q"], ["B"], gold_in_kb=False),         # gold not in KB
        record([], [], predicted=NIL),                  # gold NIL: not counted
    ]
    assert failure_stages(records) == {"correct": 2, "gold_ranked_too_low": 1,
                                       "gold_not_in_candidates": 2, "gold_not_in_kb": 1}
    assert evaluate_records(records, n_bootstrap=0)["failure_stages"] == failure_stages(records)


def test_frequent_errors_group_and_count_wrong_answers():
    from spacy_bioel.evaluation.metrics import frequent_errors

    records = [record(["A"], ["B", "A"], text="x"), record(["A"], ["B", "A"], text="x"),
               record(["A"], ["C"], text="y"), record(["A"], ["A"], text="z"),
               record([], ["B"], text="n", predicted=NIL)]
    errors = frequent_errors(records)
    assert errors == [
        {"text": "x", "gold": "A", "predicted": "B", "stage": "gold_ranked_too_low", "gold_rank": 2,
         "count": 2},
        {"text": "y", "gold": "A", "predicted": "C", "stage": "gold_not_in_candidates",
         "gold_rank": None, "count": 1}]
    assert frequent_errors(records, n=1) == errors[:1]
    assert evaluate_records(records, n_bootstrap=0)["frequent_errors"] == errors


def test_error_kinds_seen_hierarchy_and_mention():
    from spacy_bioel.evaluation.error_kinds import error_kinds, is_abbreviation

    kb = KnowledgeBase(name="tree")
    kb.add(Concept("ROOT", "disease"))
    for cid, name, parent in (("A", "cancer", "ROOT"), ("A1", "colon cancer", "A"),
                              ("A2", "lung cancer", "A"), ("A11", "colon adenoma", "A1"),
                              ("B", "asthma", "ROOT"), ("X", "orphan", None)):
        kb.add(Concept(cid, name, relations=(("is_a", parent),) if parent else ()))
    nlp = spacy.blank("en")
    train = nlp.make_doc("colon cancer and asthma")
    train.ents = [Span(train, 0, 2, "Disease", kb_id="A1"), Span(train, 3, 4, "Disease", kb_id="B")]
    records = [
        record(["A1"], ["A", "A1"], text="colon tumour"),   # seen -> wrong unseen; ancestor
        record(["A1"], ["A11"], text="CRC"),                # seen -> wrong unseen; descendant; abbr.
        record(["A2"], ["A1"], text="lung ca"),             # unseen -> wrong seen; sibling
        record(["A2", "X"], ["B"], text="lung asthma"),     # unseen -> wrong seen; unrelated; composite
        record(["X"], [], text="orphan disease"),           # no candidate: predicted NIL
        record(["A1"], ["A1"], text="colon cancer"),        # correct: not an error
        record([], ["B"], predicted=NIL, text="none"),      # gold NIL: not counted
    ]
    annotate_subsets(records, kb, [train])
    kinds = evaluate_records(records, n_bootstrap=0, kb=kb)["error_kinds"]
    assert kinds["seen"] == {"seen_to_wrong_unseen": 2, "unseen_to_wrong_seen": 2,
                             "predicted_nil": 1}
    assert kinds["hierarchy"] == {"ancestor": 1, "descendant": 1, "sibling": 1, "unrelated": 1,
                                  "predicted_nil": 1}
    assert kinds["mention"] == {"other": 3, "abbreviation": 1, "composite_gold": 1}
    assert "Errors by hierarchy: ancestor 1" in metrics_table(evaluate_records(records, kb=kb,
                                                                                n_bootstrap=0))
    assert "hierarchy" not in evaluate_records(records, n_bootstrap=0)["error_kinds"]  # no KB
    assert [is_abbreviation(t) for t in ("CD", "SCA1", "HbS", "cancer", "B cell", "a")] == \
        [True, True, True, False, False, False]


def test_failure_stages_empty():
    assert failure_stages([]) == {"correct": 0, "gold_ranked_too_low": 0,
                                  "gold_not_in_candidates": 0, "gold_not_in_kb": 0}


# -- subsets -----------------------------------------------------------------
def test_subsets_and_by_type_counts():
    records = [
        record(["A"], ["A"], label="Disease", seen=True, refined=False),
        record(["B"], ["X", "B"], label="Disease", seen=False, refined=True),
        record(["C"], [], label="Disease", seen=False, refined=True),
        record(["D"], ["D"], label="Chemical", seen=True, refined=True),
        record(["E"], ["X", "Y", "E"], label="Chemical", seen=True, refined=False),
        record([], [], label="Chemical", predicted=NIL, seen=False, refined=True),
    ]
    report = evaluate_records(records, n_bootstrap=0)
    assert report["n_total"] == 6 and report["n"] == 5
    assert report["refined"]["n"] == 3          # B, C, D (the NIL one is not linkable)
    assert report["refined"]["acc@1"] == pytest.approx(1 / 3)
    assert report["refined"]["acc@5"] == pytest.approx(2 / 3)
    assert report["seen"]["n"] == 3             # A, D, E
    assert report["seen"]["acc@1"] == pytest.approx(2 / 3)
    assert report["seen"]["map"] == pytest.approx((1 + 1 + 1 / 3) / 3)
    assert report["unseen"]["n"] == 2           # B, C
    assert report["unseen"]["acc@1"] == pytest.approx(0.0)
    assert report["unseen"]["acc@5"] == pytest.approx(0.5)
    assert list(report["by_type"]) == ["Chemical", "Disease"]
    assert report["by_type"]["Chemical"]["n"] == 2
    assert report["by_type"]["Chemical"]["acc@1"] == pytest.approx(0.5)
    assert report["by_type"]["Disease"]["n"] == 3
    assert report["by_type"]["Disease"]["acc@1"] == pytest.approx(1 / 3)
    assert report["failure_stages"] == {"correct": 2, "gold_ranked_too_low": 2,
                                        "gold_not_in_candidates": 1, "gold_not_in_kb": 0}


def test_subsets_absent_when_not_annotated(four_records):
    report = evaluate_records(four_records, n_bootstrap=0)
    assert "refined" not in report and "seen" not in report and "unseen" not in report
    assert set(report["by_type"]) == {"Disease"}


# -- bootstrap ---------------------------------------------------------------
def test_bootstrap_contains_point_estimate_and_is_deterministic(four_records):
    ranks = np.array([1, 3, np.inf, 7], dtype=np.float64)
    first = bootstrap_intervals(ranks, (1, 5, 10), 64, n_bootstrap=500, seed=3)
    second = bootstrap_intervals(ranks, (1, 5, 10), 64, n_bootstrap=500, seed=3)
    assert first == second
    assert set(first) == {"acc@1", "acc@5", "acc@10", "recall@64", "map"}
    point = linking_metrics(four_records, n_bootstrap=0)
    for name, (lo, hi) in first.items():
        assert 0.0 <= lo <= point[name] <= hi <= 1.0, name
    # linking_metrics reports the same intervals for the same seed
    assert linking_metrics(four_records, n_bootstrap=500, seed=3)["ci95"] == first


def test_bootstrap_width_on_a_larger_sample():
    ranks = np.array([1.0] * 60 + [np.inf] * 40)
    lo, hi = bootstrap_intervals(ranks, (1,), 64, n_bootstrap=2000, seed=0)["acc@1"]
    # binomial standard error sqrt(0.6 * 0.4 / 100) = 0.049: the 95% interval is
    # 0.6 +- 1.96 * 0.049 = [0.504, 0.696] (a 90% interval would be [0.52, 0.68])
    assert 0.49 <= lo <= 0.51
    assert 0.69 <= hi <= 0.71
    # an independent Monte Carlo reference: 20000 resamples from another generator
    rng = np.random.default_rng(12345)
    reference = (ranks[rng.integers(0, 100, size=(20000, 100))] <= 1).mean(axis=1)
    ref_lo, ref_hi = np.percentile(reference, [2.5, 97.5])
    assert lo == pytest.approx(ref_lo, abs=0.015) and hi == pytest.approx(ref_hi, abs=0.015)


def test_bootstrap_collapses_when_all_ranks_equal():
    ci = bootstrap_intervals(np.array([2.0, 2.0, 2.0]), (1, 5, 10), 64, n_bootstrap=200)
    assert ci == {"acc@1": [0.0, 0.0], "acc@5": [1.0, 1.0], "acc@10": [1.0, 1.0],
                  "recall@64": [1.0, 1.0], "map": [0.5, 0.5]}
    ci = bootstrap_intervals(np.array([np.inf] * 3), (1,), 64, n_bootstrap=200)
    assert ci == {"acc@1": [0.0, 0.0], "recall@64": [0.0, 0.0], "map": [0.0, 0.0]}


def test_bootstrap_empty_or_disabled():
    assert bootstrap_intervals(np.array([]), (1,), 64) == {}
    assert bootstrap_intervals(np.array([1.0]), (1,), 64, n_bootstrap=0) == {}


def test_evaluate_records_deterministic(four_records):
    assert evaluate_records(four_records) == evaluate_records(four_records)


# -- annotate_subsets --------------------------------------------------------
@pytest.fixture
def tiny_kb() -> KnowledgeBase:
    kb = KnowledgeBase(name="tiny", strip_prefixes=("MESH:",))
    kb.add(Concept("D1", "Colorectal cancer", synonyms=("CRC",)))
    kb.add(Concept("D2", "Breast cancer", alt_ids=("OMIM:2",)))
    kb.add(Concept("D3", "Hepatoblastoma"))
    kb.finalize_alt_ids()
    return kb


def make_doc(nlp, words: List[str], ents: List[tuple], doc_id: str = "") -> Doc:
    """ents: (start_token, end_token, label, kb_id)."""
    doc = Doc(nlp.vocab, words=words)
    doc.ents = [Span(doc, s, e, label=label, kb_id=kb_id) for s, e, label, kb_id in ents]
    if doc_id:
        doc.user_data["bioel_doc_id"] = doc_id
    return doc


@pytest.fixture
def nlp():
    return spacy.blank("en")


@pytest.fixture
def train_docs(nlp) -> List[Doc]:
    return [make_doc(nlp, ["Familial", "colon", "tumours", "and", "Crohn's", "disease"],
                     [(1, 3, "Disease", "D1"), (4, 6, "Disease", "D9")], "t1")]


@pytest.fixture
def test_docs(nlp) -> List[Doc]:
    words = ["COLON-TUMOURS", ",", "breast", "cancer", "!", ";", "mammary", "neoplasm", ";",
             "CROHN'S", "DISEASE", ";", "breast-colon", "cancer", ";", "unknown", ";", "plain"]
    ents = [(0, 1, "Disease", "D1"),            # a train string after normalisation
            (2, 5, "Disease", "D2"),            # 'breast cancer !': a KB name after normalisation
            (6, 8, "Disease", "D2"),            # refined
            (9, 11, "Disease", "D9"),           # train string; gold not in KB
            (12, 14, "Disease", "D2|D1"),       # composite, refined, seen through D1
            (15, 16, "Disease", "NIL")]         # NIL
    doc = make_doc(nlp, words, ents, "d1")
    doc.ents = list(doc.ents) + [Span(doc, 17, 18, label="Disease")]  # no kb_id: skipped
    return [doc]


def test_records_from_docs(test_docs):
    records = records_from_docs(test_docs)
    assert [r.text for r in records] == ["COLON-TUMOURS", "breast cancer !", "mammary neoplasm",
                                         "CROHN'S DISEASE", "breast-colon cancer", "unknown"]
    assert [r.gold for r in records] == [("D1",), ("D2",), ("D2",), ("D9",), ("D2", "D1"), ()]
    assert {r.doc_id for r in records} == {"d1"}
    assert all(r.label == "Disease" and r.candidates == [] and r.predicted == NIL
               for r in records)


def test_annotate_subsets_seen_refined_and_gold_in_kb(test_docs, train_docs, tiny_kb):
    records = records_from_docs(test_docs)
    annotate_subsets(records, tiny_kb, train_docs)
    assert [r.seen for r in records] == [True, False, False, True, True, False]
    assert [r.refined for r in records] == [False, False, True, False, True, True]
    assert [r.gold_in_kb for r in records] == [True, True, True, False, True, True]


def test_annotate_subsets_seen_docs_override(nlp, test_docs, train_docs, tiny_kb):
    seen_docs = [make_doc(nlp, ["breast", "cancer"], [(0, 2, "Disease", "D2")])]
    records = records_from_docs(test_docs)
    annotate_subsets(records, tiny_kb, train_docs, seen_docs=seen_docs)
    assert [r.seen for r in records] == [False, True, True, False, True, False]
    # refined still uses the train_docs strings
    assert [r.refined for r in records] == [False, False, True, False, True, True]


def test_annotate_subsets_kb_only(test_docs, tiny_kb):
    records = records_from_docs(test_docs)
    annotate_subsets(records, tiny_kb)
    assert [r.seen for r in records] == [None] * 6
    assert [r.refined for r in records] == [True, False, True, True, True, True]


def test_annotate_subsets_without_kb_or_train(test_docs):
    records = records_from_docs(test_docs)
    annotate_subsets(records, None)
    assert [(r.seen, r.refined, r.gold_in_kb) for r in records] == [(None, None, True)] * 6


def test_annotate_subsets_alt_id_is_in_kb(nlp, tiny_kb):
    doc = make_doc(nlp, ["a", "b"], [(0, 1, "Disease", "OMIM:2"), (1, 2, "Disease", "MESH:D3")])
    records = records_from_docs([doc])
    annotate_subsets(records, tiny_kb)
    assert [r.gold_in_kb for r in records] == [True, True]


def test_evaluate_annotated_records(test_docs, train_docs, tiny_kb):
    records = records_from_docs(test_docs)
    annotate_subsets(records, tiny_kb, train_docs)
    # the linker gets the first three linkable mentions right at rank 1
    for r, cands in zip(records, [["D1"], ["D2"], ["D2"], ["D1"], ["D3", "D1"], []]):
        r.candidates = cands
        r.predicted = cands[0] if cands else NIL
    report = evaluate_records(records, n_bootstrap=0)
    assert report["n"] == 5
    assert report["acc@1"] == pytest.approx(3 / 5)
    assert report["refined"]["n"] == 2 and report["refined"]["acc@1"] == pytest.approx(0.5)
    assert report["seen"]["n"] == 3 and report["seen"]["acc@1"] == pytest.approx(1 / 3)
    assert report["unseen"]["n"] == 2 and report["unseen"]["acc@1"] == pytest.approx(1.0)
    assert report["failure_stages"] == {"correct": 3, "gold_ranked_too_low": 1,
                                        "gold_not_in_candidates": 0, "gold_not_in_kb": 1}
    assert report["nil"]["precision"] == pytest.approx(1.0)
    assert report["nil"]["recall"] == pytest.approx(1.0)


# -- tables ------------------------------------------------------------------
def test_metrics_table_percentages(four_records):
    for r, seen, refined in zip(four_records, [True, True, False, False], [True, False, True, False]):
        r.seen, r.refined = seen, refined
    four_records.append(record([], [], predicted=NIL, nil_score=1.0))
    four_records[0].label = "Chemical"
    for r in four_records[:4]:
        r.nil_score = 0.0
    four_records[2].predicted = NIL  # the mention whose gold is absent answers NIL
    report = evaluate_records(four_records, n_bootstrap=200)
    lo, hi = report["ci95"]["acc@1"]
    table = metrics_table(report, "NCBI | exact")
    lines = table.splitlines()
    assert lines[0] == "### NCBI | exact"
    # map = (1 + 1/3 + 0 + 1/7) / 4 = 36.9%
    # the answers: A right, B and D wrong, C NIL (its gold absent): kb_id_ 25%, no right one as NIL
    assert (f"| all | 4 | 25.0 [{100 * lo:.1f}, {100 * hi:.1f}] | 25.0 | 0.0 | 50.0 | 75.0 | 75.0 | 36.9 |"
            in lines)
    # refined: ranks 1, absent -> 50 / 50 / 50 / 50 / MAP 50
    assert any(line.startswith("| refined | 2 | 50.0 [") and line.endswith("| 50.0 | 50.0 | 50.0 | 50.0 |")
               for line in lines)
    # seen: ranks 1, 3 -> Acc@1 50, Acc@5 100, MAP (1 + 1/3) / 2 = 66.7
    assert any(line.startswith("| seen | 2 | 50.0 [") and line.endswith("| 100.0 | 100.0 | 100.0 | 66.7 |")
               for line in lines)
    # unseen: absent, 7 -> 0 / 0 / 50 / 50 / MAP 1/14 = 7.1
    assert "| unseen | 2 | 0.0 [0.0, 0.0] | 0.0 | 0.0 | 0.0 | 50.0 | 50.0 | 7.1 |" in lines
    assert any(line.startswith("| type=Chemical | 1 | 100.0 [100.0, 100.0] |") for line in lines)
    assert any(line.startswith("| type=Disease | 3 | 0.0 [0.0, 0.0] |") for line in lines)
    assert ("Failure stages: correct 1, gold_ranked_too_low 2, gold_not_in_candidates 1, "
            "gold_not_in_kb 0") in lines
    # NIL: gold 1, predicted 2 (the absent one and the NIL one): P 50, R 100, F1 66.7, AP 100
    assert "NIL: gold 1, predicted 2, P 50.0, R 100.0, F1 66.7, AP 100.0" in lines


def test_metrics_table_without_title(four_records):
    table = metrics_table(evaluate_records(four_records, n_bootstrap=0))
    assert table.splitlines()[0].startswith("| subset | n | Acc@1")
    assert "| all | 4 | 25.0 | 25.0 | 0.0 | 50.0 | 75.0 | 75.0 | 36.9 |" in table.splitlines()


def test_summary_table_rows(four_records):
    for r, seen, refined in zip(four_records, [True, True, False, False], [True, False, True, False]):
        r.seen, r.refined = seen, refined
    report = evaluate_records(four_records, n_bootstrap=0)
    report["meta"] = {"dataset": "ncbi", "kb_name": "MEDIC", "linker": "tfidf",
                      "dictionary": "kb+train"}
    other = evaluate_records([record(["A"], ["A"])], n_bootstrap=0)
    table = summary_table([report, other])
    lines = table.splitlines()
    assert len(lines) == 4
    assert lines[2] == ("| ncbi | MEDIC | tfidf | kb+train | 4 | 25.0 | 25.0 | 0.0 | 50.0 | 75.0 | 75.0 | "
                        "36.9 | 2 | 50.0 | 50.0 | 50.0 | 0.0 | - | - |")
    assert lines[3] == ("| ? | ? | ? | ? | 1 | 100.0 | 100.0 | 0.0 | 100.0 | 100.0 | 100.0 | 100.0 | - | "
                        "- | - | - | - | - | - |")

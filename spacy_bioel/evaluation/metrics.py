"""Linking metrics: Acc@k, recall@k, MAP, seen / unseen / refined / per-type
subsets, NIL precision / recall / F1 / average precision, bootstrap intervals
and the failure-stage and error-kind counts.

Conventions:
* Acc@k, recall@k and MAP are over linkable mentions (gold not NIL). A
  composite mention is correct at k if any of its ids is in the top k.
* MAP: each mention has one relevant answer (any of its ids), so its average
  precision is 1 / rank of the first gold concept (0 if absent): MAP = MRR.
* NIL: gold NIL = kb_id_ 'NIL'; predicted NIL = the linker answered 'NIL'.
  Average precision ranks all mentions by `nil_score`.
* kb_id_ accuracy scores the answer a user reads (`kb_id_`, NIL included)
  over linkable mentions, beside Acc@1 (the top candidate, NIL flag ignored);
  `right_as_nil` is the share of linkable mentions answered NIL although the
  top candidate is right.
* An empty subset (e.g. 'unseen' when every test concept is seen in
  training) reports n = 0 and None for each metric, never a fake 0.
* Bootstrap: percentile 95% intervals over mentions resampled with
  replacement (`n_bootstrap` resamples, fixed seed).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..kb.knowledge_base import NIL, KnowledgeBase
from .error_kinds import error_kinds
from .records import MentionRecord

DEFAULT_KS = (1, 5, 10)
DEFAULT_RECALL_K = 64


def _rank_array(records: Sequence[MentionRecord]) -> np.ndarray:
    """(n,) ranks, np.inf where the gold concept is absent."""
    return np.array([r.rank() or np.inf for r in records], dtype=np.float64)


def _point_metrics(ranks: np.ndarray, ks: Sequence[int], recall_k: int
                   ) -> Dict[str, Optional[float]]:
    """Acc@k, recall@k and MAP; None for every metric of an empty subset."""
    names = [f"acc@{k}" for k in ks] + [f"recall@{recall_k}", "map"]
    if not len(ranks):
        return {name: None for name in names}
    out: Dict[str, Optional[float]] = {}
    for k in ks:
        out[f"acc@{k}"] = float(np.mean(ranks <= k))
    out[f"recall@{recall_k}"] = float(np.mean(ranks <= recall_k))
    out["map"] = float(np.mean(np.where(np.isfinite(ranks), 1.0 / ranks, 0.0)))
    return out


def bootstrap_intervals(ranks: np.ndarray, ks: Sequence[int], recall_k: int,
                        n_bootstrap: int = 1000, seed: int = 0) -> Dict[str, List[float]]:
    """95% percentile intervals of each point metric over resampled mentions."""
    if not len(ranks) or n_bootstrap <= 0:
        return {}
    rng = np.random.default_rng(seed)
    names = [f"acc@{k}" for k in ks] + [f"recall@{recall_k}", "map"]
    stats: Dict[str, List[np.ndarray]] = {name: [] for name in names}
    chunk = max(1, min(n_bootstrap, 20_000_000 // max(len(ranks), 1)))  # bound memory
    for start in range(0, n_bootstrap, chunk):
        size = min(chunk, n_bootstrap - start)
        samples = ranks[rng.integers(0, len(ranks), size=(size, len(ranks)))]  # (size, n)
        for k in ks:
            stats[f"acc@{k}"].append((samples <= k).mean(axis=1))
        stats[f"recall@{recall_k}"].append((samples <= recall_k).mean(axis=1))
        stats["map"].append(np.where(np.isfinite(samples), 1.0 / samples, 0.0).mean(axis=1))
    return {name: [float(np.percentile(np.concatenate(v), 2.5)),
                   float(np.percentile(np.concatenate(v), 97.5))]
            for name, v in stats.items()}


def linking_metrics(records: Sequence[MentionRecord], ks: Sequence[int] = DEFAULT_KS,
                    recall_k: int = DEFAULT_RECALL_K, n_bootstrap: int = 1000,
                    seed: int = 0) -> Dict[str, object]:
    """Acc@k, recall@k, MAP (+ 95% CIs) over the linkable records given."""
    linkable = [r for r in records if not r.is_nil]
    ranks = _rank_array(linkable)
    out: Dict[str, object] = {"n": len(linkable)}
    out.update(_point_metrics(ranks, ks, recall_k))
    out.update(answer_metrics(linkable, ranks))
    out["ci95"] = bootstrap_intervals(ranks, ks, recall_k, n_bootstrap, seed)
    return out


def answer_metrics(linkable: Sequence[MentionRecord], ranks: np.ndarray
                   ) -> Dict[str, Optional[float]]:
    """What a user reads, beside what Acc@1 scores: `kb_id_acc`, the share of
    linkable mentions whose answer (`kb_id_`, NIL included) is a gold id, and
    `right_as_nil`, the share whose top candidate is right (`ranks`, from
    `_rank_array`, is 1) but whose answer is NIL (a right link the NIL stage
    threw away). None for an empty subset."""
    if not linkable:
        return {"kb_id_acc": None, "right_as_nil": None}
    right = sum(r.predicted in r.gold for r in linkable)
    thrown = sum(r.predicted == NIL and rank == 1 for r, rank in zip(linkable, ranks))
    return {"kb_id_acc": right / len(linkable), "right_as_nil": thrown / len(linkable)}


def failure_stage(record: MentionRecord) -> str:
    """Where a linkable mention stands: 'correct', 'gold_not_in_kb',
    'gold_not_in_candidates' or 'gold_ranked_too_low'."""
    rank = record.rank()
    if rank == 1:
        return "correct"
    if not record.gold_in_kb:
        return "gold_not_in_kb"
    return "gold_not_in_candidates" if rank is None else "gold_ranked_too_low"


def failure_stages(records: Sequence[MentionRecord]) -> Dict[str, int]:
    """Where linkable mentions fail: gold not in the KB, gold absent from the
    candidate list, or present but ranked below 1."""
    counts = Counter(failure_stage(record) for record in records if not record.is_nil)
    return {key: counts.get(key, 0) for key in
            ("correct", "gold_ranked_too_low", "gold_not_in_candidates", "gold_not_in_kb")}


def frequent_errors(records: Sequence[MentionRecord], n: int = 20) -> List[Dict[str, object]]:
    """The `n` most frequent wrong answers on linkable mentions, grouped by
    (mention text, gold ids, predicted id), with where each failed (see
    `failure_stages`) and the gold's rank among the candidates."""
    groups: Counter = Counter()
    detail: Dict[tuple, Dict[str, object]] = {}
    for record in records:
        stage = None if record.is_nil else failure_stage(record)
        if stage in (None, "correct"):
            continue
        predicted = record.candidates[0] if record.candidates else record.predicted
        key = (record.text, "|".join(record.gold), predicted)
        groups[key] += 1
        detail[key] = {"text": record.text, "gold": "|".join(record.gold), "predicted": predicted,
                       "stage": stage, "gold_rank": record.rank()}
    return [{**detail[key], "count": count} for key, count in groups.most_common(n)]


def nil_metrics(records: Sequence[MentionRecord]) -> Dict[str, Optional[float]]:
    """NIL precision / recall / F1 (from the predictions) and average precision
    (from `nil_score`, when every record has one)."""
    gold = np.array([r.is_nil for r in records], dtype=bool)
    predicted = np.array([r.predicted == NIL for r in records], dtype=bool)
    tp = int(np.sum(gold & predicted))
    precision = tp / int(predicted.sum()) if predicted.any() else 0.0
    recall = tp / int(gold.sum()) if gold.any() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    out: Dict[str, Optional[float]] = {
        "n_gold_nil": int(gold.sum()), "n_pred_nil": int(predicted.sum()),
        "precision": precision, "recall": recall, "f1": f1, "average_precision": None}
    scores = [r.nil_score for r in records]
    if gold.any() and all(s is not None for s in scores):
        out["average_precision"] = average_precision(gold, np.array(scores, dtype=np.float64))
    return out


def average_precision(gold: np.ndarray, scores: np.ndarray) -> float:
    """Average precision of ranking `scores` (descending) against boolean `gold`
    (sklearn's definition: sum over positives of precision at their rank;
    tied scores are one threshold)."""
    from sklearn.metrics import average_precision_score
    return float(average_precision_score(gold.astype(int), scores))


def evaluate_records(records: Sequence[MentionRecord], ks: Sequence[int] = DEFAULT_KS,
                     recall_k: int = DEFAULT_RECALL_K, n_bootstrap: int = 1000,
                     seed: int = 0, kb: Optional[KnowledgeBase] = None) -> Dict[str, object]:
    """The full report: overall metrics, subsets, per type, NIL and failure stages.

    RETURNS (Dict[str, object]): keys 'n', 'acc@1', ..., 'ci95', 'refined',
        'seen', 'unseen', 'by_type', 'failure_stages', 'frequent_errors',
        'error_kinds' (`error_kinds`; its hierarchy table needs `kb`), 'n_total',
        'nil' (only when gold NIL exists).
    """
    args = dict(ks=ks, recall_k=recall_k, n_bootstrap=n_bootstrap, seed=seed)
    report: Dict[str, object] = {"n_total": len(records)}
    report.update(linking_metrics(records, **args))
    if any(r.refined is not None for r in records):
        report["refined"] = linking_metrics([r for r in records if r.refined], **args)
    if any(r.seen is not None for r in records):
        report["seen"] = linking_metrics([r for r in records if r.seen], **args)
        report["unseen"] = linking_metrics([r for r in records if r.seen is False], **args)
    by_type: Dict[str, List[MentionRecord]] = defaultdict(list)
    for record in records:
        by_type[record.label].append(record)
    report["by_type"] = {label: linking_metrics(group, **args)
                         for label, group in sorted(by_type.items())}
    report["failure_stages"] = failure_stages(records)
    report["frequent_errors"] = frequent_errors(records)
    report["error_kinds"] = error_kinds(records, kb)
    if any(r.is_nil for r in records):
        report["nil"] = nil_metrics(records)
    return report


__all__ = ["linking_metrics", "answer_metrics", "evaluate_records", "nil_metrics", "failure_stages", "failure_stage",
           "frequent_errors",
           "bootstrap_intervals", "average_precision", "DEFAULT_KS", "DEFAULT_RECALL_K"]

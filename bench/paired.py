"""Two linkers on the same gold mentions, mention by mention.

A difference of means over seeds says whether a method moves Acc@1; it does not
say how many mentions moved, whether they are a few concepts repeated through a
few documents or a broad shift, or how far the difference could move under
another sample of documents. `compare_records` answers those from the two
systems' records of one split: the mentions each gets right that the other
misses (by gold concept and document), Acc@1 of both on every subset the records
carry (seen / unseen when `annotate_subsets` ran), and a 95% interval of the
difference from a paired bootstrap over documents (mentions of one abstract are
not independent: an abstract repeats its disease; Koehn 2004 resamples
sentences for the same reason).

Acc@1 is counted as `evaluate` counts it: the top candidate is a gold id
(`MentionRecord.rank() == 1`); NIL-gold mentions are left out.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from spacy_bioel.errors import BioELError, Errors
from spacy_bioel.evaluation.records import MentionRecord


def _check_aligned(a: Sequence[MentionRecord], b: Sequence[MentionRecord]) -> None:
    if len(a) != len(b):
        raise BioELError(Errors.E220.format(where=f"{len(a)} against {len(b)} records"))
    for i, (x, y) in enumerate(zip(a, b)):
        if (x.text, x.gold, x.doc_id) != (y.text, y.gold, y.doc_id):
            raise BioELError(Errors.E220.format(
                where=f"record {i}: '{x.text}' {x.gold} (doc {x.doc_id or '?'}) against "
                      f"'{y.text}' {y.gold} (doc {y.doc_id or '?'})"))


def _document_bootstrap(doc_ids: Sequence[str], diffs: np.ndarray, n_bootstrap: int,
                        seed: int) -> Optional[Tuple[float, float]]:
    """95% interval of the mean per-mention difference (points), resampling documents."""
    if n_bootstrap <= 0 or not len(diffs):
        return None
    groups: Dict[str, List[int]] = defaultdict(list)
    for i, doc_id in enumerate(doc_ids):
        groups[doc_id].append(i)
    sums = np.array([diffs[idx].sum() for idx in groups.values()], dtype=np.float64)
    sizes = np.array([len(idx) for idx in groups.values()], dtype=np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(sums), size=(n_bootstrap, len(sums)))
    means = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(100 * low), float(100 * high)


def compare_records(a: Sequence[MentionRecord], b: Sequence[MentionRecord],
                    n_bootstrap: int = 2000, seed: int = 0, top: int = 10,
                    concept_name: Optional[Callable[[str], str]] = None) -> Dict[str, object]:
    """Paired comparison of system b against system a on the same mentions.

    a, b (Sequence[MentionRecord]): Both systems' records of one split, in the
        same order (as `link_records` returns them for the same docs).
    n_bootstrap (int): Document resamples for the interval of b − a (0: none).
    top (int): How many gold concepts to list among the mentions won and lost.
    concept_name (Optional[Callable]): Maps an id to a name for those lists.
    RETURNS (Dict[str, object]): 'n', 'acc@1' of a and b, 'delta' (b − a,
        points), 'ci95' (points, documents resampled), 'won' / 'lost' (mentions
        b gets right and a misses / the reverse) with the concepts and documents
        they fall in, per-subset Acc@1 and delta ('subsets': seen, unseen where
        the records carry it), and the most frequent concepts won and lost.
    """
    _check_aligned(a, b)
    pairs = [(x, y) for x, y in zip(a, b) if not x.is_nil]
    right_a = np.array([x.rank() == 1 for x, _ in pairs], dtype=np.float64)
    right_b = np.array([y.rank() == 1 for _, y in pairs], dtype=np.float64)
    diffs = right_b - right_a
    won = [x for (x, _), d in zip(pairs, diffs) if d > 0]
    lost = [x for (x, _), d in zip(pairs, diffs) if d < 0]
    name = concept_name or (lambda concept_id: "")

    def side(records: Sequence[MentionRecord]) -> Dict[str, object]:
        docs_by_gold: Dict[Tuple[str, ...], List[str]] = defaultdict(list)
        for r in records:
            docs_by_gold[r.gold].append(r.doc_id)
        ranked = sorted(docs_by_gold.items(), key=lambda item: -len(item[1]))[:top]
        return {"mentions": len(records), "concepts": len(docs_by_gold),
                "docs": len({r.doc_id for r in records}),
                "top_concepts": [{"gold": "|".join(gold), "name": name(gold[0]),
                                  "mentions": len(doc_ids), "docs": len(set(doc_ids))}
                                 for gold, doc_ids in ranked]}

    interval = _document_bootstrap([x.doc_id for x, _ in pairs], diffs, n_bootstrap, seed)
    subsets: Dict[str, Dict[str, object]] = {}
    for subset, flag in (("seen", True), ("unseen", False)):
        keep = np.array([x.seen is flag for x, _ in pairs], dtype=bool)
        if keep.any():
            subsets[subset] = {"n": int(keep.sum()), "a": float(right_a[keep].mean()),
                               "b": float(right_b[keep].mean()),
                               "delta": float(100 * diffs[keep].mean())}
    n = len(pairs)
    return {
        "n": n, "docs": len({x.doc_id for x, _ in pairs}),
        "acc@1": {"a": float(right_a.mean()) if n else 0.0, "b": float(right_b.mean()) if n else 0.0},
        "delta": float(100 * diffs.mean()) if n else 0.0,
        "ci95": list(interval) if interval else None, "n_bootstrap": n_bootstrap,
        "won": side(won), "lost": side(lost), "subsets": subsets,
    }


def comparison_markdown(result: Dict[str, object], label_a: str, label_b: str) -> str:
    """A markdown report of `compare_records`' result."""
    acc = result["acc@1"]
    ci = result["ci95"]
    ci_text = f"[{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else "-"
    lines = [f"## {label_b} against {label_a}", "",
             "| mentions | docs | Acc@1 a | Acc@1 b | Δ (b − a) | 95% CI, documents resampled | "
             "won | lost | concepts won | concepts lost | docs won | docs lost |",
             "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
             f"| {result['n']} | {result['docs']} | {100 * acc['a']:.1f} | {100 * acc['b']:.1f} | "
             f"{result['delta']:+.1f} | {ci_text} | {result['won']['mentions']} | "
             f"{result['lost']['mentions']} | {result['won']['concepts']} | "
             f"{result['lost']['concepts']} | {result['won']['docs']} | {result['lost']['docs']} |"]
    if result["subsets"]:
        lines += ["", "| subset | mentions | Acc@1 a | Acc@1 b | Δ |", "|---|---:|---:|---:|---:|"]
        for subset, row in result["subsets"].items():
            lines.append(f"| {subset} | {row['n']} | {100 * row['a']:.1f} | {100 * row['b']:.1f} | "
                         f"{row['delta']:+.1f} |")
    for side, title in (("won", f"right in {label_b} only"), ("lost", f"right in {label_a} only")):
        rows = result[side]["top_concepts"]
        if rows:
            lines += ["", f"Mentions {title}, most frequent gold concepts:", "",
                      "| gold | name | mentions | docs |", "|---|---|---:|---:|"]
            lines += [f"| {r['gold']} | {r['name']} | {r['mentions']} | {r['docs']} |" for r in rows]
    return "\n".join(lines) + "\n"


__all__ = ["compare_records", "comparison_markdown"]

"""A natural corpus for the speed benchmark (issue 45): every distinct document of
several DocBins, each linked once.

Repeating the same test set 10 or 100 times measures the decision cache, not
the linker: real corpora repeat mentions, not whole documents. This gathers the
distinct documents of NCBI Disease and BC5CDR (train, dev and test) with their
gold mentions. Each kept document records the DocBin it came from in
`doc.user_data["bioel_source"]` (e.g. "ncbi/test"), so accuracy can be read on
the test part alone. A document whose text (whitespace collapsed) was already
kept is skipped and counted, never silently dropped.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Sequence, Tuple

SOURCE_KEY = "bioel_source"
MAX_EXAMPLES = 5


def distinct_documents(sources: Sequence[Tuple[str, Iterable]]) -> Tuple[List, Dict[str, object]]:
    """(name, docs) pairs -> the documents whose text was not seen before, in
    order, each marked with its source name, and what was read, kept and skipped."""
    first_seen: Dict[str, str] = {}
    kept: List = []
    report: Dict[str, object] = {"read": 0, "kept": 0, "mentions": 0, "duplicates": 0, "empty": 0,
                                 "per_source": {}, "duplicate_examples": []}
    for name, docs in sources:
        counts = {"read": 0, "kept": 0, "mentions": 0}
        for doc in docs:
            counts["read"] += 1
            key = " ".join(doc.text.split())
            if not key:
                report["empty"] += 1
                continue
            if key in first_seen:
                report["duplicates"] += 1
                if len(report["duplicate_examples"]) < MAX_EXAMPLES:
                    report["duplicate_examples"].append(
                        {"source": name, "first_seen_in": first_seen[key], "text": key[:80]})
                continue
            first_seen[key] = name
            doc.user_data[SOURCE_KEY] = name
            kept.append(doc)
            counts["kept"] += 1
            counts["mentions"] += len(doc.ents)
        report["per_source"][name] = counts
        for key in ("read", "kept", "mentions"):
            report[key] += counts[key]
    return kept, report


__all__ = ["distinct_documents", "SOURCE_KEY"]

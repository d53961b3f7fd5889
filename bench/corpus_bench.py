"""The corpus-linking benchmark (`python -m bench link-corpus-bench`): a
corpus of at least `min_docs` documents made of real abstracts repeated (each
copy with its own id), written as JSONL shards, linked by the local engine and
by Ray with 1, 2, ... workers; every Ray output must equal the local one
(documents, mentions, concepts, candidates; scores within 1e-4), and docs/s of
each run go into a table."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Sequence

from spacy_bioel.corpus_linking.records import Record, iter_shard, read_outputs


def build_corpus(sources: Sequence[Path], output_dir: Path, min_docs: int, shards: int) -> Dict[str, int]:
    """JSONL shards of the sources' documents repeated until `min_docs`; ids
    `<id>#<copy>`. RETURNS documents, mentions, copies, shards."""
    base: List[Record] = [r for source in sources for r in iter_shard(source)]
    copies = max(1, math.ceil(min_docs / max(len(base), 1)))
    rows = [{"id": f"{r['id']}#{c}", "text": r["text"],
             "entities": [{"start": s, "end": e, "label": label} for s, e, label in r["ents"] or []]}
            for c in range(copies) for r in base]
    output_dir.mkdir(parents=True, exist_ok=True)
    per_shard = math.ceil(len(rows) / shards)
    for i in range(shards):
        with open(output_dir / f"shard-{i:03d}.jsonl", "w", encoding="utf-8") as handle:
            for row in rows[i * per_shard:(i + 1) * per_shard]:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"documents": len(rows), "mentions": sum(len(r["entities"]) for r in rows),
            "source_documents": len(base), "copies": copies, "shards": shards}


def same_output(a_dir: Path, b_dir: Path, tolerance: float = 1e-4) -> Dict[str, Any]:
    """Whether two output folders hold the same linked documents (scores within
    `tolerance`: a mention's scores depend on the batch it was encoded in by
    float rounding). Documents are matched by id, and by text among documents
    that share an id (a corpus may repeat one). RETURNS counts of documents and
    of differing mentions."""
    def by_id(folder: Path) -> Dict[str, List[Record]]:
        groups: Dict[str, List[Record]] = {}
        for record in read_outputs(folder):
            groups.setdefault(record["id"], []).append(record)
        return {k: sorted(v, key=lambda r: r["text"]) for k, v in groups.items()}

    a, b = by_id(a_dir), by_id(b_dir)
    differing = 0
    for doc_id in a.keys() & b.keys():
        if len(a[doc_id]) != len(b[doc_id]):
            differing += 1
        for da, db in zip(a[doc_id], b[doc_id]):
            x, y = da["entities"], db["entities"]
            if da["text"] != db["text"] or len(x) != len(y):
                differing += max(len(x), len(y), 1)
                continue
            for p, q in zip(x, y):
                same = (p["start"], p["end"], p["kb_id"], p["is_nil"]) == \
                    (q["start"], q["end"], q["kb_id"], q["is_nil"]) \
                    and [c for c, _ in p["candidates"]] == [c for c, _ in q["candidates"]] \
                    and all(abs(s - t) <= tolerance
                            for (_, s), (_, t) in zip(p["candidates"], q["candidates"]))
                differing += not same
    count = lambda groups: sum(len(v) for v in groups.values())  # noqa: E731
    return {"documents_a": count(a), "documents_b": count(b), "only_in_one": len(a.keys() ^ b.keys()),
            "differing_mentions": differing,
            "identical": not (a.keys() ^ b.keys()) and differing == 0 and count(a) == count(b)}


def bench_figure(runs: Sequence[Dict[str, Any]], path: Path) -> Path:
    """Docs/s of each run as bars (the `plots` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['engine']}\n{r['workers']} worker{'s' if r['workers'] > 1 else ''}" for r in runs]
    fig, ax = plt.subplots(figsize=(1.6 * len(runs) + 2, 3.5))
    bars = ax.bar(labels, [r["docs_per_second"] for r in runs], color=[f"C{i}" for i in range(len(runs))])
    ax.bar_label(bars, fmt="%.1f")
    ax.set_ylabel("documents / s (load included)")
    ax.set_title("link-corpus")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


__all__ = ["bench_figure", "build_corpus", "same_output"]

"""The int8 name scan measured on a pipeline's own mentions (issue 46): how long
it takes, how often its best name is the exact search's, and whether a query's
answer depends on the queries scanned beside it.

Every distinct gold mention text of the data is encoded by the pipeline's
runtime (as it links), and the queries are scanned `call` at a time, as
`DenseCandidateStore.search_names` scans them. Compared:
- the exact best name (float32 matmul over the store's vectors) against the
  scan's first name and its `pool` proposed names;
- the same queries scanned in a shuffled order, one a call, and beside a query
  of 40 times their range: the share whose proposed rows changed and the
  largest change of a score (0 when each query is quantised alone).

    python -m bench scan-probe PIPELINE DATA.spacy --output OUT.json
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

EXACT_ROWS = 256  # queries per exact matmul over every name


def mention_texts(nlp: Any, data: Path) -> List[str]:
    """Distinct gold mention texts of `data`, in order of first sight."""
    from spacy.tokens import DocBin

    seen: Dict[str, None] = {}
    for doc in DocBin().from_disk(data).get_docs(nlp.vocab):
        for ent in doc.ents:
            seen.setdefault(ent.text, None)
    return list(seen)


def scan_all(scan: Any, queries: np.ndarray, call: int, pool: int) -> Tuple[np.ndarray, np.ndarray]:
    """(n, pool) rows and scores of every query, `call` queries a scan."""
    found = [scan.top(queries[i:i + call], pool) for i in range(0, len(queries), call)]
    return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])


def moved(a: Tuple[np.ndarray, np.ndarray], b: Tuple[np.ndarray, np.ndarray]) -> Dict[str, float]:
    """Share of queries whose proposed rows differ, whose first row differs, and the
    largest score difference between two scans of the same queries."""
    return {"rows_moved": float(np.mean((a[0] != b[0]).any(axis=1))),
            "top1_moved": float(np.mean(a[0][:, 0] != b[0][:, 0])),
            "max_score_diff": float(np.abs(a[1] - b[1]).max()) if len(a[1]) else 0.0}


def probe(pipeline: Path, data: Path, call: int = 64, pool: int = 256, repeats: int = 3,
          seed: int = 0) -> Dict[str, Any]:
    """RETURNS: the scan's seconds (each repeat), agreement with the exact search
    and its answers' dependence on the other queries of a call."""
    import typer

    from spacy_bioel.index.dense import INT8_TYPES
    from spacy_bioel.index.int8_scan import Int8Scan
    from spacy_bioel.pipeline.loading import load_pipeline

    nlp = load_pipeline(pipeline)
    linker = nlp.get_pipe("bioel_linker")
    store = linker.index.store
    if store.index_type not in INT8_TYPES:
        raise typer.BadParameter(f"{pipeline}: its name index is '{store.index_type}', not "
                                 f"{' or '.join(INT8_TYPES)}: give a pipeline that scans in int8",
                                 param_hint="PIPELINE")
    texts = mention_texts(nlp, data)
    queries = np.ascontiguousarray(linker.embed(texts, "mention"), dtype=np.float32)
    weights, scales, block = store.int8_names()
    scan = Int8Scan(weights, scales, store.dim, block)
    vectors = store.vectors()
    exact = np.concatenate([np.argmax(queries[i:i + EXACT_ROWS] @ np.asarray(vectors, dtype=np.float32).T,
                                      axis=1) for i in range(0, len(queries), EXACT_ROWS)])
    seconds, found = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        found = scan_all(scan, queries, call, pool)
        seconds.append(round(time.perf_counter() - start, 3))
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(queries))
    back = np.argsort(order)
    shuffled = tuple(x[back] for x in scan_all(scan, queries[order], call, pool))
    single = scan_all(scan, queries, 1, pool)
    first = min(call - 1, len(queries))
    wide = scan.top(np.vstack([queries[:first], 40 * queries[:1]]), pool)
    beside = moved((found[0][:first], found[1][:first]), (wide[0][:first], wide[1][:first]))
    return {"pipeline": str(pipeline), "data": str(data), "queries": len(queries),
            "names": int(len(scales)), "index_type": store.index_type, "call": call, "pool": pool,
            "scan_s": seconds, "scan_s_median": statistics.median(seconds),
            "top1_is_exact": float(np.mean(found[0][:, 0] == exact)),
            "exact_in_pool": float(np.mean((found[0] == exact[:, None]).any(axis=1))),
            "shuffled_calls": moved(found, shuffled), "one_query_a_call": moved(found, single),
            "beside_a_wide_query": beside}


def markdown(result: Dict[str, Any]) -> str:
    """The probe as one table row."""
    def share(part: Dict[str, float]) -> str:
        return (f"{100 * part['top1_moved']:.2f}% / {100 * part['rows_moved']:.2f}% "
                f"({part['max_score_diff']:.1e})")

    return ("| data | queries | names | scan s (median) | top-1 = exact | exact in pool | "
            "moved: shuffled calls | one a call | beside a wide query |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            f"| {result['data']} | {result['queries']:,} | {result['names']:,} | "
            f"{result['scan_s_median']:.2f} | {100 * result['top1_is_exact']:.2f}% | "
            f"{100 * result['exact_in_pool']:.2f}% | {share(result['shuffled_calls'])} | "
            f"{share(result['one_query_a_call'])} | {share(result['beside_a_wide_query'])} |\n\n"
            "Moved: the share of queries whose best name changed / whose proposed names changed "
            "(the largest change of a score), against the same queries scanned in order.\n")

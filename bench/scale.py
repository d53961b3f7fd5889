"""The index at UMLS scale: encode a KB of millions of names with a pipeline's
concept tower (chunked, float16, resumable through the embedding cache), build
approximate indexes over the vectors, and compare their top-k with exact search
on real mention queries.

Reported per index: build time, the memory the index takes (its serialized
size) and the process' RSS after building it, search time per query, and
recall@k against exact (flat) search over the same vectors, both over names
(the standard ANN measure: how many of the exact top-k names are found) and
over concepts (how many of the exact top-k concepts the linker's candidate
list keeps, each scored by its best name).
"""
from __future__ import annotations

import gc
import json
import logging
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from spacy_bioel.index.dense import DenseCandidateStore
from spacy_bioel.index.name_index import NameIndex
from spacy_bioel.index.names import NameTable
from .bioel_worker import peak_rss_mb  # VmHWM; it lives in the worker, which runs without this package

logger = logging.getLogger(__name__)


def rss_mb() -> float:
    """Current resident set size of this process (MB)."""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - not Linux


ENCODERS = ("torch", "onnx", "onnx-int8")


def encode_names(linker, names: NameTable, cache_dir: Path, dtype: str = "float16",
                 encode_with: str = "torch") -> Dict[str, Any]:
    """Embed every name with `linker`'s concept tower into the embedding cache
    (resumable); RETURNS the vectors (a memory map) and the encoding record.

    The record's `encode_s` is the whole KB's time at the rate of the run
    that finished it (`resumed_at` names were encoded by an earlier run).

    encode_with (str): "torch" (the pipeline's own vectors), "onnx" (the concept
        tower exported to ONNX, float32) or "onnx-int8" (dynamically quantised:
        about twice as fast on a CPU; its vectors differ slightly from the
        pipeline's, which recall against exact search over the same vectors
        does not depend on). The cache key names the encoder.
    """
    from spacy_bioel.pipeline.serialize import name_cache_key

    if encode_with not in ENCODERS:
        raise ValueError(f"encode_with must be one of {ENCODERS}, not {encode_with!r}")
    index = NameIndex(embedding_cache=str(cache_dir), vectors_dtype=dtype)
    index.set_names(names)
    linker.require_model("encoding the names")
    key = name_cache_key(linker, names.names)
    if encode_with == "torch":
        def encode(texts):
            return linker.embed(texts, "concept")
    else:
        from spacy_bioel.encoders.runtime import OnnxRuntime

        key = f"{key}-{encode_with}"
        runtime = OnnxRuntime(quantize="int8" if encode_with == "onnx-int8" else None,
                              batch_size=linker.cfg["encode_batch_size"], tower="concept")

        def encode(texts):
            return runtime.encode(linker.model, texts, linker.cfg["encode_batch_size"])
    record_path = cache_dir / f"names-{key}.encoding.json"
    start = time.perf_counter()
    vectors = index.cached_embeddings(encode, key, progress=True)
    seconds = time.perf_counter() - start
    if not record_path.exists():  # the run that encoded (the last part, when resumed)
        resumed_at = index.resumed_at
        encoded = len(names) - resumed_at
        record_path.write_text(json.dumps({
            "encode_s": seconds * len(names) / max(1, encoded), "names": len(names),
            "names_per_s": encoded / seconds, "encode_with": encode_with,
            "resumed_at": resumed_at, "this_part_s": seconds}), encoding="utf-8")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    record["this_run_s"] = seconds
    return {"vectors": vectors, "record": record}


def recall(approx: Sequence[Sequence[int]], exact: Sequence[Sequence[int]]) -> float:
    """Mean |approx ∩ exact| / |exact| over queries."""
    return float(np.mean([len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(approx, exact)]))


def exact_top(vectors: np.ndarray, names: NameTable, queries: np.ndarray, k: int,
              chunk: int = 65536) -> Dict[str, List[List[int]]]:
    """The exact top-k names and concepts of every query over all `vectors`,
    streaming through the names once (chunks end at concept boundaries, so each
    concept's best name is taken within one chunk); float16 vectors are
    converted a chunk at a time. RETURNS {'names': [...], 'concepts': [...]}."""
    from spacy_bioel.progress import progress_bar

    queries = np.ascontiguousarray(queries, dtype=np.float32)
    n, b = len(vectors), len(queries)
    top_names = np.full((b, 0), -1, dtype=np.int64)
    name_scores = np.full((b, 0), -np.inf, dtype=np.float32)
    top_concepts, concept_scores = top_names.copy(), name_scores.copy()
    offsets = np.r_[names.offsets, n]
    first = 0
    with progress_bar(total=n, desc="Exact search", unit=" names") as bar:
        while first < n:
            last = int(offsets[np.searchsorted(offsets, min(n, first + chunk), side="left")])
            last = n if last <= first else last
            scores = queries @ np.asarray(vectors[first:last], dtype=np.float32).T  # (b, chunk)
            rows = np.arange(first, last)
            top_names, name_scores = _merge(top_names, name_scores, rows, scores, k)
            starts = offsets[(offsets >= first) & (offsets < last)]
            best = np.maximum.reduceat(scores, starts - first, axis=1)  # (b, concepts in chunk)
            concepts = np.searchsorted(names.offsets, starts)
            top_concepts, concept_scores = _merge(top_concepts, concept_scores, concepts, best, k)
            bar.update(last - first)
            first = last
    return {"names": top_names.tolist(), "concepts": top_concepts.tolist()}


def _merge(ids: np.ndarray, scores: np.ndarray, new_ids: np.ndarray, new_scores: np.ndarray,
           k: int):
    """The best k of (ids, scores) and a new block of candidates, per row."""
    all_scores = np.concatenate([scores, new_scores], axis=1)
    all_ids = np.concatenate([ids, np.broadcast_to(new_ids, new_scores.shape)], axis=1)
    keep = min(k, all_scores.shape[1])
    part = np.argpartition(-all_scores, keep - 1, axis=1)[:, :keep]
    return np.take_along_axis(all_ids, part, axis=1), np.take_along_axis(all_scores, part, axis=1)


def benchmark_index(vectors: np.ndarray, names: NameTable, queries: np.ndarray,
                    settings: Sequence[Dict[str, Any]], k: int = 64) -> Dict[str, Any]:
    """Exact search, then each index setting: build, memory, search time, recall@k."""
    start = time.perf_counter()
    truth = exact_top(vectors, names, queries, k)
    exact_s = time.perf_counter() - start
    truth_names, truth_concepts = truth["names"], truth["concepts"]
    best_scores = [float(max(vectors[rows].astype(np.float32) @ query)) - 1e-6  # the best name's score
                   for query, rows in zip(queries, truth_names)]
    result: Dict[str, Any] = {"queries": len(queries), "k": k, "exact": {
        "search_ms_per_query": 1000 * exact_s / len(queries), "rss_mb": rss_mb()}, "indexes": []}
    for setting in settings:
        gc.collect()
        before = rss_mb()
        store = DenseCandidateStore(names.concept_ids, vectors.shape[1], **setting["build"])
        start = time.perf_counter()
        store.add(vectors, names.owners, names.tie_rank)
        build_s = time.perf_counter() - start
        import faiss
        index_mb = faiss.serialize_index(store.faiss_index).nbytes / 2 ** 20
        entry = {"setting": setting["label"], **setting["build"], "build_s": build_s,
                 "index_mb": index_mb, "rss_before_mb": before, "rss_after_mb": rss_mb(),
                 "peak_rss_mb": peak_rss_mb(), "search": []}
        for search in setting.get("search", [{}]):
            store.set_search_params(**search)
            start = time.perf_counter()
            found = store.search_names(queries, k, names=True)
            seconds = time.perf_counter() - start
            _, approx_names = store.faiss_index.search(np.ascontiguousarray(queries, np.float32), k)
            entry["search"].append({**search, "search_ms_per_query": 1000 * seconds / len(queries),
                                    "recall_names": recall(approx_names.tolist(), truth_names),
                                    "recall_concepts": recall([[c for c, _, _ in row] for row in found],
                                                              truth_concepts),
                                    "top1_found": float(np.mean([bool(f) and f[0][2] >= t for f, t in
                                                                 zip(found, best_scores)]))})
            logger.info("%s %s: recall@%d names %.3f concepts %.3f", setting["label"], search, k,
                        entry["search"][-1]["recall_names"], entry["search"][-1]["recall_concepts"])
        result["indexes"].append(entry)
        del store
    return result


def table(result: Dict[str, Any]) -> str:
    """Markdown: one row per index and search setting."""
    lines = [f"KB: {result.get('kb', '')}: {result.get('names', 0):,} names of "
             f"{result.get('concepts', 0):,} concepts; encoding {result.get('encoding', {}).get('encode_s', 0) / 60:.1f} min "
             f"({result.get('encoding', {}).get('names_per_s', 0):,.0f} names/s); "
             f"{result['queries']} queries; exact search {result['exact']['search_ms_per_query']:.1f} ms/query; "
             f"peak RSS {result.get('peak_rss_mb', 0):,.0f} MB", "",
             f"| index | build min | index MB | RSS after build MB | search | ms/query | "
             f"recall@{result['k']} names | recall@{result['k']} concepts | best name found |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for entry in result["indexes"]:
        for search in entry["search"]:
            params = ", ".join(f"{k}={v}" for k, v in search.items()
                               if k in ("nprobe", "ef_search")) or "default"
            lines.append(f"| {entry['setting']} | {entry['build_s'] / 60:.1f} | {entry['index_mb']:,.0f} | "
                         f"{entry['rss_after_mb']:,.0f} | {params} | {search['search_ms_per_query']:.2f} | "
                         f"{search['recall_names']:.3f} | {search['recall_concepts']:.3f} | "
                         f"{search['top1_found']:.3f} |")
    return "\n".join(lines) + "\n"


DEFAULT_SETTINGS = [
    {"label": "hnsw_sq8 (M=32)", "build": {"index_type": "hnsw_sq8", "hnsw_m": 32},
     "search": [{"ef_search": 128}, {"ef_search": 256}, {"ef_search": 512}]},
    {"label": "ivf_sq8", "build": {"index_type": "ivf_sq8", "ivf_lists": 0},
     "search": [{"nprobe": 32}, {"nprobe": 128}, {"nprobe": 512}]},
]


def mention_queries(linker, docs, sample: int, seed: int = 0) -> List[str]:
    """Distinct mention texts of `docs`, a seeded sample of at most `sample`."""
    texts = sorted({ent.text for doc in docs for ent in doc.ents})
    rng = np.random.default_rng(seed)
    if len(texts) > sample:
        texts = [texts[i] for i in sorted(rng.choice(len(texts), sample, replace=False))]
    return texts


__all__ = ["ENCODERS", "encode_names", "benchmark_index", "table", "DEFAULT_SETTINGS", "mention_queries",
           "recall", "rss_mb", "peak_rss_mb"]

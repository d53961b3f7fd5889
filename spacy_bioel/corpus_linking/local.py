"""The local engine: one process, one loaded pipeline, part files of `batch_docs`
documents each."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence

from ..progress import progress_bar
from .records import Record, iter_shard
from .worker import LinkWorker


def batches(shards: Sequence[Path], size: int) -> Iterator[List[Record]]:
    """Records of the shards in order, `size` at a time (a batch never spans two shards)."""
    for shard in shards:
        batch: List[Record] = []
        for record in iter_shard(shard):
            batch.append(record)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch


def link_local(shards: Sequence[Path], pipeline: str, output_dir: Path, *, batch_docs: int = 256,
               top: int = 5, threads: int = 0, strict: bool = False) -> Dict[str, Any]:
    """Link every shard in this process; RETURNS documents, mentions, skipped
    mentions (in all and per shard), parts, seconds."""
    started = time.perf_counter()
    worker = LinkWorker(pipeline, str(output_dir), top=top, threads=threads, strict=strict)
    loaded = time.perf_counter()
    summaries = []
    with progress_bar(desc="Linking documents", unit=" docs") as bar:
        for batch in batches(shards, batch_docs):
            summaries.append(worker.link_and_write(batch))
            bar.update(summaries[-1]["documents"])
    return {"engine": "local", "workers": 1, **summarize(summaries),
            "load_seconds": round(loaded - started, 2),
            "seconds": round(time.perf_counter() - started, 2)}


def summarize(summaries: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The counts of a run from its batches' summaries (`LinkWorker.link_and_write`)."""
    by_shard: Dict[str, int] = {}
    for summary in summaries:
        for shard, count in json.loads(summary["skipped_by_shard"]).items():
            by_shard[shard] = by_shard.get(shard, 0) + int(count)
    return {"documents": sum(int(s["documents"]) for s in summaries),
            "mentions": sum(int(s["mentions"]) for s in summaries),
            "skipped_mentions": sum(by_shard.values()), "skipped_by_shard": by_shard,
            "parts": len({s["part"] for s in summaries})}


__all__ = ["batches", "link_local", "summarize"]

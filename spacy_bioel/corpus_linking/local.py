"""The local engine: one process, one loaded pipeline, part files of `batch_docs`
documents each."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence

from ..progress import progress_bar
from .records import Record, iter_shard
from .worker import LinkWorker, summarize


def batches(shards: Sequence[Path], size: int) -> Iterator[List[Record]]:
    """Records of the shards in order, `size` at a time. A batch goes on into the
    next shard, so a folder of many small files (plain text notes, one document
    each) is linked in full batches and written in few part files; a part's name
    digests its documents' origins, so the same shards always make the same parts."""
    batch: List[Record] = []
    for shard in shards:
        for record in iter_shard(shard):
            batch.append(record)
            if len(batch) == size:
                yield batch
                batch = []
    if batch:
        yield batch


def link_local(shards: Sequence[Path], pipeline: str, output_dir: Path, *, batch_docs: int = 256,
               top: int = 5, threads: int = 0, strict: bool = False,
               id_space: str = "") -> Dict[str, Any]:
    """Link every shard in this process; RETURNS documents, mentions, skipped
    mentions (in all and per shard), parts, seconds."""
    started = time.perf_counter()
    worker = LinkWorker(pipeline, str(output_dir), top=top, threads=threads, strict=strict,
                        id_space=id_space)
    loaded = time.perf_counter()
    summaries = []
    with progress_bar(desc="Linking documents", unit=" docs") as bar:
        for batch in batches(shards, batch_docs):
            summaries.append(worker.link_and_write(batch))
            bar.update(summaries[-1]["documents"])
    return {"engine": "local", "workers": 1, **summarize(summaries),
            "load_seconds": round(loaded - started, 2),
            "seconds": round(time.perf_counter() - started, 2)}


__all__ = ["batches", "link_local"]

"""The Ray engine: Ray Data reads the shards (one read task per shard) and an
actor pool of `num_workers` LinkWorkers links them with `map_batches`; each
actor loads the pipeline once (the name index's vectors by memory map, so
actors on one node share the page cache) and writes one part file per batch.

Fault tolerance is Ray's: an actor that dies (killed, out of memory) is
restarted and its unfinished batches are retried (`max_restarts` and
`max_task_retries` are unlimited for Ray Data's actor pools). A retried batch
writes the part file named by its documents' ids again, whole, under a
temporary name first, so a batch is never written twice or half. The engine
then counts the documents of the output against the input (`--verify`).

On a cluster: start Ray on each node (`ray start --head` / `ray start
--address HEAD:6379`), put the pipeline, the input shards and the output
folder on storage every node sees (NFS, a shared disk), and pass
`--address auto` (or the head's address) from the head node.
"""
from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Sequence

from ..errors import BioELError, Errors

logger = logging.getLogger(__name__)


def _read_shard(row: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    import json

    from .records import iter_shard

    for record in iter_shard(row["shard"], start=row["start"], stop=row["stop"]):
        # always a JSON string ("null": the NER finds the mentions): a column of None only
        # would reach the actors as NaN floats (Ray infers a null column type)
        yield {"id": record["id"], "text": record["text"], "ents": json.dumps(record["ents"]),
               "extra": json.dumps({k: record[k] for k in EXTRA if record.get(k)}),
               "origin": json.dumps(record["origin"])}


EXTRA = ("groups", "unplaced", "repaired")  # a record's optional fields (`records`)


class _RayLinker:
    """One actor of the pool: a LinkWorker over batches of Ray Data rows."""

    def __init__(self, pipeline: str, output_dir: str, top: int, threads: int,
                 strict: bool = False, id_space: str = "") -> None:
        from .worker import LinkWorker

        self.worker = LinkWorker(pipeline, output_dir, top=top, threads=threads, strict=strict,
                                 id_space=id_space)

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        import json

        records = [{"id": str(i), "text": str(t), "ents": json.loads(e),
                    "origin": json.loads(o), **json.loads(x)}
                   for i, t, e, x, o in zip(batch["id"], batch["text"], batch["ents"],
                                            batch["extra"], batch["origin"])]
        summary = self.worker.link_and_write(records)
        return {key: [value] for key, value in summary.items()}



def link_ray(shards: Sequence[Path], pipeline: str, output_dir: Path, *, num_workers: int = 2,
             batch_docs: int = 256, top: int = 5, threads_per_worker: int = 1,
             address: Optional[str] = None, chunk_bytes: int = 8 * 2 ** 20,
             strict: bool = False, id_space: str = "") -> Dict[str, Any]:
    """Link every shard on Ray; RETURNS documents, mentions, parts, seconds.
    Work is spread by read task: one per shard, or per `chunk_bytes` of an
    uncompressed JSONL shard; many shards (PubMed's baseline comes as 1,000+
    files) spread best."""
    try:
        import ray
    except ImportError:
        raise BioELError(Errors.E204)
    started = time.perf_counter()
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING,
                 log_to_driver=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    pipeline = str(Path(pipeline).resolve()) if Path(pipeline).exists() else pipeline
    output_dir = Path(output_dir).resolve()
    from .records import shard_chunks

    # one read task per shard, or per `chunk_bytes` of an uncompressed JSONL shard
    chunks = [{"shard": p, "start": a, "stop": b} for s in shards
              for p, a, b in shard_chunks(Path(s).resolve(), chunk_bytes)]
    ds = ray.data.from_items(chunks, override_num_blocks=len(chunks))
    # reads reserve no CPU: with every CPU held by an actor they would never be scheduled; at
    # most one read task per actor at a time (without a bound, Ray starts a worker process
    # per read task: 24 for 21 small shards and one actor)
    ds = ds.flat_map(_read_shard, num_cpus=0, concurrency=max(1, min(len(chunks), num_workers)))
    ds = ds.map_batches(_RayLinker, batch_size=batch_docs,
                        compute=ray.data.ActorPoolStrategy(size=num_workers),
                        num_cpus=threads_per_worker, batch_format="numpy",
                        fn_constructor_kwargs={"pipeline": pipeline, "output_dir": str(output_dir),
                                               "top": top, "threads": threads_per_worker,
                                               "strict": strict, "id_space": id_space})
    try:
        summaries = ds.take_all()
    except Exception as err:  # Ray wraps a worker's error in its own types and a traceback
        raise coded_error(err) from None
    from .worker import summarize

    return {"engine": "ray", "workers": num_workers, "address": address or "local",
            **summarize(summaries), "seconds": round(time.perf_counter() - started, 2)}


CODED = re.compile(r"\[(E\d{3})\] ([^\n]*)")


def coded_error(err: BaseException) -> BioELError:
    """The BioELError a Ray task or actor raised, as the one-line error the local
    engine gives (Ray's exceptions carry it as their cause, or only in their text);
    anything else as E237 with the last line of the worker's traceback."""
    seen = set()
    cause: Optional[BaseException] = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, BioELError):
            return BioELError(str(cause))
        cause = getattr(cause, "cause", None) or cause.__cause__
    match = CODED.search(str(err))
    if match:
        return BioELError(f"[{match.group(1)}] {match.group(2)}")
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return BioELError(Errors.E237.format(engine="ray", problem=(lines[-1] if lines else
                                                                  type(err).__name__)[:300]))


__all__ = ["coded_error", "link_ray"]

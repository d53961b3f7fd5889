"""Linking a corpus of sharded files (`python -m spacy_bioel link-corpus`):
reading shards as records (`records`), linking batches of them with a loaded
pipeline (`worker`), and the engines that drive the workers: one process
(`local`) or a Ray Data actor pool (`ray_engine`)."""
from .records import iter_shard, list_shards, read_outputs
from .worker import LinkWorker

__all__ = ["LinkWorker", "iter_shard", "list_shards", "read_outputs"]

"""A folder of name embeddings that survives interruptions and concurrent writers.

One cache entry is the embeddings of one KB's names under one concept tower
(the key digests both). While it is written, each chunk of names is its own
file, `names-KEY.chunks/START-ROWS-SHA.npy`, written under a temporary name
and renamed, so a killed run leaves whole chunks and nothing else; a later run
resumes from the chunks that verify. When every chunk is there, they are
assembled into `names-KEY.npy` (renamed into place) with a record beside it,
`names-KEY.npy.json`, that holds its shape, dtype and SHA-256.

Nothing is trusted: a chunk is used only when its rows, width and dtype are
the expected ones and its bytes match the digest in its name; the assembled
file only when its record matches it. Anything else (a truncated or zero-filled
file, a cache of another width, a record that does not parse) is set aside
with a warning (W011) and encoded again. Writers on one entry take a lock on
`names-KEY.lock` (POSIX `flock`) so that the second waits for the first and
then reads its result; where locking is not available (some network file
systems) the atomic chunk files still keep two writers from corrupting each
other.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Callable, Dict, Iterator, Optional, Tuple

import numpy as np

from ..errors import BioELError, Errors, Warnings, warn
from ..files import replace_file, sha256_of

logger = logging.getLogger(__name__)
CHUNK_NAME = re.compile(r"^(\d{12})-(\d+)-([0-9a-f]{16})\.npy$")


class EmbeddingCache:
    """The cache entry `key` in `folder` for `rows` embeddings of dtype `dtype`.

    folder (Union[str, Path]): The cache folder (created on first write).
    key (str): The entry's key (names, encoder settings and weights digested).
    rows (int): How many names the entry holds.
    dtype (str): 'float32' or 'float16'.
    """

    def __init__(self, folder, key: str, rows: int, dtype: str) -> None:
        self.folder = Path(folder)
        suffix = "" if dtype == "float32" else "-f16"
        self.path = self.folder / f"names-{key}{suffix}.npy"
        self.record = self.path.with_name(self.path.name + ".json")
        self.chunks = self.folder / f"names-{key}{suffix}.chunks"
        self.rows, self.dtype = int(rows), np.dtype(dtype)

    # -- the assembled entry ---------------------------------------------------------------
    def load(self, dim: int) -> Optional[np.ndarray]:
        """The verified embeddings (a read-only memory map), or None."""
        if not self.path.exists():
            return None
        problem = self._check_whole(dim)
        if problem is None:
            logger.info("Read %d name embeddings from %s", self.rows, self.path)
            return np.load(self.path, mmap_mode="r", allow_pickle=False)
        warn(Warnings.W011.format(count=1, path=self.path, problem=problem))
        self._discard(self.path)
        self._discard(self.record)
        return None

    def _check_whole(self, dim: int) -> Optional[str]:
        try:
            record = json.loads(self.record.read_text(encoding="utf-8"))
            shape, dtype, digest = tuple(record["shape"]), record["dtype"], record["sha256"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            return f"no readable record beside it ({type(err).__name__})"
        if shape != (self.rows, dim) or dtype != self.dtype.name:
            return f"shape {list(shape)} {dtype}, expected [{self.rows}, {dim}] {self.dtype.name}"
        problem = self._check_array(self.path, (self.rows, dim))
        if problem is None and sha256_of(self.path) != digest:
            problem = "its SHA-256 differs from its record's"
        return problem

    def _check_array(self, path: Path, shape: Tuple[int, int]) -> Optional[str]:
        try:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as err:
            return f"unreadable ({type(err).__name__}: {str(err)[:80]})"
        if array.shape != shape or array.dtype != self.dtype:
            return f"shape {list(array.shape)} {array.dtype}, expected {list(shape)} {self.dtype.name}"
        return None

    # -- chunks --------------------------------------------------------------------------
    def verified_chunks(self, dim: int, size: int) -> Dict[int, Path]:
        """The chunk files that verify, by first row; the others are removed (W011)."""
        found: Dict[int, Path] = {}
        bad = []
        if not self.chunks.is_dir():
            return found
        for path in sorted(self.chunks.iterdir()):
            match = CHUNK_NAME.match(path.name)
            if match is None:
                if not path.name.startswith("."):  # another writer's temporary file
                    bad.append((path, "not a chunk file"))
                continue
            start, rows = int(match.group(1)), int(match.group(2))
            expected = min(size, self.rows - start) if start < self.rows else 0
            if start in found:
                continue  # a second writer's copy of the same chunk
            if start % size or rows != expected or expected <= 0:
                bad.append((path, f"rows {start}+{rows} do not fit chunks of {size}"))
                continue
            problem = self._check_array(path, (rows, dim))
            if problem is None and not sha256_of(path).startswith(match.group(3)):
                problem = "its SHA-256 differs from its name's"
            if problem is not None:
                bad.append((path, problem))
                continue
            found[start] = path
        if bad:
            warn(Warnings.W011.format(count=len(bad), path=self.chunks, problem="; ".join(
                f"{p.name}: {why}" for p, why in bad[:3]) + (" ..." if len(bad) > 3 else "")))
            for path, _ in bad:
                self._discard(path)
        return found

    def write_chunk(self, start: int, embeddings: np.ndarray) -> Path:
        """Write the rows from `start` as one chunk file (temporary name, then rename)."""
        self.chunks.mkdir(parents=True, exist_ok=True)
        array = np.ascontiguousarray(embeddings, dtype=self.dtype)
        partial = self.chunks / f".{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with open(partial, "wb") as handle:
                np.save(handle, array, allow_pickle=False)
            digest = sha256_of(partial)[:16]
            target = self.chunks / f"{start:012d}-{len(array)}-{digest}.npy"
            os.replace(partial, target)
        finally:
            if partial.exists():
                partial.unlink()
        return target

    def assemble(self, chunks: Dict[int, Path], dim: int) -> np.ndarray:
        """Join the chunks into the entry's file and record, then drop the chunks.
        RETURNS (np.ndarray): the embeddings (a read-only memory map)."""
        def write(partial: Path) -> None:  # the record first: a file never stands without one
            out = np.lib.format.open_memmap(partial, mode="w+", dtype=self.dtype,
                                            shape=(self.rows, dim))
            for start, path in sorted(chunks.items()):
                block = np.load(path, allow_pickle=False)
                out[start:start + len(block)] = block
            out.flush()
            del out
            record = {"shape": [self.rows, dim], "dtype": self.dtype.name,
                      "sha256": sha256_of(partial)}
            replace_file(self.record, lambda p: p.write_text(json.dumps(record), encoding="utf-8"))
        replace_file(self.path, write)
        shutil.rmtree(self.chunks, ignore_errors=True)
        return np.load(self.path, mmap_mode="r", allow_pickle=False)

    # -- writers -------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the entry's lock (a second writer waits here); without POSIX locks, or
        where the file system refuses them, go on without it."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise BioELError(Errors.E238.format(path=self.folder, problem=f"{type(err).__name__}: {err}"))
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the chunk files alone
            yield
            return
        handle = open(self.path.with_suffix(".lock"), "a+")
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                logger.info("Waiting for another process encoding into %s", self.path.name)
                fcntl.flock(handle, fcntl.LOCK_EX)
            except OSError as err:  # e.g. a network file system without locks
                logger.warning("No lock on %s (%s): writing chunk files without it",
                               self.path.name, err)
            yield
        finally:
            handle.close()  # releases the lock

    @staticmethod
    def _discard(path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass


def cached_embeddings(cache: EmbeddingCache, dim: int, size: int,
                      encode_range: Callable[[int, int], np.ndarray],
                      on_chunk: Optional[Callable[[int], None]] = None) -> Tuple[np.ndarray, int]:
    """The entry's embeddings: read when it verifies, else encoded chunk by chunk
    (`encode_range(start, stop)`), resuming from the chunks that verify.
    RETURNS (Tuple[np.ndarray, int]): the embeddings and how many rows earlier runs
    had encoded (the verified chunks found on starting). A complete entry is read
    without the lock (it is renamed into place whole); a folder this process cannot
    write (a read-only cache) is read, and what it lacks is encoded and not saved."""
    if cache.path.exists():
        whole = cache.load(dim)
        if whole is not None:
            return whole, cache.rows
    if cache.folder.is_dir() and not os.access(cache.folder, os.W_OK):
        logger.warning("The embedding cache %s is read-only and has no entry for these %d "
                       "names: they are encoded and not saved", cache.folder, cache.rows)
        parts = []
        for start in range(0, cache.rows, size):
            parts.append(encode_range(start, min(cache.rows, start + size)))
            if on_chunk is not None:
                on_chunk(start)
        return (np.concatenate(parts).astype(cache.dtype, copy=False) if parts else
                np.zeros((0, dim), dtype=cache.dtype)), 0
    with cache.lock():
        whole = cache.load(dim)
        if whole is not None:
            return whole, cache.rows
        chunks = cache.verified_chunks(dim, size)
        resumed = sum(min(size, cache.rows - start) for start in chunks)
        if chunks:
            logger.info("Resuming the encoding of %s: %d of %d names are cached",
                        cache.path.name, resumed, cache.rows)
        for start in range(0, cache.rows, size):
            if start not in chunks:
                chunks[start] = cache.write_chunk(start, encode_range(start, min(cache.rows, start + size)))
            if on_chunk is not None:
                on_chunk(start)
        return cache.assemble(chunks, dim), resumed


__all__ = ["EmbeddingCache", "cached_embeddings"]

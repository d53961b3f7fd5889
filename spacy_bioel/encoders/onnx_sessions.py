"""ONNX Runtime sessions of this process: opened with the project's options, and
dropped in a forked worker (`nlp.pipe(n_process=N)`), which opens its own.

Owners are objects with a `_session` attribute (the ONNX mention runtime, the
int8 name scan of a `flat_int8` index); `track` registers one.
"""
from __future__ import annotations

import logging
import os
import weakref
from pathlib import Path
from typing import Any, Dict, Optional, Union

from ..errors import BioELError, Errors
from .int8_exact import EXTERNAL_FOLDER, exact_graph, read_inline, u8s8_saturates, whole_graph
from .threads import child_threads, limit_threads

logger = logging.getLogger(__name__)
_OWNERS: "weakref.WeakSet" = weakref.WeakSet()
_SHARED_ARENA: Optional[bool] = None  # whether this process' ONNX Runtime has the shared arena
_FORKED = False
_CAP = 0  # intra-op threads of the sessions opened from now on (0: all cores; `cap_threads`)


def track(owner: Any) -> None:
    """Drop `owner._session` in a forked child (see `_after_fork_in_child`)."""
    _OWNERS.add(owner)


def _after_fork_in_child() -> None:
    """A session's thread pool does not survive `fork`: each worker opens its
    sessions anew, with $SPACY_BIOEL_CHILD_THREADS threads. The inherited session
    is never destroyed in the worker: its destructor would wait forever for
    threads that exist only in the parent (multiprocessing ends workers with
    os._exit, so nothing tears it down later either)."""
    import ctypes

    global _FORKED
    _FORKED = True
    for owner in list(_OWNERS):
        if getattr(owner, "_session", None) is not None:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(owner._session))  # kept alive on purpose
            owner._session = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def cap_threads(threads: int) -> None:
    """Give every session of this process at most `threads` intra-op threads
    (a corpus-linking worker's share of the cores): the open ones are dropped
    and reopen on their next use (their owners keep what they were opened from)."""
    global _CAP
    _CAP = max(0, int(threads))
    for owner in list(_OWNERS):
        if getattr(owner, "_session", None) is not None:
            owner._session = None


def shared_arena(onnxruntime) -> bool:
    """Register one CPU memory arena with ONNX Runtime's environment, once a
    process, for every session this module opens (`session.use_env_allocators`).
    The mention tower, the name scan and the NER run one after the other, so one
    arena serves them all: it holds the largest call's buffers, where one arena a
    session held each session's own largest. With the sessions' memory patterns
    off (pre-planned blocks per input shape, kept for every shape a call had), the
    default linking the natural corpus peaked 8-9 MB lower at the same speed
    (docs/results/speed.md). Whether sessions can use it: an ONNX Runtime without
    the call, or with a CPU arena registered by other code, keeps one per session."""
    global _SHARED_ARENA
    if _SHARED_ARENA is None:
        try:
            info = onnxruntime.OrtMemoryInfo("Cpu", onnxruntime.OrtAllocatorType.ORT_ARENA_ALLOCATOR,
                                             0, onnxruntime.OrtMemType.DEFAULT)
            # max_mem 0 (no cap), extend by powers of two (ONNX Runtime's default), chunk and
            # dead-byte settings at their defaults (-1)
            onnxruntime.create_and_register_allocator(info, onnxruntime.OrtArenaCfg(0, 0, -1, -1))
            _SHARED_ARENA = True
        except Exception:  # noqa: BLE001 - an older ONNX Runtime, or one registered already
            _SHARED_ARENA = False
    return _SHARED_ARENA


def new_session(source: Union[bytes, str], threads: int = 0, exact: bool = True,
                inline: Optional[Dict[str, Any]] = None):
    """An ONNX Runtime CPU session of a graph (bytes or a file path): `threads`
    intra-op threads (0: all cores, or `cap_threads`' cap, or
    $SPACY_BIOEL_CHILD_THREADS in a forked worker), whose idle threads spin
    between the calls' operators (ONNX Runtime's default: the encoder's many small
    operators wait on no wake-up; docs/results/speed.md). Its memory arena (the
    process' one, `shared_arena`) keeps the score buffers of a block of queries
    for the next block: without an arena, where glibc's thresholds are static
    (`allocator`), every block mapped and zeroed fresh pages, slower for little
    memory (docs/results/speed.md). On a CPU whose kernel saturates uint8 x int8
    products, the graph's shifted int8 matmuls are made exact first
    (`int8_exact`); weights that rewrite reads from the graph's external file are
    given to the session as initializers, which it uses as they are (not
    pre-packed: a second copy, more memory, and slower here). `exact` False:
    a graph known to have no such matmul (the uint8 name scan), opened as it is
    (the check parses the graph with `onnx`). `inline`: the record saved with
    graph bytes (`int8_exact.inline_unsigned`), which such a CPU opens instead,
    without `onnx`. E178 without onnxruntime."""
    try:
        import onnxruntime
    except ImportError as err:
        raise BioELError(Errors.E178.format(missing="onnxruntime")) from err
    if threads:
        limit_threads(threads)
    if exact and inline is not None and isinstance(source, bytes) and u8s8_saturates():
        found = read_inline(source, inline)
        if found is not None and found[0] is None:
            return _session(onnxruntime, source, {}, threads, {})
        if found is not None:
            try:
                return _session(onnxruntime, found[0], found[1], threads, {}, external=True)
            except Exception:  # noqa: BLE001 - an ONNX Runtime without add_external_initializers
                logger.debug("the inline record could not be opened: the graph is rewritten")
    graph, weights = exact_graph(source) if exact else (source, {})
    if graph is not source and not isinstance(source, bytes):
        # the rewritten graph's bytes name the other weights of the file it was read from:
        # mapped from there as before, not read whole (a lower peak)
        try:
            return _session(onnxruntime, graph, weights, threads,
                            {EXTERNAL_FOLDER: str(Path(source).resolve().parent)})
        except Exception:  # an ONNX Runtime without that option: the weights read whole
            graph, weights = exact_graph(whole_graph(source))
    return _session(onnxruntime, graph, weights, threads, {})


def _session(onnxruntime, graph, weights: Dict[str, Any], threads: int, entries: Dict[str, str],
             external: bool = False):
    """`new_session`'s session of `graph`, given `weights` (name -> array) as
    initializers (`external`: as the data of initializers the graph declares
    external, `add_external_initializers`) and the session config `entries`."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads or (child_threads() if _FORKED else _CAP)
    options.inter_op_num_threads = 1
    options.enable_mem_pattern = False  # with the shared arena: lower peak, same speed
    if shared_arena(onnxruntime):
        options.add_session_config_entry("session.use_env_allocators", "1")
    # each OrtValue wraps its array without a copy; the session keeps them (below)
    values = {name: onnxruntime.OrtValue.ortvalue_from_numpy(array) for name, array in weights.items()}
    if external and values:
        options.add_external_initializers(list(values), list(values.values()))
    elif values:
        for name, value in values.items():
            options.add_initializer(name, value)
    if values:
        options.add_session_config_entry("session.disable_prepacking", "1")
    for key, value in entries.items():
        options.add_session_config_entry(key, value)
    session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    session.bioel_weights = values  # ONNX Runtime reads them for as long as the session lives
    return session


__all__ = ["track", "new_session", "cap_threads", "shared_arena"]

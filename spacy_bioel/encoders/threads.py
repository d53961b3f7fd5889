"""Thread pools and forked processes.

`nlp.pipe(docs, n_process=2)` forks the parent (spaCy uses multiprocessing's
default start method, `fork` on Linux). A forked child inherits the parent's
OpenMP state but not its worker threads: once the parent has run a parallel
region (torch's intra-op pool, FAISS search), the child's first parallel region
waits forever for threads that do not exist (scispaCy #345; PyTorch runs its
DataLoader workers with one thread for the same reason). The handler installed
here runs in every forked child before anything else: it sets torch's and
FAISS's thread counts to $SPACY_BIOEL_CHILD_THREADS (default 1, so n_process
workers do not oversubscribe the cores) and turns off the tokenizers library's
own parallelism.
"""
from __future__ import annotations

import os
import sys

CHILD_THREADS_ENV = "SPACY_BIOEL_CHILD_THREADS"
_installed = False


def child_threads() -> int:
    """Threads per forked worker: $SPACY_BIOEL_CHILD_THREADS, default 1."""
    value = os.environ.get(CHILD_THREADS_ENV, "1")
    return max(1, int(value)) if value.strip().isdigit() else 1


def _after_fork_in_child() -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    _openmp_threads(child_threads())


def _openmp_threads(threads: int) -> None:
    """Set the OpenMP pools of PyTorch and FAISS, where they are loaded."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    faiss = sys.modules.get("faiss")
    if faiss is not None and hasattr(faiss, "omp_set_num_threads"):
        faiss.omp_set_num_threads(threads)


def limit_threads(threads: int) -> None:
    """Cap the threads of PyTorch, FAISS and the BLAS behind numpy (which scores
    the name index) at `threads` for this process (the `runtime` stage's
    `threads` setting). Libraries that are not loaded are left alone."""
    _openmp_threads(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return
    threadpool_limits(limits=threads)


def install_fork_handler() -> None:
    """Register the child-side handler once per process (idempotent)."""
    global _installed
    if _installed or not hasattr(os, "register_at_fork"):
        return
    os.register_at_fork(after_in_child=_after_fork_in_child)
    _installed = True


__all__ = ["install_fork_handler", "child_threads", "limit_threads", "CHILD_THREADS_ENV"]

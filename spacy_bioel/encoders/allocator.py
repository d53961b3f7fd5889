"""How a process that loads a pipeline to predict with ONNX Runtime where PyTorch
is not imported (the serving environment: `OnnxRuntime.from_disk` calls both,
once a process) allocates and collects: glibc's malloc thresholds made static
(`static_thresholds`), and what is loaded by then frozen for Python's cyclic
garbage collector (`freeze_loaded`).

glibc serves a block above its mmap threshold (128 KiB at start) from a mapping
of its own, returned to the system when freed. But each time such a block is
freed it raises the threshold to that block's size (up to 32 MiB on 64-bit) and
the trim threshold to twice it: from then on, blocks of that size come from the
heap and stay resident once freed. Loading a pipeline frees many such blocks
(the KB's inflated payload, the ONNX graph's bytes, msgpack buffers), so the
score matrices and activations of linking land in a heap that only grows. Any
`mallopt` call turns that adjustment off; setting both thresholds to glibc's
starting 128 KiB keeps large blocks in their own mappings.

It lowers the peak memory of linking (docs/results/speed.md). It is left alone
where PyTorch is imported (with PyTorch installed, spaCy imports it): its CPU
tensors would each map and zero fresh pages, and training slows down. Set
SPACY_BIOEL_MALLOC=dynamic to keep glibc's behaviour everywhere. Other C
libraries (musl, macOS, Windows) are left alone.

The collector: a full collection traverses every tracked object, loading leaves
many (spaCy's, numpy's and ONNX Runtime's modules, the KB's concepts), and the
objects that linking leaves alive (each mention's extension values) make CPython
run one in the middle of linking, where a process with PyTorch imported (a
larger heap) runs none (docs/results/speed.md). `gc.freeze()` moves what is alive to a generation
that is never traversed again. Frozen objects are still freed by reference
counting; only reference cycles alive at that moment stay for the life of the
process, so it is done once, right after the first pipeline is loaded. Set
SPACY_BIOEL_GC=default to leave the collector alone.

References:
    glibc manual, "Malloc Tunable Parameters" (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD);
    mallopt(3), "M_MMAP_THRESHOLD ... dynamic adjustment";
    Python docs, gc.freeze.
"""
from __future__ import annotations

import ctypes
import logging
import os
import sys

logger = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
THRESHOLD = 128 * 1024  # glibc's starting value of both
OPT_OUT = "SPACY_BIOEL_MALLOC"
GC_OPT_OUT = "SPACY_BIOEL_GC"
_applied = False
_frozen = False


def static_thresholds() -> bool:
    """Fix glibc's mmap and trim thresholds at 128 KiB for this process (once;
    not where PyTorch is imported, with SPACY_BIOEL_MALLOC=dynamic, nor outside
    glibc).

    RETURNS (bool): Whether the thresholds are static now."""
    global _applied
    if _applied:
        return True
    opted_out = os.environ.get(OPT_OUT, "").strip().lower() == "dynamic"
    if opted_out or sys.modules.get("torch") is not None or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _applied = mallopt(M_MMAP_THRESHOLD, THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, THRESHOLD) == 1
    if _applied:
        logger.debug("glibc malloc thresholds fixed at %d bytes (%s=dynamic keeps them dynamic)",
                     THRESHOLD, OPT_OUT)
    return _applied


def freeze_loaded() -> bool:
    """`gc.freeze()` what this process holds now, once (not where PyTorch is
    imported, nor with SPACY_BIOEL_GC=default).

    RETURNS (bool): Whether it is frozen (now or before)."""
    global _frozen
    if _frozen:
        return True
    if os.environ.get(GC_OPT_OUT, "").strip().lower() == "default" or sys.modules.get("torch") is not None:
        return False
    import gc

    gc.freeze()
    _frozen = True
    logger.debug("%d objects frozen for the garbage collector (%s=default leaves it alone)",
                 gc.get_freeze_count(), GC_OPT_OUT)
    return True


__all__ = ["static_thresholds", "freeze_loaded", "THRESHOLD", "OPT_OUT", "GC_OPT_OUT"]

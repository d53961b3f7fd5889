"""glibc's malloc thresholds made static in a process that loads a pipeline to
predict with ONNX Runtime where PyTorch is not imported (the serving
environment: `OnnxRuntime.from_disk` calls `static_thresholds`).

glibc serves a block above its mmap threshold (128 KiB at start) from a mapping
of its own, returned to the system when freed. But each time such a block is
freed it raises the threshold to that block's size (up to 32 MiB on 64-bit) and
the trim threshold to twice it: from then on, blocks of that size come from the
heap and stay resident once freed. Loading a pipeline frees many such blocks
(the KB's inflated payload, the ONNX graph's bytes, msgpack buffers), so the
score matrices and activations of linking land in a heap that only grows. Any
`mallopt` call turns that adjustment off; setting both thresholds to glibc's
starting 128 KiB keeps large blocks in their own mappings.

Measured on NCBI test x1 with the default pipeline in a PyTorch-free
environment (one process, VmHWM): peak 330-362 MB with the dynamic thresholds,
297 MB with static ones (loaded: 230 -> 208 MB); docs/results/speed.md.

Left alone where PyTorch is imported (with PyTorch installed, spaCy imports it):
its CPU tensors would each map and zero fresh pages (training MiniLM on 2 cores
took 4.4-4.6 s with the dynamic thresholds and 5.8-6.1 s with static ones). Set
SPACY_BIOEL_MALLOC=dynamic to keep glibc's behaviour everywhere. Other C
libraries (musl, macOS, Windows) are left alone.

References:
    glibc manual, "Malloc Tunable Parameters" (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD);
    mallopt(3), "M_MMAP_THRESHOLD ... dynamic adjustment".
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
_applied = False


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


__all__ = ["static_thresholds", "THRESHOLD", "OPT_OUT"]

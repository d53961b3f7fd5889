"""Where a measurement ran (issue 74): the CPU (its model, the vector extensions
int8 speed depends on, its cores), the install (PyTorch installed, imported),
the threads the process may use, the versions, and the door the pipeline came
through. Every speed row of the lab carries `where()`; `where_line` says it in
one line under a table.

Standard library only: the side-by-side workers import it as a plain module
from other environments (scispaCy's, the base install's).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import platform
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

# the extensions that decide the int8 kernels (VNNI adds u8 x s8 products exactly; AVX2
# without it saturates them, `spacy_bioel.encoders.int8_exact`)
EXTENSIONS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
# environment variables that set a library's thread count
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "SPACY_BIOEL_CHILD_THREADS")
PACKAGES = ("spacy", "numpy", "onnxruntime", "torch", "spacy_bioel", "scispacy")


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> str:
    """/proc/cpuinfo, read once a process ("" where there is none)."""
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpu_flags() -> List[str]:
    """The vector extensions of EXTENSIONS this CPU has (Linux; [] elsewhere)."""
    flags = next((line.split(":", 1)[1].split() for line in _cpuinfo().splitlines()
                  if line.startswith("flags")), [])
    return [name for name in EXTENSIONS if name in flags]


def usable_cores() -> int:
    """The logical cores this process may run on (its affinity), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_name() -> str:
    """The CPU's model name, the vector extensions that matter to int8 and the
    logical cores (Linux: /proc/cpuinfo), else what `platform` says."""
    info = _cpuinfo()
    if not info:
        return platform.processor() or platform.machine()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), platform.machine())
    return f"{model} ({', '.join(cpu_flags()) or 'no AVX2'}; {os.cpu_count()} logical cores)"


def _version(name: str) -> Optional[str]:
    if importlib.util.find_spec(name) is None:
        return None
    if name not in sys.modules:  # not imported here: read the installed metadata only
        from importlib import metadata

        try:
            return metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            return "installed"
    return str(getattr(sys.modules[name], "__version__", "installed"))


def where(door: Optional[str] = None) -> Dict[str, Any]:
    """The record a speed row carries (see the module)."""
    return {"cpu": cpu_name(), "cpu_flags": cpu_flags(), "logical_cores": os.cpu_count(),
            "usable_cores": usable_cores(),
            "torch_installed": importlib.util.find_spec("torch") is not None,
            "torch_imported": sys.modules.get("torch") is not None,
            "thread_variables": {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
            "python": platform.python_version(),
            "versions": {name: _version(name) for name in PACKAGES},
            "door": door}


def where_line(record: Optional[Dict[str, Any]]) -> str:
    """One line: CPU; install; threads; door (an empty string for no record)."""
    if not record:
        return ""
    torch = ("PyTorch not installed" if not record.get("torch_installed") else
             "PyTorch installed, " + ("imported" if record.get("torch_imported") else "not imported"))
    threads = f"{record.get('usable_cores')} usable cores"
    if record.get("thread_variables"):
        threads += " (" + ", ".join(f"{k}={v}" for k, v in record["thread_variables"].items()) + ")"
    parts = [record.get("cpu", "?"), torch, threads, f"Python {record.get('python')}"]
    if record.get("door"):
        parts.append(f"door: {record['door']}")
    return "; ".join(parts)


__all__ = ["THREAD_VARIABLES", "cpu_flags", "cpu_name", "usable_cores", "where", "where_line"]

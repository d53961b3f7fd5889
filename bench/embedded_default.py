"""What `python -m spacy_bioel link` costs with no trained pipeline: the first
call (the KB's names encoded, the pipeline built) and the calls after it, for
the default pipeline (`pipeline.embedded_default`: saved once, then loaded on
ONNX Runtime with the int8 name scan) against the untrained PyTorch pipeline it
replaced (built every call, its names read from the embedding cache).

Each call is a fresh process running the `link` command; the PyTorch path runs
it as an environment without the `onnx` extra does (`default_pipeline` then
builds the factory's untrained pipeline every call). Each path has a fresh
cache folder, so the first call of each pays the whole build. The
parent times the process from start to exit; the child reports its peak RSS.

    python -m bench embedded-default results/natural/embedded_default.json --calls 3
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

PATHS = ("default", "torch")

_CHILD = """
import json, resource, sys
path, kb, encoder = sys.argv[1:4]
args = ["link", "--kb", kb, "--encoder", encoder]
from spacy_bioel.launch import hide_torch_from_thinc, serves_without_torch
if path != "torch" and serves_without_torch(args):  # as `python -m spacy_bioel link` does
    hide_torch_from_thinc()
from typer.testing import CliRunner
from spacy_bioel.cli import app
from spacy_bioel.pipeline import embedded_default
if path == "torch":  # the untrained pipeline it replaced: PyTorch, a flat index, built every call
    base = embedded_default.fast_config()
    embedded_default.fast_config = lambda: {
        **base, "runtime": {"@misc": "spacy-bioel.TorchRuntime.v1", "threads": 0, "batch_size": 64},
        "index": {**base["index"], "index_type": "flat"}, "shortcut": None, "top_k": 64,
        "retrieve_k": 64}
    embedded_default.pipeline_key = lambda *args, **kwargs: None  # not saved: built every call
result = CliRunner().invoke(app, args)
assert result.exit_code == 0, result.output
import importlib.util
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "torch_imported": "torch" in sys.modules, "chars": len(result.output),
                  "torch_installed": importlib.util.find_spec("torch") is not None}))
"""


def one_call(path: str, kb: str, encoder: str, cache: Path,
             python: str = sys.executable) -> Dict[str, Any]:
    """One `link` call in a fresh process of `python`: wall seconds, peak RSS,
    whether PyTorch was imported (and is installed)."""
    env = dict(os.environ, SPACY_BIOEL_CACHE=str(cache))
    # bytecode is written and read, as for an installed wheel (pip compiles it): a later call
    # that compiled the package's sources again would time the compiler (0.2-0.3 s)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    done = subprocess.run([python, "-c", _CHILD, path, kb, encoder], env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the {path} call failed:\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {"seconds": round(seconds, 2), **report}


def run(kb: str, encoder: str, calls: int) -> Dict[str, Any]:
    """`calls` calls of each path, each path on its own fresh cache folder."""
    result: Dict[str, Any] = {"kb": kb, "encoder": encoder, "calls": calls, "paths": {}}
    for path in PATHS:
        with tempfile.TemporaryDirectory(prefix=f"bioel-{path}-") as cache:
            rows: List[Dict[str, Any]] = [one_call(path, kb, encoder, Path(cache))
                                          for _ in range(calls)]
            size = sum(p.stat().st_size for p in Path(cache).rglob("*") if p.is_file())
        result["paths"][path] = {"calls": rows, "cache_bytes": size}
    return result


def table(result: Dict[str, Any]) -> str:
    lines = [f"`link` with no trained pipeline: KB {result['kb']}, encoder {result['encoder']}, "
             "each call a fresh process.\n",
             "| path | first call s | first call peak MB | later calls s (min / median) | later peak MB | PyTorch imported later | cache MB |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for path, entry in result["paths"].items():
        first, later = entry["calls"][0], entry["calls"][1:]
        secs = sorted(c["seconds"] for c in later)
        median = secs[len(secs) // 2] if secs else float("nan")
        lines.append(f"| {path} | {first['seconds']:.1f} | {first['peak_rss_mb']:.0f} | "
                     f"{min(secs) if secs else float('nan'):.2f} / {median:.2f} | "
                     f"{max((c['peak_rss_mb'] for c in later), default=float('nan')):.0f} | "
                     f"{'yes' if any(c['torch_imported'] for c in later) else 'no'} | "
                     f"{entry['cache_bytes'] / 2**20:.0f} |")
    return "\n".join(lines) + "\n"


__all__ = ["run", "table", "one_call", "PATHS"]

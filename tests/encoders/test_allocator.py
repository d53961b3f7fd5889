"""glibc's malloc thresholds are made static only where PyTorch is not imported
(the serving environment), once, and never with SPACY_BIOEL_MALLOC=dynamic."""
import os
import platform
import subprocess
import sys

import pytest

from spacy_bioel.encoders import allocator

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
PROBE = ("import sys; sys.modules['torch'] = None  # as where PyTorch is not installed\n"
         "from spacy_bioel.encoders.allocator import static_thresholds\n"
         "print(static_thresholds(), static_thresholds())\n")


def run_probe(**env):
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env}, cwd=os.getcwd())
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt only")
def test_static_without_torch_and_not_with_the_opt_out():
    assert run_probe() == ["True", "True"]  # applied once, then reported as applied
    assert run_probe(SPACY_BIOEL_MALLOC="dynamic") == ["False", "False"]


def test_left_alone_where_torch_is_imported(monkeypatch):
    monkeypatch.setattr(allocator, "_applied", False)
    monkeypatch.setitem(sys.modules, "torch", object())  # imported, as spaCy does where installed
    assert allocator.static_thresholds() is False and allocator._applied is False


GC_PROBE = ("import gc, sys; sys.modules['torch'] = None  # as where PyTorch is not installed\n"
            "from spacy_bioel.encoders.allocator import freeze_loaded\n"
            "print(freeze_loaded(), freeze_loaded(), gc.get_freeze_count() > 0)\n")


def test_what_is_loaded_is_frozen_for_the_collector_once_where_torch_is_not():
    def probe(**env):
        out = subprocess.run([sys.executable, "-c", GC_PROBE], capture_output=True, text=True,
                             timeout=120, env={**os.environ, **env}, cwd=os.getcwd())
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert probe() == ["True", "True", "True"]
    assert probe(SPACY_BIOEL_GC="default") == ["False", "False", "False"]


def test_the_collector_is_left_alone_where_torch_is_imported(monkeypatch):
    import gc

    monkeypatch.setattr(allocator, "_frozen", False)
    monkeypatch.setitem(sys.modules, "torch", object())
    before = gc.get_freeze_count()
    assert allocator.freeze_loaded() is False and gc.get_freeze_count() == before

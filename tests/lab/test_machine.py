"""`bench/machine.py`: every speed row says where it ran (issue 74)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

from bench.machine import THREAD_VARIABLES, where, where_line


def test_where_names_the_cpu_the_install_the_threads_and_the_door(monkeypatch):
    for name in THREAD_VARIABLES:  # (other tests of this worker may have set some)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    record = where("configs/linker_cpu.cfg")
    assert record["door"] == "configs/linker_cpu.cfg" and record["thread_variables"] == {
        "OMP_NUM_THREADS": "1"}
    assert record["torch_installed"] == (importlib.util.find_spec("torch") is not None)
    assert set(record["cpu_flags"]) <= {"avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8"}
    line = where_line(record)
    assert line.startswith(record["cpu"]) and "OMP_NUM_THREADS=1" in line
    assert line.endswith("door: configs/linker_cpu.cfg") and where_line(None) == ""


def test_a_process_without_pytorch_says_so():
    """The workers import it as a plain module from another environment; there,
    PyTorch's absence is what the row records."""
    bench = Path(__file__).resolve().parents[2] / "bench"
    script = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, %r)\n"
              "import importlib.util; importlib.util.find_spec = lambda name, *a: None\n"
              "from machine import where, where_line; r = where()\n"
              "print(r['torch_installed'], r['torch_imported'], where_line(r))" % str(bench))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("False False ") and "PyTorch not installed" in out

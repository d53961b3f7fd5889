"""The side-by-side benchmark refuses to time a pipeline in another environment
whose installed spacy_bioel is not this checkout's (a stale base install)."""
import shutil
from pathlib import Path

import pytest

import spacy_bioel
from bench.sidebyside import check_same_code, parse_system
from spacy_bioel.errors import BioELError


def fake_python(tmp_path: Path, package: Path) -> Path:
    """An 'interpreter' whose spacy_bioel lives in `package`: it answers the probe."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\necho {package}\n")
    script.chmod(0o755)
    return script


def test_a_stale_install_elsewhere_is_refused(tmp_path):
    copy = tmp_path / "site" / "spacy_bioel"
    shutil.copytree(Path(spacy_bioel.__file__).parent, copy, ignore=lambda folder, names: [
        n for n in names if n == "__pycache__" or ((Path(folder) / n).is_file() and not n.endswith(".py"))])
    python = fake_python(tmp_path, copy)
    check_same_code(parse_system(f"base=some/pipeline@{python}"))  # the same sources: fine
    (copy / "about.py").write_text((copy / "about.py").read_text() + "\n# changed\n")
    with pytest.raises(BioELError, match=r"E181.*1 of \d+ source files differ \(about.py\)"):
        check_same_code(parse_system(f"base=some/pipeline@{python}"))
    check_same_code(parse_system("here=some/pipeline"))  # this interpreter: nothing to compare

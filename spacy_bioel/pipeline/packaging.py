"""Checks of a packaged linker (`python -m spacy_bioel package --check-venv`):
the wheel installs into a fresh virtual environment and links offline exactly
as the pipeline it was built from (a pipeline with an NER from plain text)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..errors import BioELError, Errors

logger = logging.getLogger(__name__)
# mentions (text, start, end) of the probe document linked by both sides
PROBE_TEXT = ("Carriers of familial adenomatous polyposis develop colorectal carcinomas; "
              "some present with hepatoblastoma or a heart attack.")
PROBE_MENTIONS = ("familial adenomatous polyposis", "colorectal carcinomas", "hepatoblastoma",
                  "heart attack")
# a pipeline with an NER reads the probe as plain text; one without gets the mentions marked
_LINK_SCRIPT = """
import json, pathlib, sys
import spacy
from spacy_bioel.pipeline.loading import find_linker, mention_finders
nlp = spacy.load(sys.argv[1])
text, mentions = sys.argv[2], json.loads(sys.argv[3])
if mention_finders(nlp, find_linker(nlp)):
    doc = nlp(text)
else:
    doc = nlp.make_doc(text)
    doc.ents = [doc.char_span(text.index(m), text.index(m) + len(m), "Disease") for m in mentions]
    doc = nlp(doc)
pathlib.Path(sys.argv[4]).write_text(json.dumps([[e.text, e.kb_id_] for e in doc.ents]))
"""


def link_probe(model: str, python: str = sys.executable, env: Optional[Dict[str, str]] = None,
               ) -> List[List[str]]:
    """[mention, kb_id] of the probe mentions linked by `spacy.load(model)` in a
    separate process of `python`, offline (HF_HUB_OFFLINE=1)."""
    env = {**os.environ, **(env or {}), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with tempfile.TemporaryDirectory(prefix="bioel_probe_") as tmp:
        out = Path(tmp) / "links.json"
        done = subprocess.run([python, "-c", _LINK_SCRIPT, model, PROBE_TEXT,
                               json.dumps(PROBE_MENTIONS), str(out)],
                              capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise BioELError(Errors.E200.format(step=f"linking with {model}",
                                                output=done.stderr.strip()[-1500:]))
        return json.loads(out.read_text())


def _run(step: str, command: Sequence[str]) -> None:
    logger.info("%s: %s", step, " ".join(map(str, command)))
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True)
    if done.returncode != 0:
        raise BioELError(Errors.E200.format(step=step, output=(done.stderr or done.stdout)[-1500:]))


def bioel_source_tree() -> Optional[Path]:
    """The checkout this spacy_bioel was installed from (editable), if any."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "spacy_bioel").is_dir() else None


def check_in_fresh_venv(wheel: Path, package_name: str, source_pipeline: Path, venv_dir: Path,
                        pre_install: Sequence[str] = (), bioel_wheel: Optional[Path] = None,
                        ) -> Dict[str, object]:
    """Create `venv_dir` anew, install `pre_install`, spacy-bioel (`bioel_wheel`,
    else a wheel built from this checkout) and `wheel`, then link the probe
    mentions offline with `spacy.load(package_name)` there and with
    `source_pipeline` here. RETURNS the record (seconds, sizes, links, same_links)."""
    started = time.perf_counter()
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    python = venv_dir / "bin" / "python"
    pip = [python, "-m", "pip", "install", "-q"]
    if pre_install:
        _run("installing " + " ".join(pre_install), [*pip, *pre_install])
    with tempfile.TemporaryDirectory(prefix="bioel_wheel_") as tmp:
        if bioel_wheel is None:
            tree = bioel_source_tree()
            if tree is None:
                raise BioELError(Errors.E200.format(
                    step="finding spacy-bioel's source", output="spacy_bioel is not installed "
                    "from a checkout: pass --bioel-wheel"))
            _run("building the spacy-bioel wheel",
                 [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp, tree])
            bioel_wheel = next(Path(tmp).glob("spacy_bioel-*.whl"))
        _run("installing the wheels", [*pip, bioel_wheel, wheel])
    install_seconds = round(time.perf_counter() - started, 1)
    packaged = link_probe(package_name, str(python))
    source = link_probe(str(source_pipeline))
    return {"venv": str(venv_dir), "pre_install": list(pre_install),
            "install_seconds": install_seconds, "mentions": len(source),
            "links_packaged": packaged, "links_source": source, "same_links": packaged == source}


__all__ = ["check_in_fresh_venv", "link_probe", "PROBE_TEXT", "PROBE_MENTIONS"]

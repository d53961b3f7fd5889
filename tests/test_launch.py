"""The command line's first module keeps PyTorch out of a process that serves
the default pipeline (`link`): thinc is imported with PyTorch hidden, PyTorch
stays importable, the links are the same."""
import os
import subprocess
import sys

import pytest

from spacy_bioel.launch import option, serves_without_torch


def test_the_option_values_are_read_in_both_forms():
    assert option(["link", "x", "--linker", "exact"], "--linker") == "exact"
    assert option(["link", "x", "--linker=tfidf"], "--linker") == "tfidf"
    assert option(["link", "x"], "--linker") is None
    assert option(["link", "--linker"], "--linker") is None  # no value: typer reports it


@pytest.mark.parametrize("args, expected", [
    (["link", "colon cancer"], True),
    (["link", "colon cancer", "--kb", "my.bioelkb", "--id-space", "MESH"], True),
    (["link", "colon cancer", "--linker", "bioel"], True),
    (["link", "colon cancer", "--encoder", "embedded:all-MiniLM-L6-v2"], True),
    (["link", "colon cancer", "--linker", "training/ncbi/model-best"], False),  # may need it
    (["link", "colon cancer", "--encoder", "models/sapbert"], False),
    (["link", "--help"], False),
    (["evaluate", "pipeline", "test.spacy"], False),
    (["link-corpus", "bioel", "notes/", "out/"], True),
    (["link-corpus", "bioel", "notes/", "out/", "--kb", "my.bioelkb", "--engine=local"], True),
    (["link-corpus", "bioel", "notes/", "out/", "--engine", "ray"], False),  # its workers are Ray's
    (["link-corpus", "training/model-best", "notes/", "out/"], False),
    (["visualize", "bioel", "--html", "links.html"], True),
    (["visualize", "bioel"], False),  # the streamlit page is a process of its own
    ([], False),
])
def test_only_the_default_pipeline_serves_without_torch(args, expected):
    assert serves_without_torch(args) is expected


def _python(code: str, **env) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_thinc_sees_no_torch_and_torch_still_imports():
    pytest.importorskip("torch")
    out = _python("from spacy_bioel.launch import hide_torch_from_thinc\n"
                  "assert hide_torch_from_thinc()\n"
                  "import thinc.compat, sys\n"
                  "print(thinc.compat.has_torch, 'torch' in sys.modules)\n"
                  "import torch\n"
                  "print(torch.__name__)\n"
                  "assert not hide_torch_from_thinc()  # done once: thinc is imported\n")
    assert out.split() == ["False", "False", "torch"]


def test_link_on_the_default_pipeline_runs_without_torch(tmp_path):
    from spacy_bioel.kb import Concept, KnowledgeBase

    kb = KnowledgeBase(name="tiny")
    for cid, name in [("D1", "colon cancer"), ("D2", "asthma"), ("D3", "gout")]:
        kb.add(Concept(cid, name))
    kb.to_disk(tmp_path / "tiny.bioelkb")
    code = ("import sys, runpy\n"
            f"sys.argv = ['spacy_bioel', 'link', 'Relatives had [colon cancer].', '--kb', "
            f"{str(tmp_path / 'tiny.bioelkb')!r}]\n"
            "try:\n    runpy.run_module('spacy_bioel', run_name='__main__')\n"
            "except SystemExit as exit:\n    assert not exit.code, exit.code\n"
            "print('torch imported:', 'torch' in sys.modules)\n")
    out = _python(code, SPACY_BIOEL_CACHE=str(tmp_path / "cache"))
    assert "colon cancer" in out and "D1" in out
    assert out.strip().endswith("torch imported: False")

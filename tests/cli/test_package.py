"""`package`: a trained linker as a wheel with everything inside, loaded offline
from an install location without the encoder directory it was trained from."""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from typer.testing import CliRunner

from spacy_bioel.cli import app
from spacy_bioel.pipeline.packaging import PROBE_MENTIONS, PROBE_TEXT, link_probe

from ..utils import save_linker_pipeline

pytest.importorskip("build", reason="the `build` package (test extra) makes the wheel")


@pytest.fixture
def trained_dir(tiny_bert_dir, tmp_path):
    """A saved bioel_linker pipeline on a copy of the tiny encoder (removed afterwards)."""
    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_bert_dir, encoder)
    save_linker_pipeline(tmp_path / "pipeline", encoder, [
        ("D1", "familial adenomatous polyposis"), ("D2", "colorectal carcinoma"),
        ("D3", "hepatoblastoma"), ("D4", "myocardial infarction")],
        index={"@misc": "spacy-bioel.NameIndex.v2", "vectors_dtype": "float32"})  # package halves it
    return tmp_path / "pipeline", encoder


# spaCy's `package` writes its files with open(...).write(...), unclosed (ResourceWarning)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_package_builds_a_wheel_that_links_offline(trained_dir, tmp_path):
    pipeline, encoder = trained_dir
    before = link_probe(str(pipeline))
    result = CliRunner().invoke(app, ["package", str(pipeline), str(tmp_path / "out"), "--name",
                                      "toy_linker", "--version", "0.0.1", "--vectors-dtype",
                                      "float16", "--report", str(tmp_path / "report.json")])
    assert result.exit_code == 0, (result.output, result.exception)
    report = json.loads((tmp_path / "report.json").read_text())
    from spacy_bioel.cli.package import stored_vectors_dtype

    assert stored_vectors_dtype(pipeline) == "float32" and report["vectors_dtype"] == "float16"
    wheel = tmp_path / "out" / "en_toy_linker-0.0.1" / "dist" / "en_toy_linker-0.0.1-py3-none-any.whl"
    assert report["wheel"] == str(wheel) and wheel.is_file() and report["wheel_mb"] == round(wheel.stat().st_size / 1e6, 1)
    parts = {row["part"] for row in report["parts"]}
    assert {"encoder weights", "name index vectors", "knowledge base"} <= parts
    assert report["dominated_by"] == report["parts"][0]["part"]
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("en_toy_linker-0.0.1.dist-info/METADATA").decode()
        assert "Requires-Dist: spacy-bioel" in metadata
        config = next(n for n in archive.namelist() if n.endswith("/config.cfg"))
        assert 'vectors_dtype = "float16"' in archive.read(config).decode()
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True)
    shutil.rmtree(encoder)  # the weights and tokenizer must come from the wheel
    env = {"PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    after = link_probe("en_toy_linker", env=env)
    assert [m for m, _ in after] == list(PROBE_MENTIONS) and PROBE_TEXT
    assert after == before  # float16 index vectors: the same concepts on the toy KB
    linked = subprocess.run([sys.executable, "-m", "spacy_bioel", "link", "A [hepatoblastoma] case.",
                             "--linker", "en_toy_linker"], capture_output=True, text=True,
                            env={**os.environ, **env, "HF_HUB_OFFLINE": "1"})
    assert linked.returncode == 0, linked.stderr[-2000:]
    assert "linker: en_toy_linker" in linked.stdout and "hepatoblastoma" in linked.stdout


def test_package_refuses_a_bad_dtype(trained_dir, tmp_path):
    result = CliRunner().invoke(app, ["package", str(trained_dir[0]), str(tmp_path / "out"),
                                      "--vectors-dtype", "int4"])
    assert result.exception is not None and result.exception.code == "E175"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_packaged_pipeline_with_an_ner_links_plain_text(tiny_bert_dir, tmp_path):
    """A wheel whose pipeline finds its own mentions (here an entity ruler before
    the linker) links the probe as plain text, offline, as the source does."""
    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_bert_dir, encoder)
    pipeline = save_linker_pipeline(tmp_path / "pipeline", encoder, [
        ("D1", "familial adenomatous polyposis"), ("D2", "colorectal carcinoma"),
        ("D3", "hepatoblastoma"), ("D4", "myocardial infarction")], patterns=list(PROBE_MENTIONS))
    before = link_probe(str(pipeline))
    result = CliRunner().invoke(app, ["package", str(pipeline), str(tmp_path / "out"), "--name",
                                      "toy_ner_linker", "--version", "0.0.1"])
    assert result.exit_code == 0, (result.output, result.exception)
    wheel = next((tmp_path / "out").rglob("en_toy_ner_linker-0.0.1-py3-none-any.whl"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True)
    shutil.rmtree(encoder)
    env = {"PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    after = link_probe("en_toy_ner_linker", env=env)
    assert [m for m, _ in after] == list(PROBE_MENTIONS)  # found in the plain text
    assert after == before and all(cid.startswith("D") for _, cid in after)


def test_packaging_reads_the_pipeline_as_loading_does(trained_dir, tmp_path):
    """A link out of the pipeline (in vocab/ or at its top) is E231, as loading says,
    before any wheel is built; the package never lies inside the pipeline (E245), and a
    folder that is no earlier build is never replaced (E246)."""
    pipeline, _ = trained_dir
    secret = tmp_path / "secret.txt"
    secret.write_text("a key")
    for link in (pipeline / "vocab" / "extra.txt", pipeline / "notes.txt"):
        link.symlink_to(secret)
        result = CliRunner().invoke(app, ["package", str(pipeline), str(tmp_path / "out")])
        assert result.exception.code == "E231" and str(link) in str(result.exception)
        assert not list((tmp_path / "out").rglob("*.whl"))
        link.unlink()
    result = CliRunner().invoke(app, ["package", str(pipeline), str(pipeline / "dist")])
    assert result.exception.code == "E245" and not (pipeline / "dist").exists()
    mine = tmp_path / "out" / "en_bioel_linker-0.1.0"
    mine.mkdir(parents=True)
    (mine / "thesis.txt").write_text("mine")
    result = CliRunner().invoke(app, ["package", str(pipeline), str(tmp_path / "out")])
    assert result.exception.code == "E246" and (mine / "thesis.txt").read_text() == "mine"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_default_pipeline_packages_as_a_wheel(tmp_path):
    """`package bioel --kb KB`: the default pipeline `link` builds (the shipped NER,
    the untrained linker) as a wheel that reads plain text as the default does,
    without the cache entry's marker."""
    from spacy_bioel import Concept, KnowledgeBase, default_pipeline
    from spacy_bioel.outputs import MARKER

    kb = KnowledgeBase(name="toy")
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "hepatoblastoma"), ("D3", "asthma")]:
        kb.add(Concept(cid, name))
    kb.to_disk(tmp_path / "toy.bioelkb")
    text = "A patient with colorectal carcinoma and asthma had a hepatoblastoma."
    want = [(e.text, e.kb_id_) for e in default_pipeline(str(tmp_path / "toy.bioelkb"))(text).ents]
    assert ("colorectal carcinoma", "D1") in want
    result = CliRunner().invoke(app, ["package", "bioel", str(tmp_path / "out"), "--name", "toy_default",
                                      "--version", "0.0.1", "--kb", str(tmp_path / "toy.bioelkb")])
    assert result.exit_code == 0, (result.output, result.exception)
    wheel = tmp_path / "out" / "en_toy_default-0.0.1" / "dist" / "en_toy_default-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if n.endswith(MARKER)]
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    code = ("import json, spacy; nlp = spacy.load('en_toy_default'); "
            f"print(json.dumps([(e.text, e.kb_id_) for e in nlp({text!r}).ents]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [tuple(pair) for pair in json.loads(done.stdout.strip().splitlines()[-1])] == want

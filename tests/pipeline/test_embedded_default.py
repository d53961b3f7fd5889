"""The default pipeline of `link` (no trained pipeline): built once on the fast
stages (ONNX int8 mention tower, int8 name scan), saved in the cache, loaded
from it afterwards; keyed by KB, encoder files and version; a damaged entry is
W016 and built again."""
import os
import warnings
from pathlib import Path

import pytest

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELWarning
from spacy_bioel.pipeline import embedded_default
from spacy_bioel.pipeline.embedded_default import default_pipeline, pipeline_key
from spacy_bioel.pipeline.loading import find_linker
from tests.utils import needs

pytestmark = needs("onnxruntime", "onnx")


def toy_kb(extra: bool = False) -> KnowledgeBase:
    kb = KnowledgeBase(name="toy")
    rows = [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"), ("D3", "asthma")]
    for cid, name in rows + ([("D4", "migraine")] if extra else []):
        kb.add(Concept(cid, name))
    return kb


def links(nlp):
    doc = nlp.make_doc("colon cancer and heart attack")
    doc.ents = [doc.char_span(0, 12, "Disease"), doc.char_span(17, 29, "Disease")]
    return [(e.kb_id_, [(c, round(p, 4)) for c, p in e._.kb_ents]) for e in nlp(doc).ents]


def entries(cache: Path):
    folder = cache / "pipelines"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_built_once_then_loaded(tiny_bert_dir, tmp_path, monkeypatch):
    cache = Path(os.environ["SPACY_BIOEL_CACHE"])
    first = default_pipeline(toy_kb(), str(tiny_bert_dir))
    linker = find_linker(first)
    assert linker.runtime.name == "onnx" and linker.runtime.quantize == "int8-all"
    assert linker.index.index_type == "int8"
    assert (linker.cfg["retrieve_k"], linker.cfg["top_k"]) == (16, 16)  # the one default
    want = links(first)
    assert entries(cache) == [pipeline_key(toy_kb(), str(tiny_bert_dir))]  # no partial folder left

    def no_build(*args, **kwargs):
        raise AssertionError("built again instead of loading the saved pipeline")

    monkeypatch.setattr(embedded_default, "untrained_pipeline", no_build)
    second = default_pipeline(toy_kb(), str(tiny_bert_dir))
    assert links(second) == want


def test_key_follows_kb_and_encoder_files(tiny_bert_dir, tmp_path):
    import shutil

    key = pipeline_key(toy_kb(), str(tiny_bert_dir))
    assert key == pipeline_key(toy_kb(), str(tiny_bert_dir))
    assert key != pipeline_key(toy_kb(extra=True), str(tiny_bert_dir))
    toy_kb().to_disk(tmp_path / "toy.bioelkb")  # a KB file: the same key, read without building it
    assert pipeline_key(tmp_path / "toy.bioelkb", str(tiny_bert_dir)) == key
    copy = tmp_path / "encoder"
    shutil.copytree(tiny_bert_dir, copy)
    before = pipeline_key(toy_kb(), str(copy))
    config = copy / "config.json"
    stat = config.stat()
    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # an updated model file
    assert pipeline_key(toy_kb(), str(copy)) != before
    assert pipeline_key(toy_kb(), "some-org/a-hub-model") is None  # not ours to digest


def test_key_follows_the_fast_defaults(tiny_bert_dir, monkeypatch):
    """Other settings (or stages) in a new version of the one default build a new entry."""
    from spacy_bioel.pipeline import defaults

    key = pipeline_key(toy_kb(), str(tiny_bert_dir))
    monkeypatch.setitem(defaults.SETTINGS, "top_k", 8)
    assert pipeline_key(toy_kb(), str(tiny_bert_dir)) != key


def test_key_follows_the_shipped_nil_stage(tiny_bert_dir, monkeypatch):
    """An entry saves the NIL threshold in its config: a refitted shipped NIL stage
    builds a new entry, not a mix of the old threshold and the new calibration."""
    from spacy_bioel.nil import stages

    key = pipeline_key(toy_kb(), str(tiny_bert_dir))
    monkeypatch.setattr(stages, "DEFAULT_THRESHOLD", 0.5)
    refitted = pipeline_key(toy_kb(), str(tiny_bert_dir))
    monkeypatch.setattr(stages, "DEFAULT_CALIBRATION", (10.0, -8.0))
    assert len({key, refitted, pipeline_key(toy_kb(), str(tiny_bert_dir))}) == 3


def test_damaged_entry_is_rebuilt(tiny_bert_dir):
    cache = Path(os.environ["SPACY_BIOEL_CACHE"])
    want = links(default_pipeline(toy_kb(), str(tiny_bert_dir)))
    (key,) = entries(cache)
    (cache / "pipelines" / key / "config.cfg").write_text("[nlp\nlang = ")
    with pytest.warns(BioELWarning, match="W016"):
        again = default_pipeline(toy_kb(), str(tiny_bert_dir))
    assert links(again) == want
    assert entries(cache) == [key]
    with warnings.catch_warnings():
        warnings.simplefilter("error", BioELWarning)
        assert links(default_pipeline(toy_kb(), str(tiny_bert_dir))) == want  # the rebuilt entry


def test_an_edited_entry_config_is_damage_and_rebuilt(tiny_bert_dir):
    """A user's pipeline loads an edited config.cfg with W018; the cache's own entry
    is not the user's to edit: it is rebuilt (W016), not loaded with the edit."""
    from spacy.util import load_config

    cache = Path(os.environ["SPACY_BIOEL_CACHE"])
    want = links(default_pipeline(toy_kb(), str(tiny_bert_dir)))
    (key,) = entries(cache)
    path = cache / "pipelines" / key / "config.cfg"
    config = load_config(path, interpolate=False)
    config["components"]["bioel_linker"]["nil"]["threshold"] = 0.01
    config.to_disk(path)
    with pytest.warns(BioELWarning, match="W016.*W018"):
        again = default_pipeline(toy_kb(), str(tiny_bert_dir))
    assert links(again) == want
    assert load_config(path, interpolate=False)["components"]["bioel_linker"]["nil"]["threshold"] != 0.01


def test_no_cache(tiny_bert_dir):
    cache = Path(os.environ["SPACY_BIOEL_CACHE"])
    nlp = default_pipeline(toy_kb(), str(tiny_bert_dir), cache=None)
    assert find_linker(nlp).runtime.name == "onnx" and entries(cache) == []


def test_a_read_only_cache_is_read(tiny_bert_dir, monkeypatch):
    """A complete cache baked into a container image is read, not built again; the
    folder is read-only for this user (os.access says so: root may write anyway)."""
    cache = Path(os.environ["SPACY_BIOEL_CACHE"])
    want = links(default_pipeline(toy_kb(), str(tiny_bert_dir)))
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, *a, **k: False if mode & os.W_OK and
                        str(Path(path).resolve()).startswith(str(cache.resolve())) else real(path, mode))

    def no_build(*args, **kwargs):
        raise AssertionError("the read-only entry was not used")

    monkeypatch.setattr(embedded_default, "untrained_pipeline", no_build)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a warning: the cache works as it should
        assert links(default_pipeline(toy_kb(), str(tiny_bert_dir))) == want


def test_an_entry_is_checked_against_its_key_and_never_deleted_when_foreign(tiny_bert_dir):
    import shutil

    cache = Path(os.environ["SPACY_BIOEL_CACHE"]) / "pipelines"
    default_pipeline(toy_kb(), str(tiny_bert_dir))
    key = pipeline_key(toy_kb(), str(tiny_bert_dir))
    other = pipeline_key(toy_kb(extra=True), str(tiny_bert_dir))
    default_pipeline(toy_kb(extra=True), str(tiny_bert_dir))
    shutil.rmtree(cache / key)
    shutil.copytree(cache / other, cache / key)  # another KB's pipeline, placed under the key
    with pytest.warns(BioELWarning, match="W016.*not the cache entry"):
        nlp = default_pipeline(toy_kb(), str(tiny_bert_dir))
    assert len(find_linker(nlp).kb) == 3  # built from the KB asked for, in memory
    assert len(find_linker(default_pipeline(toy_kb(extra=True), str(tiny_bert_dir))).kb) == 4
    assert (cache / key).is_dir()  # the folder it did not write is left where it was


def test_a_killed_build_is_cleaned_up_by_the_next_one(tiny_bert_dir):
    import json
    import subprocess
    import sys

    from spacy_bioel.outputs import MARKER, write_partial_marker

    cache = Path(os.environ["SPACY_BIOEL_CACHE"]) / "pipelines"
    key = pipeline_key(toy_kb(), str(tiny_bert_dir))
    cache.mkdir(parents=True, exist_ok=True)
    dead = cache / f".{key}.0badc0de.partial"
    alive = cache / f".{key}.0000beef.partial"
    for folder in (dead, alive):
        folder.mkdir()
        write_partial_marker(folder, embedded_default.ENTRY)  # this process: alive
    gone = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)
    marker = json.loads((dead / MARKER).read_text())
    (dead / MARKER).write_text(json.dumps({**marker, "pid": gone}))
    default_pipeline(toy_kb(), str(tiny_bert_dir))
    assert not dead.exists() and alive.exists()
    assert entries(cache.parent) == sorted([key, alive.name])


def test_plain_text_in_linked_concepts_out(tiny_bert_dir):
    """The default pipeline carries the shipped NER before its linker: plain text
    links; `ner=False` is the linker alone (and another cache entry)."""
    nlp = default_pipeline(toy_kb(), str(tiny_bert_dir))
    assert nlp.pipe_names == ["tok2vec", "ner", "bioel_mention_consistency", "bioel_linker"]
    doc = nlp("A patient with colorectal carcinoma and asthma.")
    assert "colorectal carcinoma" in {e.text for e in doc.ents}
    # an abbreviation the text defines follows its long form (document consistency)
    doc = nlp("Colorectal carcinoma (CRC) is common. CRC screening saves lives.")
    assert [e.text for e in doc.ents][:1] == ["Colorectal carcinoma"]
    assert [e.text for e in doc.ents].count("CRC") == 2
    assert all(e.kb_id_ in ("D1", "D2", "D3", "NIL") and e._.kb_ents for e in doc.ents)
    alone = default_pipeline(toy_kb(), str(tiny_bert_dir), ner=False)
    assert alone.pipe_names == ["bioel_linker"] and not alone("colorectal carcinoma").ents
    assert pipeline_key(toy_kb(), str(tiny_bert_dir)) != \
        pipeline_key(toy_kb(), str(tiny_bert_dir), ner=False)


def test_the_folder_of_the_default_for_doors_that_load_by_path(tiny_bert_dir, monkeypatch):
    """`default_pipeline_folder` (link-corpus and visualize's `bioel`): the cache
    entry, built once, then returned without building or loading it here; E263
    where no entry can be kept."""
    from spacy_bioel.errors import BioELError
    from spacy_bioel.outputs import read_marker
    from spacy_bioel.pipeline.embedded_default import default_pipeline_folder

    folder = default_pipeline_folder(toy_kb(), str(tiny_bert_dir))
    assert folder.name == pipeline_key(toy_kb(), str(tiny_bert_dir))
    assert read_marker(folder)["key"] == folder.name and (folder / "bioel_linker").is_dir()

    def no_build(*args, **kwargs):
        raise AssertionError("built or loaded again")

    monkeypatch.setattr(embedded_default, "default_pipeline", no_build)
    assert default_pipeline_folder(toy_kb(), str(tiny_bert_dir)) == folder
    with pytest.raises(BioELError, match="E263.*no pipeline cache"):
        default_pipeline_folder(toy_kb(), str(tiny_bert_dir), cache=None)
    with pytest.raises(BioELError, match="E263.*not a local folder"):
        default_pipeline_folder(toy_kb(), "some-org/a-hub-model")


def test_the_top_level_import_is_the_same_function():
    import spacy_bioel

    assert spacy_bioel.default_pipeline is default_pipeline
    with pytest.raises(AttributeError):
        spacy_bioel.no_such_name

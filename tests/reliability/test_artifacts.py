"""Damaged saved pipelines: every damaged file is a coded error that names it
(the manifest's checksums), never a silently different prediction; weights load
without running pickle code; repair-pipeline re-creates the derived parts."""
import shutil

import numpy as np
import pytest
import spacy

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError
from spacy_bioel.index.store_io import save_store
from spacy_bioel.pipeline.serialize import MANIFEST, write_manifest
from tests.utils import tiny_linker_config

TEXTS = [("colon cancer and heart attack", [(0, 12), (17, 29)]), ("asthma", [(0, 6)])]


def docs(nlp):
    out = []
    for text, spans in TEXTS:
        doc = nlp.make_doc(text)
        doc.ents = [doc.char_span(s, e, label="Disease") for s, e in spans]
        out.append(doc)
    return out


def links(nlp):
    return [[(e.kb_id_, e._.kb_ents) for e in doc.ents] for doc in nlp.pipe(docs(nlp))]


@pytest.fixture(scope="module")
def saved(tiny_bert_dir, tmp_path_factory):
    from spacy.training import Example

    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    kb = KnowledgeBase(name="toy")
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"),
                      ("D3", "asthma")]:
        kb.add(Concept(cid, name))
    nlp.get_pipe("bioel_linker").set_kb(kb)
    gold = docs(nlp)
    for doc, ids in zip(gold, [["D1", "D2"], ["D3"]]):
        for ent, cid in zip(doc.ents, ids):
            ent.kb_id_ = cid
    nlp.initialize(lambda: [Example(d, d) for d in gold])
    path = tmp_path_factory.mktemp("saved") / "pipeline"
    nlp.to_disk(path)
    return path, links(nlp)


def copy(saved, tmp_path):
    target = tmp_path / "pipeline"
    shutil.copytree(saved[0], target)
    return target, target / "bioel_linker"


def test_manifest_lists_every_file(saved):
    import srsly

    component = saved[0] / "bioel_linker"
    files = srsly.read_json(component / MANIFEST)["files"]
    on_disk = {p.relative_to(component).as_posix() for p in component.rglob("*")
               if p.is_file() and p.name != MANIFEST}
    assert {f for f in files if not f.startswith("../")} == on_disk
    assert {"cfg", "kb", "index/vectors.npy", "index/owners.npy", "index/store.json",
            "datastore", "model"} <= on_disk
    # and the pipeline's files spaCy wrote before the component
    assert {f for f in files if f.startswith("../")} == {"../config.cfg", "../meta.json",
                                                         "../tokenizer"}
    assert links(spacy.load(saved[0])) == saved[1]


def _encoder_files(saved):
    return sorted(p.relative_to(saved[0] / "bioel_linker").as_posix()
                  for p in (saved[0] / "bioel_linker" / "encoder").iterdir())


@pytest.mark.parametrize("part", ["cfg", "kb", "index/vectors.npy", "index/store.json", "datastore",
                                  "train_mentions", "model", "encoder/tokenizer.json",
                                  "encoder/config.json"])
def test_a_flipped_byte_in_any_file_is_a_coded_error_naming_it(saved, tmp_path, part):
    _, component = copy(saved, tmp_path)
    target = component / part
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "pipeline")
    assert err.value.code == "E176" and str(target) in str(err.value)
    if part.split("/")[0] in ("index", "datastore"):  # derived: the remedy names the pipeline to repair
        assert f"repair-pipeline {tmp_path / 'pipeline'} NEW_DIR" in str(err.value)
    if part.startswith("encoder/"):
        assert f"{tmp_path / 'pipeline' / 'bioel_linker'}/encoder" in str(err.value)


@pytest.mark.parametrize("part", ["encoder/tokenizer.json", "datastore", "kb"])
def test_a_missing_file_is_a_coded_error_naming_it(saved, tmp_path, part):
    _, component = copy(saved, tmp_path)
    (component / part).unlink()
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "pipeline")
    assert err.value.code == "E156" and part.split("/")[-1] in str(err.value)


def test_missing_tokenizer_files_are_refused_even_without_a_manifest(saved, tmp_path):
    import srsly

    _, component = copy(saved, tmp_path)
    (component / MANIFEST).unlink()  # a pipeline saved before manifests: its cfg says none
    cfg = srsly.read_json(component / "cfg")
    del cfg["manifest"]
    srsly.write_json(component / "cfg", cfg)
    for name in ("tokenizer.json", "vocab.txt"):
        if (component / "encoder" / name).exists():
            (component / "encoder" / name).unlink()
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "pipeline")
    assert err.value.code in ("E176", "E156") and "encoder" in str(err.value)


def test_an_index_of_another_dimension_is_named(saved, tmp_path):
    from spacy_bioel.index.dense import DenseCandidateStore

    _, component = copy(saved, tmp_path)
    concepts = spacy.load(saved[0]).get_pipe("bioel_linker").index.names
    store = DenseCandidateStore(concepts.concept_ids, 8)
    store.add(np.eye(len(concepts), 8, dtype=np.float32), concepts.owners)
    save_store(store, component / "index")
    write_manifest(component)  # as if copied together with a matching manifest
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "pipeline")
    assert err.value.code == "E176" and "dimension 8" in str(err.value)


def test_weights_never_run_pickle_code(saved, tmp_path):
    import io
    import pickle

    import srsly
    import torch

    _, component = copy(saved, tmp_path)
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    msg = srsly.msgpack_loads((component / "model").read_bytes())
    buffer = io.BytesIO()
    torch.save({"weights": Evil()}, buffer, pickle_module=pickle)

    poisoned = []

    def poison(value):
        if isinstance(value, dict):
            return {k: poison(v) for k, v in value.items()}
        if isinstance(value, list):
            return [poison(v) for v in value]
        if isinstance(value, bytes) and len(value) > 1000:  # the shim's msgpack with torch bytes
            inner = srsly.msgpack_loads(value)
            inner["state"] = buffer.getvalue()
            poisoned.append(True)
            return srsly.msgpack_dumps(inner)
        return value

    (component / "model").write_bytes(srsly.msgpack_dumps(poison(msg)))
    assert poisoned  # the weights now hold a pickle that would create `marker`
    write_manifest(component)
    with pytest.raises(BioELError) as err:
        spacy.load(tmp_path / "pipeline")
    assert err.value.code == "E176" and "model" in str(err.value)
    assert not marker.exists()


def test_repair_pipeline_recreates_a_damaged_index(saved, tmp_path):
    from typer.testing import CliRunner

    from spacy_bioel.cli import app

    _, component = copy(saved, tmp_path)
    (component / "index" / "vectors.npy").write_bytes(b"garbage")
    (component / "datastore").unlink()
    out = tmp_path / "repaired"
    result = CliRunner().invoke(app, ["repair-pipeline", str(tmp_path / "pipeline"), str(out)])
    assert result.exit_code == 0, result.output
    repaired = links(spacy.load(out))
    assert [[cid for cid, _ in doc] for doc in repaired] == [[cid for cid, _ in doc]
                                                             for doc in saved[1]]
    for got, want in zip(repaired, saved[1]):
        for (_, a), (_, b) in zip(got, want):
            assert [c for c, _ in a] == [c for c, _ in b]
            assert np.allclose([p for _, p in a], [p for _, p in b], atol=1e-5)



def _edit_nil_threshold(pipeline, value):
    from spacy.util import load_config

    config = load_config(pipeline / "config.cfg", interpolate=False)
    before = config["components"]["bioel_linker"]["nil"]["threshold"]
    config["components"]["bioel_linker"]["nil"]["threshold"] = value
    config.to_disk(pipeline / "config.cfg")
    return before


def test_an_edited_config_loads_with_W018_naming_each_change_and_its_values_win(saved, tmp_path):
    """Editing a saved pipeline's config.cfg works as in spaCy (issue 75): one coded
    warning that names the setting, and the edited value is used, over the value the
    component saved in its own cfg."""
    import re

    import srsly

    from spacy_bioel.errors import BioELWarning

    pipeline, component = copy(saved, tmp_path)
    assert srsly.read_json(component / "cfg")["stages"]["nil"]["threshold"] != 0.99
    before = _edit_nil_threshold(pipeline, 0.99)
    with pytest.warns(BioELWarning, match=re.escape(
            f"components.bioel_linker.nil.threshold: {before!r} -> 0.99")) as caught:
        nlp = spacy.load(pipeline)
    assert [str(w.message)[:6] for w in caught if "W018" in str(w.message)] == ["[W018]"]
    assert nlp.get_pipe("bioel_linker").nil.threshold == 0.99
    # its weights, index and datastore are still checked
    store = component / "datastore"
    data = bytearray(store.read_bytes())
    data[len(data) // 2] ^= 0x01
    store.write_bytes(bytes(data))
    with pytest.raises(BioELError, match="E176"):
        spacy.load(pipeline)


def test_seal_pipeline_makes_the_edited_config_the_pipelines_own(saved, tmp_path):
    import warnings

    from typer.testing import CliRunner

    from spacy_bioel.cli import app
    from spacy_bioel.errors import BioELWarning

    pipeline, _ = copy(saved, tmp_path)
    _edit_nil_threshold(pipeline, 0.25)
    result = CliRunner().invoke(app, ["seal-pipeline", str(pipeline)])
    assert result.exit_code == 0, result.output
    with warnings.catch_warnings():
        warnings.simplefilter("error", BioELWarning)
        nlp = spacy.load(pipeline)
    assert nlp.get_pipe("bioel_linker").nil.threshold == 0.25


def test_a_changed_tokenizer_file_is_still_E233(saved, tmp_path):
    pipeline, _ = copy(saved, tmp_path)
    nlp = spacy.load(pipeline)
    nlp.tokenizer.add_special_case("c.cancer", [{"ORTH": "c."}, {"ORTH": "cancer"}])
    nlp.tokenizer.to_disk(pipeline / "tokenizer")
    with pytest.raises(BioELError) as err:
        spacy.load(pipeline)
    assert err.value.code == "E233" and "tokenizer" in str(err.value)


def test_config_edits_names_added_removed_and_changed_settings(tmp_path):
    from spacy_bioel.pipeline.integrity import config_edits

    before = "[a]\nx = 1\ny = \"s\"\n\n[a.b]\nz = null\n"
    (tmp_path / "config.cfg").write_text("[a]\nx = 2\nw = true\n\n[a.b]\nz = null\n")
    assert config_edits(before, tmp_path / "config.cfg") == {
        "a.w": (None, True), "a.x": (1, 2), "a.y": ("s", None)}
    assert config_edits(None, tmp_path / "config.cfg") == {}
    (tmp_path / "config.cfg").write_text("[a\nx = ")
    with pytest.raises(BioELError, match="E233"):
        config_edits(before, tmp_path / "config.cfg")


def test_a_manifest_whose_config_copy_differs_is_E176(saved, tmp_path):
    import srsly

    pipeline, component = copy(saved, tmp_path)
    manifest = srsly.read_json(component / MANIFEST)
    manifest["files"]["../config.cfg"]["text"] += "\n"
    srsly.write_json(component / MANIFEST, manifest)
    with pytest.raises(BioELError) as err:
        spacy.load(pipeline)
    assert err.value.code == "E176" and MANIFEST in str(err.value)


def test_a_comment_added_to_the_config_loads_silently(saved, tmp_path):
    import warnings

    from spacy_bioel.errors import BioELWarning

    pipeline, _ = copy(saved, tmp_path)
    with open(pipeline / "config.cfg", "a", encoding="utf-8") as handle:
        handle.write("\n# a note of mine\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", BioELWarning)
        assert links(spacy.load(pipeline)) == saved[1]


def test_saving_over_an_onnx_runtime_removes_only_its_files(tmp_path):
    """A linker saved without an ONNX runtime over a folder that had one removes
    the runtime's own files (graph, weights, record) and keeps anything else there;
    the folder goes only when nothing else is left; no record, nothing removed."""
    from spacy_bioel.encoders.runtime import ONNX_DATA, ONNX_FILE, ONNX_META, ONNX_UNSIGNED
    from spacy_bioel.pipeline.serialize import remove_runtime_files

    ours = (ONNX_FILE, ONNX_DATA, ONNX_META) + ONNX_UNSIGNED
    kept = tmp_path / "kept"
    kept.mkdir()
    for name in ours + ("notes.txt",):
        (kept / name).write_text("x")
    remove_runtime_files(kept)
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"]
    gone = tmp_path / "gone"
    gone.mkdir()
    for name in ours:
        (gone / name).write_text("x")
    remove_runtime_files(gone)
    assert not gone.exists()
    unrecorded = tmp_path / "unrecorded"
    unrecorded.mkdir()
    (unrecorded / ONNX_FILE).write_text("x")
    remove_runtime_files(unrecorded)
    assert (unrecorded / ONNX_FILE).is_file()

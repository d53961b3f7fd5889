"""A frozen concept tower equal to the base model is saved by reference: the
weights file holds the mention tower, loading reads the concept tower from the
base model and checks its digest (E241), a changed tower is saved in full."""
import json

import numpy as np
import pytest
import spacy

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.encoders import base_tower
from spacy_bioel.errors import BioELError
from tests.utils import drop_manifest, needs, torch_linker


def build(tiny_bert_dir, **config):
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config=torch_linker({
        "model": {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
                  "max_length": 16, "shared_towers": False, "train_concept_tower": False},
        **config}))
    kb = KnowledgeBase(name="toy")
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"),
                      ("D3", "asthma")]:
        kb.add(Concept(cid, name))
    linker.set_kb(kb)
    nlp.initialize(lambda: [])
    return nlp


def links(nlp):
    doc = nlp.make_doc("colon cancer and heart attack")
    doc.ents = [doc.char_span(0, 12, "Disease"), doc.char_span(17, 29, "Disease")]
    return [(e.kb_id_, [(c, round(p, 5)) for c, p in e._.kb_ents]) for e in nlp(doc).ents]


@pytest.fixture
def referenced(tiny_bert_dir, monkeypatch):
    """The tiny test encoder counts as an installed base model (as embedded: ones do)."""
    monkeypatch.setattr(base_tower, "REFERENCE_PREFIXES", (str(tiny_bert_dir),))


def test_saved_by_reference_and_loaded_from_the_base(tiny_bert_dir, tmp_path, referenced,
                                                     monkeypatch):
    from spacy_bioel.encoders.thinc_biencoder import torch_module

    nlp = build(tiny_bert_dir)
    want = links(nlp)
    nlp.to_disk(tmp_path / "by_reference")
    cfg = json.loads((tmp_path / "by_reference" / "bioel_linker" / "cfg").read_text())
    assert cfg["concept_tower"]["encoder"] == str(tiny_bert_dir)
    monkeypatch.setattr(base_tower, "REFERENCE_PREFIXES", ())  # the same pipeline, in full
    full = build(tiny_bert_dir)
    full.to_disk(tmp_path / "full")
    assert json.loads((tmp_path / "full" / "bioel_linker" / "cfg").read_text())["concept_tower"] is None
    size = {k: (tmp_path / k / "bioel_linker" / "model").stat().st_size for k in ("by_reference", "full")}
    assert size["by_reference"] < 0.6 * size["full"]  # one tower of two
    loaded = spacy.load(tmp_path / "by_reference")
    assert links(loaded) == want
    module = torch_module(loaded.get_pipe("bioel_linker").model)
    original = torch_module(nlp.get_pipe("bioel_linker").model)
    for (name, a), (_, b) in zip(sorted(module.state_dict().items()), sorted(original.state_dict().items())):
        assert np.array_equal(a.numpy(), b.numpy()), name
    loaded.to_disk(tmp_path / "again")  # the reference survives a load and a save
    assert json.loads((tmp_path / "again" / "bioel_linker" / "cfg").read_text())["concept_tower"] == \
        cfg["concept_tower"]


def test_a_missing_or_different_base_is_named(tiny_bert_dir, tmp_path, referenced):
    nlp = build(tiny_bert_dir)
    nlp.to_disk(tmp_path / "p")
    component = tmp_path / "p" / "bioel_linker"
    drop_manifest(component)
    cfg = json.loads((component / "cfg").read_text())
    for reference, problem in (({**cfg["concept_tower"], "sha256": "0" * 64}, "differ"),
                               ({**cfg["concept_tower"], "encoder": str(tmp_path / "gone")},
                                "cannot be loaded")):
        (component / "cfg").write_text(json.dumps({**cfg, "concept_tower": reference}))
        with pytest.raises(BioELError, match=problem) as err:
            spacy.load(tmp_path / "p")
        assert err.value.code == "E241"


def test_a_tower_that_changed_is_saved_in_full(tiny_bert_dir, tmp_path, referenced):
    import torch

    from spacy_bioel.encoders.thinc_biencoder import torch_module

    nlp = build(tiny_bert_dir)
    module = torch_module(nlp.get_pipe("bioel_linker").model)
    with torch.no_grad():
        next(module.concept_encoder.parameters()).add_(0.5)
    nlp.to_disk(tmp_path / "p")
    assert json.loads((tmp_path / "p" / "bioel_linker" / "cfg").read_text())["concept_tower"] is None
    loaded = torch_module(spacy.load(tmp_path / "p").get_pipe("bioel_linker").model)
    assert torch.equal(next(loaded.concept_encoder.parameters()),
                       next(module.concept_encoder.parameters()))


@needs("onnxruntime", "onnx")
def test_an_onnx_pipeline_builds_its_module_from_the_base_on_demand(tiny_bert_dir, tmp_path,
                                                                   referenced):
    nlp = build(tiny_bert_dir, runtime={"@misc": "spacy-bioel.OnnxRuntime.v1"})
    want = links(nlp)
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    linker = loaded.get_pipe("bioel_linker")
    assert linker.deferred_model is not None and links(loaded) == want
    loaded.to_disk(tmp_path / "q")  # still deferred: the reference is copied with the weights
    assert json.loads((tmp_path / "q" / "bioel_linker" / "cfg").read_text())["concept_tower"]
    linker.refresh(force=True)  # needs the module: the concept tower comes from the base
    assert linker.deferred_model is None and links(loaded) == want


def test_a_pipeline_saved_in_full_is_saved_by_reference_once_checked(tiny_bert_dir, tmp_path,
                                                                    monkeypatch):
    """Saved before references (or where the prefix did not count), loaded where
    it does: the next save finds the tower equal to the base and references it."""
    monkeypatch.setattr(base_tower, "REFERENCE_PREFIXES", ())
    nlp = build(tiny_bert_dir)
    want = links(nlp)
    nlp.to_disk(tmp_path / "full")
    monkeypatch.setattr(base_tower, "REFERENCE_PREFIXES", (str(tiny_bert_dir),))
    loaded = spacy.load(tmp_path / "full")
    loaded.to_disk(tmp_path / "referenced")
    assert json.loads((tmp_path / "referenced" / "bioel_linker" / "cfg").read_text())["concept_tower"]
    assert links(spacy.load(tmp_path / "referenced")) == want

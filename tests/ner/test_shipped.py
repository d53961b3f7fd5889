"""The disease NER shipped in the package: what loads is what was built (its
manifest's checksums and data fingerprint), and it finds disease mentions."""
import json
import shutil
import subprocess
import sys

import pytest

from spacy_bioel.errors import BioELError
from spacy_bioel.ner import shipped

# the shipped NER's files, one SHA-256 over their checksums: `spacy project run
# build-default-ner` rebuilds them (then this changes, on purpose, with the files)
SHIPPED_DIGEST = "2ae34444a8e850d6fbd305044bda1c0576f589386b220d025e3e3fee60227a46"


def test_the_shipped_files_match_their_manifest():
    assert shipped.digest() == SHIPPED_DIGEST
    manifest = shipped.verify()
    assert manifest["files"] == shipped.tree_checksums(shipped.ASSET)
    assert {"config.cfg", "meta.json", "tok2vec/model", "ner/model"} <= set(manifest["files"])
    assert manifest["seed"] == 0 and "build-default-ner" in manifest["command"]


def test_trained_on_train_and_dev_of_both_corpora_never_test():
    data = shipped.manifest()["data"]
    files = [entry["file"] for entry in data["inputs"]]
    assert [f.split("/")[-2:] for f in files] == [["ncbi", "train.spacy"], ["ncbi", "dev.spacy"],
                                                  ["bc5cdr", "train.spacy"], ["bc5cdr", "dev.spacy"]]
    assert all(len(entry["sha256"]) == 64 and entry["mentions"] > 0 for entry in data["inputs"])
    assert data["output"]["documents"] == sum(entry["documents"] for entry in data["inputs"])


def test_a_changed_or_missing_file_is_E254(tmp_path):
    copy = tmp_path / "ner"
    shutil.copytree(shipped.ASSET, copy)
    shipped.verify(copy)
    meta = copy / "meta.json"
    meta.write_text(meta.read_text() + " ")
    with pytest.raises(BioELError) as err:
        shipped.load_ner(copy)
    assert err.value.code == "E254" and "meta.json" in str(err.value)
    meta.unlink()
    with pytest.raises(BioELError, match="meta.json is missing"):
        shipped.verify(copy)
    (copy / shipped.MANIFEST).write_text("not json")
    with pytest.raises(BioELError, match="E254"):
        shipped.verify(copy)


def test_an_added_file_is_E254(tmp_path):
    copy = tmp_path / "ner"
    shutil.copytree(shipped.ASSET, copy)
    (copy / "ner" / "extra").write_bytes(b"x")
    with pytest.raises(BioELError, match="extra is not one of the files"):
        shipped.verify(copy)


def test_it_finds_disease_mentions_with_one_label():
    nlp = shipped.load_ner()
    assert nlp.pipe_names == ["tok2vec", "ner"] and nlp.get_pipe("ner").labels == (shipped.LABEL,)
    doc = nlp("Germline mutations of the APC gene cause familial adenomatous polyposis, a "
              "predisposition to colorectal carcinomas; several carriers had hepatoblastoma.")
    found = {e.text for e in doc.ents}
    assert {"familial adenomatous polyposis", "colorectal carcinomas", "hepatoblastoma"} <= found
    assert {e.label_ for e in doc.ents} == {shipped.LABEL}


def test_its_kb_name_features_are_the_default_kbs():
    config = json.loads(json.dumps(shipped.load_ner().config.to_str()))
    assert 'kb = "embedded:doid"' in config


def test_it_reads_in_context_and_serves_without_pytorch():
    """The shipped NER (issue 73) is the fine-tuned encoder served as ONNX: the base
    install, without PyTorch or transformers, loads it and finds what it finds here."""
    config = (shipped.ASSET / "config.cfg").read_text()
    assert '"spacy-bioel.OnnxTransformerTokens.v1"' in config
    assert '"spacy-bioel.TransformerTokens.v1"' not in config
    text = "Carriers of familial adenomatous polyposis develop colorectal carcinomas."
    expected = [(e.start_char, e.end_char) for e in shipped.load_ner()(text).ents]
    script = (
        "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
        "import json\n"
        "from spacy_bioel.ner import shipped\n"
        f"doc = shipped.load_ner()({text!r})\n"
        "print(json.dumps([(e.start_char, e.end_char) for e in doc.ents]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert [tuple(span) for span in json.loads(out.stdout.strip().splitlines()[-1])] == expected
    assert len(expected) == 2


def test_it_reads_windows_of_128_pieces_without_overlap():
    """The stride chosen on dev for prediction (3 seeds: the same F1, 10-15% faster),
    in its config and in the layer that runs."""
    from spacy_bioel.ner.onnx_tokens import ONNX_ARCHITECTURE

    nlp = shipped.load_ner()
    (layer,) = [m for m in nlp.get_pipe("tok2vec").model.walk() if m.name == "onnx_transformer_tokens"]
    assert (layer.attrs["window"], layer.attrs["stride"]) == (128, 128)
    assert layer.shims[0].info["trained_stride"] == 96
    block = nlp.config["components"]["tok2vec"]["model"]["embed"]["embed"]
    assert block["@architectures"] == ONNX_ARCHITECTURE and block["stride"] == 128

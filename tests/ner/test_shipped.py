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
SHIPPED_DIGEST = "cde00b09e5157428b410bad9b2bb4ac3a32bfae89d2f93ca3ed2b93dda8a3e75"


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


# the shipped NER in a child, on a CPU forced to count as saturating uint8 x int8
# products: "record" with `onnx` not importable, "rewrite" without its record
SATURATING_CHILD = """
import json, sys
if sys.argv[1] == "record":
    sys.modules["onnx"] = None
from spacy_bioel.ner import shipped
nlp = shipped.load_ner()
(layer,) = [m for m in nlp.get_pipe("tok2vec").model.walk() if m.name == "onnx_transformer_tokens"]
if sys.argv[1] == "rewrite":
    layer.shims[0].unsigned = None
docs = list(nlp.pipe(json.loads(sys.argv[2])))
print(json.dumps({"ents": [[(e.start_char, e.end_char) for e in d.ents] for d in docs],
                  "vectors": float(sum(abs(v).sum() for v in layer.predict(docs))),
                  "given": len(layer.shims[0]._session.bioel_weights),
                  "onnx": sys.modules.get("onnx") is not None}))
"""


def test_it_opens_without_onnx_where_the_cpu_saturates():
    """On an AVX2 CPU without VNNI the NER's int8 matmuls are made exact before its
    session opens; the shipped model carries that rewrite's record (its graph's
    companion and where its weights lie), so such a CPU opens it without `onnx`
    (about 1 s of `link TEXT` there) and finds what the rewrite finds."""
    import os

    from spacy_bioel.encoders.int8_exact import ENV, inline_matches

    (layer,) = [m for m in shipped.load_ner().get_pipe("tok2vec").model.walk()
                if m.name == "onnx_transformer_tokens"]
    record = layer.shims[0].unsigned
    assert inline_matches(record, layer.shims[0].graph) and record["unsigned"]
    assert len(record["unsigned"]) < len(layer.shims[0].graph) / 20
    texts = ["Germline mutations of the APC gene cause familial adenomatous polyposis.",
             "Several carriers had hepatoblastoma or colorectal carcinomas ; one had asthma ."]
    got = {}
    for mode in ("record", "rewrite"):
        out = subprocess.run([sys.executable, "-c", SATURATING_CHILD, mode, json.dumps(texts)],
                             capture_output=True, text=True, timeout=600, env={**os.environ, ENV: "1"})
        assert out.returncode == 0, out.stderr[-3000:]
        got[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["record"]["onnx"] is False and got["rewrite"]["onnx"] is True
    assert got["record"]["given"] == len(record["weights"]) and got["rewrite"]["given"] == 0
    assert got["record"]["ents"] == got["rewrite"]["ents"] and got["record"]["ents"][0]
    assert got["record"]["vectors"] == pytest.approx(got["rewrite"]["vectors"], rel=1e-6)

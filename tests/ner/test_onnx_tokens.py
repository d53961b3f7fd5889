"""`spacy-bioel.OnnxTransformerTokens.v1` and `ner-onnx`: a trained in-context NER
served by ONNX Runtime reads what its PyTorch layer reads, and loads without PyTorch."""
import logging
import subprocess
import sys

import numpy as np
import pytest
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_bioel.cli import app

from spacy_bioel.errors import BioELError
from spacy_bioel.ner.onnx_tokens import (build_onnx_transformer_tokens, convert_pipeline,
                                         encode_tokens, onnx_config)
from tests.utils import trained_context_ner

pytest.importorskip("torch", reason="the train extra")
pytest.importorskip("onnx", reason="exporting needs onnx")

TEXTS = ["Patients with colon cancer .", "Asthma was frequent .",
         " ".join(["Colon cancer and asthma ."] * 8) + "\n\n"]


def _ner(tiny_bert_dir):
    return trained_context_ner(tiny_bert_dir)


def _invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _layer(nlp, name):
    return next(n for n in nlp.get_pipe("tok2vec").model.walk() if n.name == name)


def _vectors(nlp, name, texts):
    layer = _layer(nlp, name)
    return layer.predict([nlp.make_doc(t) for t in texts])


@pytest.mark.parametrize("quantize,atol", [(None, 1e-4), ("int8", None), ("int8-all", None)])
def test_the_converted_layer_reads_what_the_pytorch_layer_read(tiny_bert_dir, quantize, atol):
    nlp = _ner(tiny_bert_dir)
    before = _vectors(nlp, "transformer_tokens", TEXTS)
    ents = [[(e.start, e.end) for e in doc.ents] for doc in nlp.pipe(TEXTS)]
    root = logging.getLogger()
    saved = list(root.handlers)  # as in a plain process: the root logger has no handler
    for handler in saved:
        root.removeHandler(handler)
    try:
        blocks = convert_pipeline(nlp, quantize)
        assert root.handlers == []  # the quantiser's logging.info left none behind
    finally:
        for handler in saved:
            root.addHandler(handler)
    assert list(blocks) == ["tok2vec"] and blocks["tok2vec"]["width"] == 32
    after = _vectors(nlp, "onnx_transformer_tokens", TEXTS)
    assert [a.shape for a in after] == [b.shape for b in before]
    assert np.abs(after[2][-1]).sum() == 0.0  # the white-space token still has no piece
    for a, b in zip(after, before):
        if atol:
            assert np.allclose(a, b, atol=atol)
        else:  # int8: close in direction, token by token
            real = np.abs(b).sum(1) > 0
            cos = (a[real] * b[real]).sum(1) / (np.linalg.norm(a[real], axis=1) *
                                                np.linalg.norm(b[real], axis=1))
            assert cos.min() > 0.9
    if quantize is None:
        assert [[(e.start, e.end) for e in doc.ents] for doc in nlp.pipe(TEXTS)] == ents


def test_a_documents_vectors_do_not_depend_on_its_batch(tiny_bert_dir):
    nlp = _ner(tiny_bert_dir)
    convert_pipeline(nlp, "int8")
    shim = _layer(nlp, "onnx_transformer_tokens").shims[0]
    docs = [nlp.make_doc(t) for t in TEXTS]
    alone = encode_tokens(shim, docs[:1], 16, 8)
    together = encode_tokens(shim, docs, 16, 8)
    assert np.allclose(alone, together[:len(docs[0])], atol=1e-6)


def test_saved_converted_pipeline_loads_and_predicts_without_pytorch(tiny_bert_dir, tmp_path):
    nlp = _ner(tiny_bert_dir)
    expected = [[(e.start, e.end, e.label_) for e in doc.ents] for doc in nlp.pipe(TEXTS)]
    nlp.to_disk(tmp_path / "trained")
    gold = nlp.make_doc("Patients with colon cancer .")
    gold.ents = [gold.char_span(14, 26, label="SpecificDisease")]  # read under the NER's one label
    DocBin(docs=[gold]).to_disk(tmp_path / "dev.spacy")
    result = _invoke("ner-onnx", tmp_path / "trained", tmp_path / "onnx", "--quantize", "none",
                     "--dev", tmp_path / "dev.spacy")
    assert result.exit_code == 0, (result.output, result.exception)
    assert "PyTorch: NER F1 100.00" in result.output and "ONNX: NER F1 100.00" in result.output
    text = (tmp_path / "onnx" / "config.cfg").read_text()
    assert "spacy-bioel.OnnxTransformerTokens.v1" in text
    assert "spacy-bioel.TransformerTokens.v1" not in text
    script = (
        "import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
        "import json, spacy, spacy_bioel\n"
        f"nlp = spacy.load({str(tmp_path / 'onnx')!r})\n"
        f"print(json.dumps([[(e.start, e.end, e.label_) for e in d.ents] for d in nlp.pipe({TEXTS!r})]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert [[tuple(e) for e in doc] for doc in __import__("json").loads(out.stdout)] == expected


def test_converting_in_place_or_a_pipeline_without_the_layer_is_refused(tiny_bert_dir, tmp_path):
    nlp = _ner(tiny_bert_dir)
    nlp.to_disk(tmp_path / "trained")
    result = _invoke("ner-onnx", tmp_path / "trained", tmp_path / "trained")
    assert isinstance(result.exception, BioELError) and result.exception.code == "E258"
    assert "TransformerTokens.v1" in (tmp_path / "trained" / "config.cfg").read_text()
    plain = spacy.blank("en")
    plain.add_pipe("sentencizer")
    with pytest.raises(BioELError, match="E256"):
        convert_pipeline(plain)


def test_a_prediction_stride_is_set_in_the_layer_and_its_config(tiny_bert_dir, tmp_path):
    """`ner-onnx --stride`: windows apart by another stride at prediction (the
    trained one kept in the graph's info); more than the window is E175."""
    nlp = _ner(tiny_bert_dir)
    window = _layer(nlp, "transformer_tokens").attrs["window"]
    with pytest.raises(BioELError, match="E175"):
        convert_pipeline(_ner(tiny_bert_dir), None, stride=window + 1)
    nlp.to_disk(tmp_path / "trained")
    result = _invoke("ner-onnx", tmp_path / "trained", tmp_path / "onnx", "--quantize", "none",
                     "--stride", window)
    assert result.exit_code == 0, (result.output, result.exception)
    loaded = spacy.load(tmp_path / "onnx")
    layer = _layer(loaded, "onnx_transformer_tokens")
    assert layer.attrs["stride"] == window and layer.shims[0].info["trained_stride"] < window
    text = (tmp_path / "onnx" / "config.cfg").read_text()
    block = text[text.index('"spacy-bioel.OnnxTransformerTokens.v1"'):]
    assert f"stride = {window}\n" in block.split("\n[")[0] + "\n"
    assert [len(d.ents) >= 0 for d in loaded.pipe(["Patients with colon cancer ."])] == [True]


def test_a_fresh_layer_has_no_graph():
    layer = build_onnx_transformer_tokens(width=32)
    with pytest.raises(BioELError, match="E255"):
        layer.predict([spacy.blank("en")("colon cancer")])


def test_onnx_config_swaps_the_pytorch_block():
    config = {"components": {"tok2vec": {"model": {"embed": {"embed": {
        "@architectures": "spacy-bioel.TransformerTokens.v1", "encoder": "x", "frozen": False}}}}}}
    block = {"@architectures": "spacy-bioel.OnnxTransformerTokens.v1", "width": 32}
    assert onnx_config(config, {"tok2vec": block}) == 1
    assert config["components"]["tok2vec"]["model"]["embed"]["embed"] == block


def test_a_pipeline_given_an_in_context_ner_batches_what_it_batches(tiny_bert_dir, tmp_path):
    """`with_ner`: an NER reading a transformer holds a batch's token vectors at
    once, so the pipeline takes its (smaller) batch size; another NER leaves it."""
    from spacy_bioel.pipeline.embedded_default import with_ner
    from tests.utils import save_linker_pipeline

    save_linker_pipeline(tmp_path / "linker", tiny_bert_dir, [("D1", "colon cancer")])

    def linker_only():
        return spacy.load(tmp_path / "linker")

    context = trained_context_ner(tiny_bert_dir, steps=1)
    context.batch_size = 16
    nlp = with_ner(linker_only(), context)
    assert nlp.pipe_names == ["tok2vec", "ner", "bioel_mention_consistency", "bioel_linker"]
    assert nlp.batch_size == 16
    cnn = spacy.blank("en")
    cnn.add_pipe("tok2vec")
    cnn.add_pipe("ner")
    cnn.initialize()
    cnn.batch_size = 16
    assert with_ner(linker_only(), cnn).batch_size == 1000


# a converted NER in a child, on a CPU forced to count as saturating uint8 x int8
# products and where `onnx` cannot be imported: its layer's vectors and session
NO_ONNX_CHILD = """
import json, sys
sys.modules["onnx"] = None
import spacy
nlp = spacy.load(sys.argv[1])
(layer,) = [m for m in nlp.get_pipe("tok2vec").model.walk() if m.name == "onnx_transformer_tokens"]
vectors = layer.predict([nlp.make_doc(t) for t in json.loads(sys.argv[2])])
print(json.dumps({"vectors": [v.tolist() for v in vectors],
                  "given": len(layer.shims[0]._session.bioel_weights)}))
"""


def test_a_saved_int8_layer_opens_without_onnx_where_the_cpu_saturates(tiny_bert_dir, tmp_path,
                                                                       monkeypatch):
    """Saving the layer writes its graph's inline record (`inline_unsigned`: the
    rewrite's companion, and where each weight it reads lies in the graph's
    bytes), so a CPU that saturates opens it without `onnx` and reads what the
    rewrite reads; a record for other bytes is not used, and a layer loaded
    without one (saved before) writes it when saved."""
    import json
    import os

    import srsly

    from spacy_bioel.encoders import int8_exact
    from spacy_bioel.encoders.int8_exact import ENV, inline_matches, read_inline

    monkeypatch.setattr(int8_exact, "INLINE_MIN_BYTES", 64)  # the tiny model's weights are small
    nlp = _ner(tiny_bert_dir)
    nlp.to_disk(tmp_path / "trained")
    result = _invoke("ner-onnx", tmp_path / "trained", tmp_path / "onnx", "--quantize", "int8-all")
    assert result.exit_code == 0, (result.output, result.exception)
    shim = _layer(spacy.load(tmp_path / "onnx"), "onnx_transformer_tokens").shims[0]
    record = shim.unsigned
    assert inline_matches(record, shim.graph) and record["unsigned"] is not None
    assert any(w["flip"] for w in record["weights"]) and any(not w["flip"] for w in record["weights"])
    companion, weights = read_inline(shim.graph, record)
    assert len(companion) < len(shim.graph)
    for entry in record["weights"]:
        assert weights[entry["name"]].dtype == (np.uint8 if entry["flip"] else np.dtype(entry["dtype"]))
    assert read_inline(b"x" + shim.graph[1:], record) is None  # written for other bytes
    moved = {**record, "weights": [{**record["weights"][0], "offset": len(shim.graph)}]}
    assert read_inline(shim.graph, moved) is None  # names values the graph does not hold

    monkeypatch.setenv(ENV, "1")
    int8_exact.u8s8_saturates.cache_clear()
    try:
        rewrite = _layer(spacy.load(tmp_path / "onnx"), "onnx_transformer_tokens")
        rewrite.shims[0].unsigned = None  # the rewrite itself, for comparison
        want = rewrite.predict([nlp.make_doc(t) for t in TEXTS])
        assert len(rewrite.shims[0]._session.bioel_weights) == 0
    finally:
        monkeypatch.delenv(ENV)
        int8_exact.u8s8_saturates.cache_clear()
    child = subprocess.run([sys.executable, "-c", NO_ONNX_CHILD, str(tmp_path / "onnx"), json.dumps(TEXTS)],
                           capture_output=True, text=True, timeout=300, env={**os.environ, ENV: "1"})
    assert child.returncode == 0, child.stderr[-3000:]
    got = json.loads(child.stdout.strip().splitlines()[-1])
    assert got["given"] == len(record["weights"])
    for a, b in zip(got["vectors"], want):
        np.testing.assert_allclose(np.array(a, dtype=np.float32), b, rtol=0, atol=1e-6)

    shim.unsigned = None  # as a layer saved before records were written
    assert inline_matches(srsly.msgpack_loads(shim.to_bytes())["unsigned"], shim.graph)


def test_a_float32_layers_record_says_it_opens_as_it_is(tiny_bert_dir):
    nlp = _ner(tiny_bert_dir)
    convert_pipeline(nlp, None)
    shim = _layer(nlp, "onnx_transformer_tokens").shims[0]
    record = shim.record()
    assert record["unsigned"] is None and record["weights"] == []
    from spacy_bioel.encoders.int8_exact import read_inline

    assert read_inline(shim.graph, record) == (None, {})

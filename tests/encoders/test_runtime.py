"""The prediction runtimes: ONNX reproduces the PyTorch mention tower (float32;
int8 close), a pipeline saved with it predicts without building the PyTorch
module (and without PyTorch installed), builds it on demand, and saving it,
over itself too, loses nothing."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import spacy
from spacy.tokens import Span

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.encoders.runtime import OnnxRuntime, TorchRuntime
from spacy_bioel.encoders.thinc_biencoder import embed_texts
from spacy_bioel.errors import BioELError
from tests.utils import drop_manifest, needs, tiny_linker_config

ONNX_EXTRA = needs("onnxruntime", "onnx")

TEXTS = ["colon cancer", "heart attack", "Asthma", "a much longer mention of a disease", "x"]
ONNX = {"@misc": "spacy-bioel.OnnxRuntime.v1", "quantize": None}  # float32 (the default is int8-all)


def toy_kb():
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("colon cancer",)))
    kb.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    kb.add(Concept("D3", "asthma"))
    return kb


def build(tiny_bert_dir, **runtime):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, runtime={**ONNX, **runtime}))
    nlp.get_pipe("bioel_linker").set_kb(toy_kb())
    nlp.initialize()
    return nlp


def links(nlp):
    out = []
    for text in TEXTS:
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, 0, len(doc), label="Disease")]
        out.append([(c, round(p, 4)) for c, p in nlp(doc).ents[0]._.kb_ents])
    return out


def same_links(got, want, tolerance=1e-3):
    """The same candidates in the same order, probabilities equal up to float noise
    (a rounded 4th decimal can flip)."""
    return all([c for c, _ in g] == [c for c, _ in w] and
               all(abs(p - q) <= tolerance for (_, p), (_, q) in zip(g, w))
               for g, w in zip(got, want)) and len(got) == len(want)


@ONNX_EXTRA
def test_onnx_reproduces_the_torch_mention_tower(tiny_bert_dir):
    nlp = build(tiny_bert_dir)
    linker = nlp.get_pipe("bioel_linker")
    want = embed_texts(linker.model, TEXTS, "mention")
    got = linker.runtime.encode(linker.model, TEXTS, batch_size=2)  # padded batches of 2
    assert np.allclose(got, want, atol=1e-5)
    for quantize in ("int8", "int8-all"):
        linker.set_stage("runtime", OnnxRuntime(quantize=quantize))
        cosine = (linker.runtime.encode(linker.model, TEXTS, 64) * want).sum(axis=1)
        assert cosine.min() > 0.9


def record_calls(runtime, monkeypatch):
    """The (rows, width) of each ONNX Runtime call of `runtime` from now on, and
    whether every row of each call was a whole text (no padding)."""
    calls = []
    session = runtime._session

    class Recording:
        def run(self, outputs, feeds):
            calls.append((feeds["input_ids"].shape, bool(feeds["attention_mask"].all())))
            return session.run(outputs, feeds)

    monkeypatch.setattr(runtime, "_session", Recording())
    return calls


@ONNX_EXTRA
@pytest.mark.parametrize("quantize", ["int8", "int8-all"])
def test_a_quantised_graph_scales_each_row_and_batches_texts_of_one_length(tiny_bert_dir, quantize,
                                                                           monkeypatch):
    """The int8 graph quantises each token row with its own scale
    (`scale_rows`), so a text's embedding is the same whatever is encoded beside
    it (a mention links the same way in any batch), and texts of one token
    length share a call, unpadded."""
    nlp = build(tiny_bert_dir, quantize=quantize)
    linker = nlp.get_pipe("bioel_linker")
    texts = TEXTS + ["lung cancer", "heart failure", "colon polyps"]
    alone = np.stack([linker.runtime.encode(linker.model, [text], 64)[0] for text in texts])
    assert linker.runtime._row_scaled
    calls = record_calls(linker.runtime, monkeypatch)
    together = linker.runtime.encode(linker.model, texts, 64)
    lengths = linker.runtime._tokenizer(texts)[1].sum(axis=1)
    assert len(calls) == len(set(lengths.tolist())) < len(texts)  # one call a token length
    assert all(unpadded for _, unpadded in calls)
    others = ["a very long mention of another disease entirely, with more words", "MI"]
    mixed = linker.runtime.encode(linker.model, others + texts[::-1], 64)[len(others):][::-1]
    assert np.allclose(together, alone, atol=1e-6, rtol=0)
    assert np.allclose(mixed, alone, atol=1e-6, rtol=0)


@ONNX_EXTRA
def test_encoding_many_texts_shows_progress_and_makes_the_same_calls(tiny_bert_dir, monkeypatch,
                                                                     capsys):
    """The first `link` encodes every name of the embedded KB (a minute on a
    slow CPU): with `progress`, a bar counts the distinct texts as they are
    encoded; the calls, and so the embeddings, are those made without it. A
    single group of texts shows no bar."""
    from spacy_bioel import progress
    from spacy_bioel.encoders import runtime as runtime_module

    monkeypatch.setenv(progress.ENV_VAR, "1")
    monkeypatch.setattr(runtime_module, "QUANTISED_GROUP", 1)
    nlp = build(tiny_bert_dir, quantize="int8-all")
    linker = nlp.get_pipe("bioel_linker")
    texts = TEXTS + ["lung cancer", "heart failure", "colon polyps"] * 2  # 8 distinct texts
    linker.runtime.encode(linker.model, texts[:1], 2)  # the session opened
    quiet_calls = record_calls(linker.runtime, monkeypatch)
    quiet = linker.runtime.encode(linker.model, texts, 2)
    capsys.readouterr()
    monkeypatch.undo()
    monkeypatch.setenv(progress.ENV_VAR, "1")
    monkeypatch.setattr(runtime_module, "QUANTISED_GROUP", 1)
    calls = record_calls(linker.runtime, monkeypatch)
    shown = linker.runtime.encode(linker.model, texts, 2, progress="Encoding names")
    err = capsys.readouterr().err
    assert "Encoding names" in err and "/8 " in err  # groups of 2 texts: 4 groups, 8 texts
    assert calls == quiet_calls and np.array_equal(shown, quiet)
    linker.runtime.encode(linker.model, texts[:2], 2, progress="Encoding names")
    assert "Encoding names" not in capsys.readouterr().err


@ONNX_EXTRA
def test_a_graph_quantised_with_one_scale_a_call_encodes_each_text_alone(tiny_bert_dir, monkeypatch):
    """A graph quantised as ONNX Runtime writes it (one activation scale a call,
    as pipelines saved before `scale_rows`) has no row-scale mark: one text a
    call, so its embeddings do not depend on the batch either."""
    from spacy_bioel.encoders import onnx_export

    monkeypatch.setattr(onnx_export, "scale_rows", lambda data: data)
    nlp = build(tiny_bert_dir, quantize="int8")
    linker = nlp.get_pipe("bioel_linker")
    alone = np.stack([linker.runtime.encode(linker.model, [text], 64)[0] for text in TEXTS])
    assert not linker.runtime._row_scaled
    calls = record_calls(linker.runtime, monkeypatch)
    assert np.allclose(linker.runtime.encode(linker.model, TEXTS, 64), alone, atol=1e-6, rtol=0)
    assert [rows for (rows, _), _ in calls] == [1] * len(TEXTS)


@ONNX_EXTRA
def test_a_saved_graph_keeps_its_row_scales(tiny_bert_dir, tmp_path):
    """A saved pipeline's int8 graph keeps its row-scale mark: loaded, it batches
    by length and encodes as before saving."""
    nlp = build(tiny_bert_dir, quantize="int8")
    linker = nlp.get_pipe("bioel_linker")
    rows = linker.runtime.encode(linker.model, TEXTS, 64)
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    runtime = loaded.get_pipe("bioel_linker").runtime
    assert runtime._row_scaled
    assert np.allclose(runtime.encode(loaded.get_pipe("bioel_linker").model, TEXTS, 64), rows, atol=1e-6)


@ONNX_EXTRA
def test_a_batch_of_long_texts_is_split_to_a_token_budget(tiny_bert_dir, monkeypatch):
    """No ONNX Runtime call holds more than batch_size * TOKENS_PER_TEXT tokens
    (padding included): long texts run in smaller calls, each padded to its own
    longest text, and get the embeddings of one call (float32: to rounding)."""
    import spacy_bioel.encoders.runtime as runtime_module

    nlp = build(tiny_bert_dir)
    linker = nlp.get_pipe("bioel_linker")
    texts = [f"{' '.join(['a much longer disease mention'] * (1 + i % 3))} {i}" for i in range(9)]
    texts += ["x", "colon cancer"]
    want = embed_texts(linker.model, texts, "mention")
    linker.runtime.encode(linker.model, texts, batch_size=8)  # exported, session opened
    shapes = []
    session = linker.runtime._session

    class Recording:
        def run(self, outputs, feeds):
            shapes.append(feeds["input_ids"].shape)
            assert feeds["input_ids"].flags.c_contiguous
            return session.run(outputs, feeds)

    monkeypatch.setattr(linker.runtime, "_session", Recording())
    monkeypatch.setattr(runtime_module, "TOKENS_PER_TEXT", 3)
    got = linker.runtime.encode(linker.model, texts, batch_size=8)
    assert np.allclose(got, want, atol=1e-5)
    assert max(rows * width for rows, width in shapes) <= 8 * 3 or \
        all(rows == 1 for rows, width in shapes if rows * width > 8 * 3)
    assert len(shapes) > 2 and sum(rows for rows, _ in shapes) == len(texts)
    monkeypatch.setattr(runtime_module, "TOKENS_PER_TEXT", 1000)
    shapes.clear()
    linker.runtime.encode(linker.model, texts, batch_size=8)
    assert [rows for rows, _ in shapes] == [8, 3]  # short enough: the batches as they were


@ONNX_EXTRA
def test_the_concept_tower_exports_too(tiny_bert_dir):
    """`tower="concept"` (benchmark-index --encode-with onnx) encodes with the
    concept tower, not the mention tower, when the two differ."""
    import torch

    from spacy_bioel.encoders.thinc_biencoder import torch_module

    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, model={
        "@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
        "pooling": "mean", "max_length": 16, "shared_towers": False}))
    linker = nlp.get_pipe("bioel_linker")
    linker.set_kb(toy_kb())
    nlp.initialize()
    with torch.no_grad():  # make the towers differ
        for weight in torch_module(linker.model).tower("mention").parameters():
            weight.add_(0.05 * torch.randn_like(weight))
    concept = embed_texts(linker.model, TEXTS, "concept")
    mention = embed_texts(linker.model, TEXTS, "mention")
    assert not np.allclose(concept, mention, atol=1e-3)
    got = OnnxRuntime(tower="concept").encode(linker.model, TEXTS, 2)
    assert np.allclose(got, concept, atol=1e-5)
    cosine = (OnnxRuntime(quantize="int8", tower="concept").encode(linker.model, TEXTS, 64)
              * concept).sum(axis=1)
    assert cosine.min() > 0.9


@ONNX_EXTRA
def test_a_saved_onnx_pipeline_predicts_without_the_torch_module(tiny_bert_dir, tmp_path):
    nlp = build(tiny_bert_dir)
    want = links(nlp)
    nlp.to_disk(tmp_path / "p")
    assert (tmp_path / "p" / "bioel_linker" / "runtime" / "mention.onnx").exists()
    loaded = spacy.load(tmp_path / "p")
    linker = loaded.get_pipe("bioel_linker")
    assert linker.deferred_model is not None and not linker.model.layers
    from collections import Counter

    linker.runtime.timings = Counter()  # the lab's hook
    assert links(loaded) == want
    assert linker.runtime.timings["tokenize"] > 0  # the benchmark's tokenising share
    loaded.to_disk(tmp_path / "p")  # over itself, still deferred: the weights are copied
    loaded.to_disk(tmp_path / "q")
    original = (tmp_path / "p" / "bioel_linker" / "model").read_bytes()
    assert (tmp_path / "q" / "bioel_linker" / "model").read_bytes() == original
    again = spacy.load(tmp_path / "q")
    assert links(again) == want
    linker = again.get_pipe("bioel_linker")
    linker.refresh()  # needs PyTorch: the module is built from the pinned weights
    assert linker.model.layers and linker.deferred_model is None
    assert links(again) == want


@ONNX_EXTRA
def test_a_deferred_weights_file_is_checked_when_its_bytes_are_used(tiny_bert_dir, tmp_path):
    """Served by ONNX, the weights file is not read to predict, so loading checks
    its size only; its SHA-256 is compared before it is built or copied."""
    nlp = build(tiny_bert_dir)
    want = links(nlp)
    nlp.to_disk(tmp_path / "p")
    weights = tmp_path / "p" / "bioel_linker" / "model"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01  # same size, other bytes
    weights.write_bytes(bytes(data))
    loaded = spacy.load(tmp_path / "p")
    assert links(loaded) == want  # predicting never reads the weights
    with pytest.raises(BioELError, match="E176") as err:  # not copied into a new manifest
        loaded.to_disk(tmp_path / "q")
    assert str(weights) in str(err.value) and "SHA-256" in str(err.value)
    with pytest.raises(BioELError, match="E176"):
        spacy.load(tmp_path / "p").get_pipe("bioel_linker").refresh()  # built from them
    weights.write_bytes(bytes(data[:-1]))  # another size: refused at loading
    with pytest.raises(BioELError, match="E176"):
        spacy.load(tmp_path / "p")


@ONNX_EXTRA
def test_a_damaged_onnx_file_is_named(tiny_bert_dir, tmp_path):
    nlp = build(tiny_bert_dir)
    nlp.to_disk(tmp_path / "p")
    component = tmp_path / "p" / "bioel_linker"
    graph = component / "runtime" / "mention.onnx"
    graph.write_bytes(graph.read_bytes()[:1000])
    with pytest.raises(BioELError, match="E176") as err:  # the manifest's checksum
        spacy.load(tmp_path / "p")
    assert str(graph) in str(err.value) and "repair-pipeline" in str(err.value)
    drop_manifest(component)  # as if saved without one: the file does not parse
    with pytest.raises(BioELError, match="E176") as err:
        spacy.load(tmp_path / "p")
    assert str(graph) in str(err.value)


@ONNX_EXTRA
def test_the_saved_graph_keeps_its_weights_in_a_file_beside_it(tiny_bert_dir, tmp_path):
    """runtime/mention.onnx holds the nodes, mention.onnx.data the weights (format 2:
    ONNX Runtime maps them); both are in the manifest; a pipeline saved in one file
    before the split (format 1) still loads, and is saved again as it was."""
    import json

    from spacy_bioel.encoders.onnx_export import read_graph

    nlp = build(tiny_bert_dir)
    want = links(nlp)
    nlp.to_disk(tmp_path / "p")
    runtime = tmp_path / "p" / "bioel_linker" / "runtime"
    graph, data = runtime / "mention.onnx", runtime / "mention.onnx.data"
    assert json.loads((runtime / "runtime.json").read_text())["format"] == 2
    assert data.stat().st_size > graph.stat().st_size and data.stat().st_mode == graph.stat().st_mode
    manifest = json.loads((tmp_path / "p" / "bioel_linker" / "manifest.json").read_text())
    assert {"runtime/mention.onnx", "runtime/mention.onnx.data"} <= set(manifest["files"])
    assert links(spacy.load(tmp_path / "p")) == want
    spacy.load(tmp_path / "p").to_disk(tmp_path / "again")  # copied from the pinned files
    assert (tmp_path / "again" / "bioel_linker" / "runtime" / "mention.onnx.data").is_file()
    assert links(spacy.load(tmp_path / "again")) == want

    whole = read_graph(graph)  # as saved before the split
    graph.write_bytes(whole)
    data.unlink()
    (runtime / "runtime.json").write_text(json.dumps({"format": 1, "quantize": None, "student": None}))
    drop_manifest(tmp_path / "p" / "bioel_linker")
    old = spacy.load(tmp_path / "p")
    assert links(old) == want
    old.to_disk(tmp_path / "p")  # over itself
    assert not data.exists() and graph.read_bytes() == whole
    assert links(spacy.load(tmp_path / "p")) == want

    nlp.to_disk(tmp_path / "gone")
    (tmp_path / "gone" / "bioel_linker" / "runtime" / "mention.onnx.data").unlink()
    with pytest.raises(BioELError, match="E156") as err:
        spacy.load(tmp_path / "gone")
    assert "mention.onnx.data" in str(err.value)


@ONNX_EXTRA
def test_a_new_runtime_on_a_loaded_onnx_pipeline_builds_the_module_to_export(tiny_bert_dir,
                                                                              tmp_path):
    """`set-stage PIPE OUT runtime ...` on a pipeline served by ONNX (its PyTorch
    module deferred): the new runtime exports from the weights, it does not stop
    at E168 when the graph is saved or a mention encoded."""
    nlp = build(tiny_bert_dir)
    want = links(nlp)
    nlp.to_disk(tmp_path / "p")
    for quantize in ("int8", None):
        loaded = spacy.load(tmp_path / "p")
        linker = loaded.get_pipe("bioel_linker")
        assert linker.deferred_model is not None
        linker.set_stage("runtime", OnnxRuntime(quantize=quantize))
        got = links(loaded)
        if quantize is None:
            assert same_links(got, want)
        loaded.to_disk(tmp_path / f"q{quantize}")
        assert same_links(links(spacy.load(tmp_path / f"q{quantize}")), got)


@ONNX_EXTRA
def test_a_pipeline_from_bytes_reopens_its_graph_after_the_files_are_gone(tiny_bert_dir):
    nlp = build(tiny_bert_dir)
    want = links(nlp)
    loaded = spacy.blank("en")
    loaded.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, runtime=ONNX))
    loaded.from_bytes(nlp.to_bytes())  # read through a temporary folder, removed since
    linker = loaded.get_pipe("bioel_linker")
    assert linker.deferred_model is not None
    linker.runtime._session = None  # as in a forked worker
    assert links(loaded) == want


def test_settings_are_checked():
    with pytest.raises(BioELError, match="E175"):
        OnnxRuntime(quantize="int4")
    with pytest.raises(BioELError, match="E175"):
        TorchRuntime(threads=-1)


def test_missing_onnxruntime_is_a_coded_error(tiny_bert_dir, monkeypatch):
    nlp = build(tiny_bert_dir)
    linker = nlp.get_pipe("bioel_linker")
    linker.set_stage("runtime", OnnxRuntime())
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(BioELError, match="E178"):
        linker.runtime.encode(linker.model, TEXTS, 64)


NO_TORCH = textwrap.dedent("""
    import sys
    for name in ("torch", "transformers", "faiss", "scipy", "sklearn"):
        sys.modules[name] = None  # as in an environment without them
    import spacy
    from spacy.tokens import Span
    nlp = spacy.load(sys.argv[1])
    out = []
    for text in {texts!r}:
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, 0, len(doc), label="Disease")]
        out.append([(c, round(p, 4)) for c, p in nlp(doc).ents[0]._.kb_ents])
    print(repr(out))
    try:
        nlp.get_pipe("bioel_linker").refresh()
    except Exception as err:
        print(type(err).__name__, str(err)[:5])
""")


@ONNX_EXTRA
def test_an_onnx_pipeline_predicts_where_pytorch_is_not_installed(tiny_bert_dir, tmp_path):
    nlp = build(tiny_bert_dir)
    want = links(nlp)
    nlp.to_disk(tmp_path / "p")
    script = tmp_path / "no_torch.py"
    script.write_text(NO_TORCH.format(texts=TEXTS))
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "p")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert eval(lines[0]) == want
    assert lines[1] == "BioELError [E180"  # refreshing needs PyTorch: a coded error says so


def test_sessions_share_one_arena_and_give_what_a_session_of_its_own_gives():
    """Every session this package opens uses the one CPU arena registered with ONNX
    Runtime's environment (`shared_arena`): two graphs run in turn, with inputs of
    changing shapes, give what ONNX Runtime's own session of each gives."""
    pytest.importorskip("onnx")
    import onnxruntime
    from onnx import TensorProto, helper

    from spacy_bioel.encoders.onnx_sessions import new_session, shared_arena

    def graph(op: str) -> bytes:
        node = helper.make_node(op, ["a", "b"], ["c"])
        inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n", "n"]) for n in "ab"]
        out = helper.make_tensor_value_info("c", TensorProto.FLOAT, ["n", "n"])
        model = helper.make_model(helper.make_graph([node], op, inputs, [out]),
                                  opset_imports=[helper.make_opsetid("", 17)])
        return model.SerializeToString()

    ours = [new_session(graph(op)) for op in ("MatMul", "Add")]
    assert shared_arena(onnxruntime)
    own = [onnxruntime.InferenceSession(graph(op), providers=["CPUExecutionProvider"])
           for op in ("MatMul", "Add")]
    rng = np.random.default_rng(0)
    for n in (3, 64, 5, 128, 2):
        feed = {"a": rng.standard_normal((n, n), dtype=np.float32),
                "b": rng.standard_normal((n, n), dtype=np.float32)}
        for session, reference in zip(ours, own):
            assert np.array_equal(session.run(None, feed)[0], reference.run(None, feed)[0])

"""int8 graphs give the exact int32 products on every CPU (`encoders.int8_exact`):
the rewrite (int8 weights read as uint8 + 128; a B that is a graph input split)
is exact where ONNX Runtime's u8 x s8 kernel saturates (AVX2 without VNNI) and
where it does not; sessions opened by the package rewrite only where the probe
says so, and agree with the rewritten graph either way."""
import numpy as np
import pytest

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from spacy_bioel.encoders.int8_exact import (exact_graph, exact_products, probe,  # noqa: E402
                                             probe_graph, u8s8_saturates)
from spacy_bioel.encoders.onnx_sessions import new_session  # noqa: E402


def shifted_matmul(to_float: bool = False, weights=None) -> bytes:
    """MatMulInteger (or MatMulIntegerToFloat) of uint8 A with zero point 128
    (through an Identity, as `scale_rows` writes it) and int8 B with zero point 0:
    a graph input, or the initializer `weights`."""
    inputs = [helper.make_tensor_value_info("A", TensorProto.UINT8, ["batch", "k"])]
    inits = [numpy_helper.from_array(np.array(128, dtype=np.uint8), "zero_a"),
             numpy_helper.from_array(np.array(0, dtype=np.int8), "zero_b")]
    if weights is None:
        inputs.append(helper.make_tensor_value_info("B", TensorProto.INT8, ["k", "n"]))
    else:
        inits.append(numpy_helper.from_array(weights, "B"))
    nodes = [helper.make_node("Identity", ["zero_a"], ["zero"])]
    if to_float:
        inputs.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, ["n"]))
        inits.append(numpy_helper.from_array(np.array(0.5, dtype=np.float32), "a_scale"))
        nodes.append(helper.make_node("MatMulIntegerToFloat", ["A", "B", "a_scale", "scale", "zero"],
                                      ["Y"], domain="com.microsoft"))
        out = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", "n"])
    else:
        nodes.append(helper.make_node("MatMulInteger", ["A", "B", "zero", "zero_b"], ["Y"]))
        out = helper.make_tensor_value_info("Y", TensorProto.INT32, ["batch", "n"])
    graph = helper.make_graph(nodes, "shifted", inputs, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def operands(seed=0, k=384):
    """Random signed values in [-127, 127] (A shifted by 128), with the rows and
    columns that saturate an int16 pair sum: A all 255, B all +-127."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-127, 128, size=(6, k))
    b = rng.integers(-127, 128, size=(k, 5))
    a[0], a[1], b[:, 0], b[:, 1] = 127, -127, 127, -127
    return (a + 128).astype(np.uint8), b.astype(np.int8), a.astype(np.int64) @ b.astype(np.int64)


def run(graph, feeds):
    return new_session(graph, threads=1).run(None, feeds)[0]


def test_the_split_matmul_is_exact_on_every_cpu():
    a, b, want = operands()
    split, weights = exact_graph(shifted_matmul(), force=True)
    assert isinstance(split, bytes) and split != shifted_matmul() and not weights
    got = run(split, {"A": a, "B": b})
    assert got.dtype == np.int32 and (got.astype(np.int64) == want).all()


def test_the_split_matmul_to_float_is_exact_up_to_float_rounding():
    a, b, want = operands(seed=1)
    scale = np.linspace(0.01, 0.05, b.shape[1]).astype(np.float32)
    split, _ = exact_graph(shifted_matmul(to_float=True), force=True)
    got = run(split, {"A": a, "B": b, "scale": scale})
    np.testing.assert_allclose(got, want * 0.5 * scale, rtol=1e-6)


def test_int8_weights_read_as_uint8_are_exact_on_every_cpu():
    """B an int8 initializer: one uint8 x uint8 matmul (B + 128, zero point 128),
    no split, and the exact int32 products."""
    a, b, want = operands(seed=3)
    graph, weights = exact_graph(shifted_matmul(weights=b), force=True)
    model = onnx.load_from_string(graph)
    assert not weights and [n.op_type for n in model.graph.node].count("MatMulInteger") == 1
    kinds = {t.name: t.data_type for t in model.graph.initializer}
    assert "B" not in kinds and kinds["bioel_u8/B"] == TensorProto.UINT8
    got = run(graph, {"A": a})
    assert got.dtype == np.int32 and (got.astype(np.int64) == want).all()


def test_sessions_of_the_package_are_exact_where_the_probe_says_the_cpu_saturates():
    """new_session splits only where `u8s8_saturates`; the product is exact either way."""
    a, b, want = operands(seed=2)
    got = run(shifted_matmul(), {"A": a, "B": b})
    assert (got.astype(np.int64) == want).all(), f"u8s8_saturates() = {u8s8_saturates()}"
    got = run(shifted_matmul(weights=b), {"A": a})
    assert (got.astype(np.int64) == want).all(), f"u8s8_saturates() = {u8s8_saturates()}"
    assert probe(probe_graph()) is not u8s8_saturates()


def test_graphs_without_a_shifted_uint8_operand_are_left_as_they_are():
    assert exact_graph(probe_graph(), force=True) == (probe_graph(), {})  # no zero point: not ours
    model = onnx.load_from_string(shifted_matmul())
    assert exact_products(model).count == 1
    assert exact_products(onnx.load_from_string(probe_graph())).count == 0
    assert exact_graph(b"not read", force=False) == (b"not read", {})


def test_the_int8_mention_graph_is_split_and_encodes_the_same(tiny_bert_dir):
    """The package's int8 mention graph (per-row activations, uint8 + 128) has
    shifted matmuls; its sessions give the split graph's embeddings on this CPU."""
    from spacy_bioel.encoders.onnx_export import export_mention_encoder
    from spacy_bioel.encoders.thinc_biencoder import build_biencoder, tokenize

    model = build_biencoder(str(tiny_bert_dir))
    model.initialize()
    data = export_mention_encoder(model, quantize="int8-all")
    assert exact_products(onnx.load_from_string(data)).count > 0
    ids, mask = tokenize(model, ["colon cancer", "familial adenomatous polyposis", "FAP"], "cpu")
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    exact, _ = exact_graph(data, force=True)
    np.testing.assert_allclose(run(data, feeds), run(exact, feeds), rtol=0, atol=1e-6)


def test_a_tower_saved_as_two_files_keeps_its_weights_in_their_file(tiny_bert_dir, tmp_path,
                                                                    monkeypatch):
    """Forced to rewrite, a graph saved with external weights is read without
    them: its int8 matmul weights are read from their file as uint8 for the
    session, the others stay in their file (ONNX Runtime maps them from the
    folder it is told), and it encodes as the rewritten bytes do."""
    from spacy_bioel.encoders import int8_exact
    from spacy_bioel.encoders.onnx_export import export_mention_encoder, save_split
    from spacy_bioel.encoders.thinc_biencoder import build_biencoder, tokenize

    model = build_biencoder(str(tiny_bert_dir))
    model.initialize()
    data = export_mention_encoder(model, quantize="int8")
    save_split(data, tmp_path / "mention.onnx", tmp_path / "mention.onnx.data")
    assert (tmp_path / "mention.onnx.data").exists()
    monkeypatch.setenv(int8_exact.ENV, "1")
    int8_exact.u8s8_saturates.cache_clear()
    try:
        split, weights = exact_graph(tmp_path / "mention.onnx")
        assert isinstance(split, bytes) and weights
        assert all(array.dtype == np.uint8 for array in weights.values())
        kept = onnx.load_from_string(split).graph.initializer
        assert any(t.data_location == TensorProto.EXTERNAL for t in kept)  # named, not read
        ids, mask = tokenize(model, ["colon cancer", "FAP"], "cpu")
        feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
        want = run(exact_graph(data, force=True)[0], feeds)
        np.testing.assert_allclose(run(str(tmp_path / "mention.onnx"), feeds), want, rtol=0, atol=1e-6)
        # an ONNX Runtime that does not know the folder option: the weights are read whole
        monkeypatch.setattr("spacy_bioel.encoders.onnx_sessions.EXTERNAL_FOLDER", "bioel.unknown")
        np.testing.assert_allclose(run(str(tmp_path / "mention.onnx"), feeds), want, rtol=0, atol=1e-6)
    finally:
        int8_exact.u8s8_saturates.cache_clear()


def test_reports_say_whether_int8_was_split_here():
    from spacy_bioel.encoders.int8_exact import int8_split_here

    assert int8_split_here() is u8s8_saturates()


def test_the_shipped_probe_graph_is_the_one_onnx_builds():
    """Loading reads the probe from the package (no `onnx` import, 0.5 s); it is
    byte for byte the graph `probe_graph` builds."""
    from spacy_bioel.encoders.int8_exact import PROBE_FILE, probe_graph, shipped_probe_graph

    assert PROBE_FILE.read_bytes() == probe_graph() == shipped_probe_graph()


# a child where `onnx` cannot be imported: the saved graph's companion opens on a CPU
# forced to count as saturating, and encodes as the rewrite does
NO_ONNX_CHILD = """
import json, sys
sys.modules["onnx"] = None
import numpy as np
from spacy_bioel.encoders.onnx_sessions import new_session
feeds = {k: np.array(v, dtype=np.int64) for k, v in json.loads(sys.argv[2]).items()}
session = new_session(sys.argv[1], threads=1)
print(json.dumps({"out": session.run(None, feeds)[0].tolist(), "uint8": len(session.bioel_weights)}))
"""


def test_a_saved_towers_unsigned_companion_opens_without_onnx(tiny_bert_dir, tmp_path):
    """`write_unsigned` writes beside a split graph the graph and uint8 weights
    the rewrite makes (byte for byte), so a CPU that saturates opens it without
    `onnx` (its import was 1 s of loading); a companion written for other bytes,
    or naming a file outside the folder, is not used."""
    import json
    import os
    import subprocess
    import sys

    from spacy_bioel.encoders.int8_exact import (ENV, read_unsigned, unsigned_files,
                                                 write_unsigned)
    from spacy_bioel.encoders.onnx_export import export_mention_encoder, save_split
    from spacy_bioel.encoders.thinc_biencoder import build_biencoder, tokenize

    model = build_biencoder(str(tiny_bert_dir))
    model.initialize()
    data = export_mention_encoder(model, quantize="int8-all")
    graph = tmp_path / "mention.onnx"
    save_split(data, graph, tmp_path / "mention.onnx.data")
    assert write_unsigned(graph) == list(unsigned_files(graph))
    companion, weights = read_unsigned(graph)
    companion_file = unsigned_files(graph)[0]
    kept = companion_file.read_bytes()
    companion_file.unlink()  # the rewrite itself, for comparison
    rewritten, read = exact_graph(graph, force=True)
    companion_file.write_bytes(kept)
    assert companion == rewritten and sorted(weights) == sorted(read) and weights
    for name, values in weights.items():
        assert values.dtype == np.uint8 and np.array_equal(values, read[name])
    ids, mask = tokenize(model, ["colon cancer", "familial adenomatous polyposis"], "cpu")
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    want = run(exact_graph(data, force=True)[0], feeds)
    child = subprocess.run(
        [sys.executable, "-c", NO_ONNX_CHILD, str(graph),
         json.dumps({k: v.tolist() for k, v in feeds.items()})],
        capture_output=True, text=True, timeout=300, env={**os.environ, ENV: "1"})
    assert child.returncode == 0, child.stderr[-3000:]
    got = json.loads(child.stdout.strip().splitlines()[-1])
    assert got["uint8"] == len(weights)  # the companion's weights, read as uint8
    np.testing.assert_allclose(np.array(got["out"], dtype=np.float32), want, rtol=0, atol=1e-6)
    record = unsigned_files(graph)[1]
    meta = json.loads(record.read_text())
    record.write_text(json.dumps({**meta, "graph": "0" * 64}))  # written for other bytes
    assert read_unsigned(graph) is None
    meta["weights"][0]["location"] = "../mention.onnx.data"
    record.write_text(json.dumps(meta))
    assert read_unsigned(graph) is None


def test_a_saved_onnx_runtime_keeps_its_companion(tiny_bert_dir, tmp_path):
    """Saving an int8 ONNX runtime writes the companion beside its graph (on every
    CPU), and saving the loaded pipeline again copies it; a float32 graph has
    only the record, which says it opens as it is."""
    import spacy

    from spacy_bioel import Concept, KnowledgeBase
    from spacy_bioel.encoders.int8_exact import read_unsigned

    from tests.utils import tiny_linker_config

    kb = KnowledgeBase(name="small")
    kb.add(Concept("D1", "asthma"))
    kb.add(Concept("D2", "colon cancer"))
    for quantize, companion in (("int8", True), (None, False)):
        nlp = spacy.blank("en")
        linker = nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, runtime={
            "@misc": "spacy-bioel.OnnxRuntime.v1", "quantize": quantize}))
        linker.set_kb(kb)
        nlp.initialize()
        nlp.to_disk(tmp_path / str(quantize))
        runtime = tmp_path / str(quantize) / "bioel_linker" / "runtime"
        found = read_unsigned(runtime / "mention.onnx")
        assert found is not None and (found[0] is not None) is companion
        again = tmp_path / f"{quantize}_again"
        spacy.load(tmp_path / str(quantize)).to_disk(again)
        copied = again / "bioel_linker" / "runtime"
        found = read_unsigned(copied / "mention.onnx")
        assert found is not None and (found[0] is not None) is companion
        assert (copied / "mention.u8.onnx").is_file() is companion
        if companion:
            assert (copied / "mention.u8.onnx").read_bytes() == (runtime / "mention.u8.onnx").read_bytes()

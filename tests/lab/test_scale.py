"""The scale benchmark's exact search (streamed over the names) against brute
force, and its report on a small random index."""
import numpy as np

from spacy_bioel import Concept, KnowledgeBase
from bench.scale import benchmark_index, exact_top, recall, table
from spacy_bioel.index.names import NameTable
from tests.utils import needs


def random_kb(rng, n_concepts=120):
    kb = KnowledgeBase(name="random")
    for i in range(n_concepts):
        kb.add(Concept(f"C{i}", f"name {i}", tuple(f"alias {i} {j}" for j in range(rng.integers(0, 6)))))
    return kb


def test_exact_top_equals_brute_force():
    rng = np.random.default_rng(0)
    names = NameTable(random_kb(rng))
    vectors = rng.normal(size=(len(names), 12)).astype(np.float16)
    queries = rng.normal(size=(9, 12)).astype(np.float32)
    got = exact_top(vectors, names, queries, 10, chunk=37)  # chunks end at concept boundaries
    scores = queries @ vectors.astype(np.float32).T
    for row, q_names, q_concepts in zip(scores, got["names"], got["concepts"]):
        assert set(q_names) == set(np.argsort(-row)[:10].tolist())
        best = np.maximum.reduceat(row, names.offsets)
        assert set(q_concepts) == set(np.argsort(-best)[:10].tolist())


def test_the_report_of_a_small_index():
    rng = np.random.default_rng(1)
    names = NameTable(random_kb(rng, 300))
    vectors = rng.normal(size=(len(names), 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[::25] + 0.05 * rng.normal(size=(len(vectors[::25]), 16)).astype(np.float32)
    settings = [{"label": "hnsw_sq8", "build": {"index_type": "hnsw_sq8", "hnsw_m": 16},
                 "search": [{"ef_search": 64}, {"ef_search": 400}]}]
    result = benchmark_index(vectors, names, queries, settings, k=10)
    entry = result["indexes"][0]
    assert entry["build_s"] > 0 and entry["index_mb"] > 0
    low, high = entry["search"]
    assert high["recall_names"] >= low["recall_names"] and high["recall_names"] > 0.9
    assert 0 <= high["recall_concepts"] <= 1 and high["top1_found"] > 0.9
    assert "| hnsw_sq8 |" in table({**result, "kb": "random", "names": len(names),
                                    "concepts": len(names.concept_ids)})
    assert recall([[1, 2], [3]], [[2, 5], [3]]) == 0.75


@needs("onnxruntime", "onnx")
def test_names_encoded_with_onnx_are_cached_under_their_own_key(tiny_bert_dir, tmp_path):
    import spacy

    from spacy_bioel.encoders.thinc_biencoder import embed_texts
    from bench.scale import encode_names
    from tests.utils import tiny_linker_config

    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    kb = random_kb(np.random.default_rng(2), 20)
    linker.set_kb(kb)
    nlp.initialize()
    names = NameTable(kb)
    torch_run = encode_names(linker, names, tmp_path, encode_with="torch")
    onnx_run = encode_names(linker, names, tmp_path, encode_with="onnx")
    assert onnx_run["record"]["encode_with"] == "onnx"
    cached = sorted(p.name for p in tmp_path.glob("names-*.npy"))
    assert len(cached) == 2 and any("-onnx-" in name for name in cached)
    want = embed_texts(linker.model, names.names, "concept")
    assert np.allclose(np.asarray(torch_run["vectors"], np.float32), want, atol=2e-3)  # float16
    assert np.allclose(np.asarray(onnx_run["vectors"], np.float32), want, atol=2e-3)

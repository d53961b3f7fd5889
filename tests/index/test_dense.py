import numpy as np
import pytest

from spacy_bioel.errors import BioELError
from spacy_bioel.index.dense import DenseCandidateStore


def exact_concepts(queries, names, owners, concept_ids, k):
    """Brute force: best name score per concept, top-k (ties by concept index)."""
    sims = queries @ names.T  # (batch, n_names)
    out = []
    for row in sims:
        best = {}
        for name_index, score in enumerate(row):
            owner = owners[name_index]
            best[owner] = max(best.get(owner, -np.inf), score)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        out.append([(concept_ids[o], float(s)) for o, s in ranked])
    return out


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n_concepts, dim = 300, 16
    owners = np.sort(rng.integers(0, n_concepts, size=1200))
    names = rng.normal(size=(1200, dim)).astype(np.float32)
    names /= np.linalg.norm(names, axis=1, keepdims=True)
    queries = rng.normal(size=(25, dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    concept_ids = [f"C{i}" for i in range(n_concepts)]
    return names, owners, queries, concept_ids


def ids(results):
    return [[cid for cid, _ in row] for row in results]


@pytest.mark.parametrize("backend", ["faiss", "torch"])
def test_exact_store_equals_brute_force(data, backend):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, backend=backend)
    store.add(names, owners)
    got = store.search(queries, k=10, expansion=1)  # forces pool doubling
    want = exact_concepts(queries, names, owners, concept_ids, 10)
    assert ids(got) == ids(want)
    for g_row, w_row in zip(got, want):
        assert [s for _, s in g_row] == pytest.approx([s for _, s in w_row], abs=1e-5)


def test_hnsw_recall_against_exact(data):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, index_type="hnsw")
    store.add(names, owners)
    got, want = ids(store.search(queries, k=10)), ids(exact_concepts(queries, names, owners, concept_ids, 10))
    recall = np.mean([len(set(g) & set(w)) / 10 for g, w in zip(got, want)])
    assert recall >= 0.9


def test_ivfpq_runs_and_mostly_agrees(data):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, index_type="ivfpq", ivf_lists=8, pq_m=4)
    store.add(names, owners)
    got = store.search(queries, k=5)
    want = exact_concepts(queries, names, owners, concept_ids, 5)
    top1 = np.mean([g[0][0] in {c for c, _ in w} for g, w in zip(got, want)])
    assert all(len(row) == 5 for row in got) and top1 >= 0.6


@pytest.mark.parametrize("backend", ["faiss", "torch"])
def test_round_trip(data, backend):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, backend=backend)
    store.add(names, owners)
    loaded = DenseCandidateStore.from_bytes(store.to_bytes())
    assert loaded.backend == backend
    assert ids(loaded.search(queries, k=7)) == ids(store.search(queries, k=7))


def test_errors(data):
    names, owners, queries, concept_ids = data
    with pytest.raises(BioELError) as err:
        DenseCandidateStore(concept_ids, 16, index_type="hnsw", backend="torch")
    assert err.value.code == "E152"
    store = DenseCandidateStore(concept_ids, 16)
    with pytest.raises(BioELError) as err:
        store.search(queries, k=3)
    assert err.value.code == "E105"
    with pytest.raises(BioELError) as err:
        store.add(names[:, :8], owners)
    assert err.value.code == "E153"
    with pytest.raises(BioELError) as err:
        DenseCandidateStore.from_bytes(b"\x93garbage")
    assert err.value.code == "E154"

"""The dense store against brute force: flat search is exact (numpy, torch,
the top-names path and the per-concept path agree, ties included), the
approximate indexes recall most of the exact top-k, and what is saved loads
by memory map into the same answers."""
import json

import numpy as np
import pytest

from spacy_bioel.errors import BioELError
from spacy_bioel.index import dense
from spacy_bioel.index.dense import DenseCandidateStore
from spacy_bioel.index.store_io import load_store, save_store, store_from_bytes, store_to_bytes


def exact_concepts(queries, names, owners, concept_ids, k, tie_rank=None):
    """Brute force: best name score per concept, top-k (ties by tie rank, then index)."""
    sims = queries @ names.T  # (batch, n_names)
    tie_rank = np.arange(len(concept_ids)) if tie_rank is None else tie_rank
    out = []
    for row in sims:
        best = {}
        for name_index, score in enumerate(row):
            owner = owners[name_index]
            best[owner] = max(best.get(owner, -np.inf), score)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], tie_rank[kv[0]], kv[0]))[:k]
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


@pytest.mark.parametrize("backend", ["auto", "numpy", "torch"])
@pytest.mark.parametrize("k", [1, 10, 64, 290])
def test_flat_store_equals_brute_force(data, backend, k):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, backend=backend)
    store.add(names, owners)
    got = store.search(queries, k=k)
    want = exact_concepts(queries, names, owners, concept_ids, k)
    assert ids(got) == ids(want)
    for g_row, w_row in zip(got, want):
        assert [s for _, s in g_row] == pytest.approx([s for _, s in w_row], abs=1e-5)


def same_up_to_rounding(got, want, best, tolerance=1e-4):
    """Equal scores (to float rounding: another BLAS blocking); a concept may
    differ only for another whose best score ties with it (`best`: per query,
    concept -> best score by brute force)."""
    for got_row, want_row, query_best in zip(got, want, best):
        assert [v for _, _, v in got_row] == pytest.approx([v for _, _, v in want_row], abs=tolerance)
        for (a, _, score), (b, _, _) in zip(got_row, want_row):
            assert a == b or abs(query_best[a] - score) < tolerance


def test_top_names_path_equals_per_concept_path_with_ties(monkeypatch):
    """Scores on a grid of quarters tie everywhere: both exact paths give the same
    concepts, scores and best names; without torch the per-concept path answers."""
    import sys

    import torch

    rng = np.random.default_rng(1)
    for trial in range(4):
        n_concepts = int(rng.integers(5, 400))
        owners = np.sort(rng.integers(0, n_concepts, int(rng.integers(n_concepts, 3000))))
        # quarter steps: every product and sum is exact in float32, so scores tie
        # exactly whatever the BLAS kernel's summation order (tenths do not)
        names = (np.round(rng.normal(size=(len(owners), 6)) * 4) / 4).astype(np.float32)
        queries = (np.round(rng.normal(size=(30, 6)) * 4) / 4).astype(np.float32)
        tie_rank = rng.permutation(n_concepts)
        store = DenseCandidateStore([f"C{i}" for i in range(n_concepts)], 6)
        store.add(names, owners, tie_rank)
        scores = store._scores(queries)
        for k in (1, 5, 64, 500):
            fast = store._top_by_names(torch, scores, k, True)
            assert fast == store._top_by_concepts(scores, k, None, True)
            monkeypatch.setattr(dense, "CHUNK_ROWS", int(rng.integers(1, 40)))  # tiny chunks
            monkeypatch.setattr(dense, "BLOCK_BYTES", int(rng.integers(40, 4000)))  # and blocks
            best = [{c: float(row[owners == c].max()) for c in set(owners.tolist())}
                    for row in queries @ names.T]
            same_up_to_rounding(store._stream_concepts(queries, k, None), fast, best)
            want = exact_concepts(queries, names, owners, store.concept_ids, k, tie_rank)
            assert ids(store.search(queries, k)) == ids(want)
    monkeypatch.delitem(sys.modules, "torch")  # a torch-free install
    assert store.search_names(queries, 5) == store._top_by_concepts(scores, 5, None, True)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_masks_and_concepts_without_names(data, dtype):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids + ["EMPTY"], 16)  # a concept with no name
    store.add(names.astype(dtype), owners)
    allowed = np.zeros(len(concept_ids) + 1, dtype=bool)
    allowed[::3] = True
    for with_names in (True, False):  # the block path and the streaming path
        got = store.search_names(queries, 10, allowed=[allowed] * len(queries), names=with_names)
        for row in got:
            assert len(row) == 10 and all(allowed[c] for c, _, _ in row)
    assert all(c != len(concept_ids) for row in store.search_names(queries, 300) for c, _, _ in row)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_each_query_keeps_its_own_mask_in_every_group(data, dtype, monkeypatch):
    """Queries of two labels (two shared masks) and unfiltered ones, in one call
    split into groups of 4 and name chunks of 8: each gets the exact top-k of
    the concepts its own mask allows."""
    names, owners, queries, concept_ids = data
    stored = names.astype(dtype)
    store = DenseCandidateStore(concept_ids, 16)
    store.add(stored, owners)
    every = np.arange(len(concept_ids))
    thirds, odd = every % 3 == 0, every % 2 == 1
    masks = [[thirds, odd, None][i % 3] for i in range(len(queries))]
    monkeypatch.setattr(dense, "BEST_BYTES", 4 * len(concept_ids) * 4)  # groups of 4 queries
    monkeypatch.setattr(dense, "CHUNK_ROWS", 64)  # chunks of 8 names at the least
    monkeypatch.setattr(dense, "BLOCK_BYTES", 4 * 4 * 8)
    ranked = exact_concepts(queries, stored.astype(np.float32), owners, concept_ids, len(concept_ids))
    for with_names in (False, True):  # the streaming path and the block path
        got = store.search_names(queries, 10, allowed=masks, names=with_names)
        for row, mask, want in zip(got, masks, ranked):
            allowed = [(cid, score) for cid, score in want if mask is None or mask[int(cid[1:])]][:10]
            assert [concept_ids[c] for c, _, _ in row] == [cid for cid, _ in allowed]
            assert [v for _, _, v in row] == pytest.approx([v for _, v in allowed], abs=1e-5)


@pytest.mark.parametrize("index_type", ["hnsw", "hnsw_sq8", "ivf_sq8"])
def test_approximate_recall_against_exact(data, index_type):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, index_type=index_type, ivf_lists=8, nprobe=8)
    store.add(names, owners)
    got, want = ids(store.search(queries, k=10)), ids(exact_concepts(queries, names, owners, concept_ids, 10))
    recall = np.mean([len(set(g) & set(w)) / 10 for g, w in zip(got, want)])
    assert recall >= 0.9
    exact = dict(zip(*np.unique(owners, return_index=True)))  # scores are re-scored exactly
    for query, row in zip(queries, store.search_names(queries, 5)):
        for concept, name, score in row:
            assert score == pytest.approx(float(names[name] @ query), abs=1e-5)
            assert owners[name] == concept and concept in exact


def test_ivfpq_runs_and_mostly_agrees(data):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, index_type="ivfpq", ivf_lists=8, pq_m=4)
    store.add(names, owners)
    got = store.search(queries, k=5)
    want = exact_concepts(queries, names, owners, concept_ids, 5)
    top1 = np.mean([g[0][0] in {c for c, _ in w} for g, w in zip(got, want)])
    assert all(len(row) == 5 for row in got) and top1 >= 0.6


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_flat_int8_scan_re_scored_exactly(data, dtype, monkeypatch):
    """The int8 scan proposes names, which are scored exactly: the same concepts
    and scores as the exact store (the data's best names are far above the int8
    rounding), masks honoured, ties by the tie rank."""
    names, owners, queries, concept_ids = data
    names = names.astype(dtype)
    exact_store = DenseCandidateStore(concept_ids, 16)
    exact_store.add(names, owners)
    store = DenseCandidateStore(concept_ids, 16, index_type="flat_int8")
    store.add(names, owners)
    assert store.backend == "onnx"
    for k in (1, 10, 64):
        got, want = store.search_names(queries, k), exact_store.search_names(queries, k)
        best = [{c: float(row[owners == c].max()) for c in set(owners.tolist())}
                for row in queries @ names.astype(np.float32).T]
        same_up_to_rounding(got, want, best, tolerance=1e-5)
    masks = [np.arange(len(concept_ids)) % (2 + i % 5) == 0 for i in range(len(queries))]
    monkeypatch.setattr(dense, "SCAN_QUERIES", 4)  # several scan calls: each its own masks
    got = store.search_names(queries, 10, allowed=masks)
    same_up_to_rounding(got, exact_store.search_names(queries, 10, allowed=masks), best,
                        tolerance=1e-5)
    for row, mask in zip(got, masks):
        assert len(row) == 10 and all(mask[c] for c, _, _ in row)
    # a duplicated name ties exactly: the concept with the lower tie rank wins
    twins = np.vstack([names[:1], names[:1]]).astype(np.float32)
    store = DenseCandidateStore(["A", "B"], 16, index_type="flat_int8")
    store.add(twins, np.array([0, 1]), tie_rank=np.array([1, 0]))
    assert [c for c, _, _ in store.search_names(twins[:1], 2)[0]] == [1, 0]


def test_int8_scores_are_the_scans_and_the_vectors_are_never_read(data, tmp_path):
    """An 'int8' store answers with the int8 scan's own scores: each within the
    quantisation bound of the exact score of the name it returns (here 0.02:
    unit 16-d vectors, per-name and per-query int8 steps), each concept
    within twice that of its exact best, masks honoured, k concepts per query.
    Saved and loaded, it searches without reading its float vectors at all."""
    names, owners, queries, concept_ids = data
    exact = queries @ names.T  # (batch, n_names)
    best = np.full((len(queries), len(concept_ids)), -np.inf, dtype=np.float32)
    for row, owner in enumerate(owners):
        best[:, owner] = np.maximum(best[:, owner], exact[:, row])
    store = DenseCandidateStore(concept_ids, 16, index_type="int8")
    store.add(names.astype("float16"), owners)
    masks = [None if i % 2 else np.arange(len(concept_ids)) % 3 == 0 for i in range(len(queries))]
    got = store.search_names(queries, 10, allowed=masks)
    for query, (hits, mask) in enumerate(zip(got, masks)):
        assert len(hits) == 10 and len({c for c, _, _ in hits}) == 10
        allowed = best[query] if mask is None else np.where(mask, best[query], -np.inf)
        assert hits[0][2] >= allowed.max() - 0.04  # the exactly best concept is not missed by more
        for concept, name, score in hits:
            assert owners[name] == concept and (mask is None or mask[concept])
            assert abs(score - exact[query, name]) <= 0.02
            assert exact[query, name] >= best[query, concept] - 0.04
    assert [round(s, 4) for _, _, s in got[1]] == sorted((round(s, 4) for _, _, s in got[1]), reverse=True)
    save_store(store, tmp_path / "index")
    loaded = load_store(tmp_path / "index", concept_ids)

    class Unread:
        dtype, shape = np.dtype("float16"), names.shape

        def __getitem__(self, item):
            raise AssertionError("the float vectors were read")

        def __array__(self, *args, **kwargs):
            raise AssertionError("the float vectors were read")

    loaded.embeddings = Unread()
    assert loaded.search_names(queries, 10, allowed=masks) == got


@pytest.mark.parametrize("index_type", dense.INT8_TYPES)
def test_an_int8_scan_answers_a_query_whatever_is_scanned_beside_it(data, index_type):
    """Each query is quantised with its own scale, so its hits and scores are the
    same alone, in any order and beside a query of a far larger range (a batch
    quantised as one tensor moved them: tune and a pipeline, which batch the
    mentions differently, disagreed on near ties)."""
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, index_type=index_type)
    store.add(names, owners)
    alone = [store.search_names(queries[i:i + 1], 5)[0] for i in range(len(queries))]
    wide = np.vstack([queries, 40 * queries[:1]])  # one query 40x the others' range
    assert store.search_names(wide, 5)[:-1] == alone
    order = np.random.default_rng(1).permutation(len(queries))
    shuffled = store.search_names(queries[order], 5)
    assert [shuffled[list(order).index(i)] for i in range(len(queries))] == alone


def test_flat_int8_proposes_again_the_queries_short_of_k_concepts_together(data, monkeypatch):
    """A query whose proposed names hold fewer than k concepts is proposed again
    with twice the pool, together with the others short of k from every scan
    block of the call (full blocks, not one pass over the names per block):
    the answers stay the exact store's."""
    names, owners, queries, concept_ids = data
    exact_store = DenseCandidateStore(concept_ids, 16)
    exact_store.add(names, owners)
    store = DenseCandidateStore(concept_ids, 16, index_type="flat_int8")
    store.add(names, owners)
    calls = []
    propose = store._propose

    def counted(batch, pool):
        calls.append((len(batch), pool))
        return propose(batch, pool)

    monkeypatch.setattr(store, "_propose", counted)
    monkeypatch.setattr(dense, "SCAN_QUERIES", 4)
    best = [{c: float(row[owners == c].max()) for c in set(owners.tolist())} for row in queries @ names.T]
    same_up_to_rounding(store.search_names(queries, 40, expansion=1), exact_store.search_names(queries, 40),
                        best, tolerance=1e-5)
    pools = sorted({pool for _, pool in calls})
    assert len(pools) > 1  # 40 names seldom hold 40 concepts: queries were proposed again
    per_call = 4  # on every CPU (one score buffer a call, signed or unsigned names)
    for pool in pools:
        sizes = [size for size, p in calls if p == pool]
        assert all(size == per_call for size in sizes[:-1]) and 1 <= sizes[-1] <= per_call, (pool, sizes)


@pytest.mark.parametrize("index_type", dense.INT8_TYPES)
def test_int8_types_on_a_gpu_search_exactly_and_scan_again_on_the_cpu(data, index_type):
    """What `linker.cfg` trains with `--gpu-id 0`: on a GPU an int8 store
    searches by one exact matmul there, back on the CPU by its int8 scan."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    names, owners, queries, concept_ids = data
    exact_store = DenseCandidateStore(concept_ids, 16)
    exact_store.add(names, owners)
    cpu_store = DenseCandidateStore(concept_ids, 16, index_type=index_type)
    cpu_store.add(names, owners)
    store = DenseCandidateStore(concept_ids, 16, index_type=index_type, device="cuda:0")
    store.add(names, owners)
    assert store.backend == "torch" and store._matrix.is_cuda
    assert ids(store.search(queries, 10)) == ids(exact_store.search(queries, 10))
    store.to_device("cpu")
    assert store.backend == "onnx" and store._matrix is None
    assert store.search_names(queries, 10) == cpu_store.search_names(queries, 10)


def test_a_thread_cap_reopens_the_scan_session_with_it(data):
    """A corpus-linking worker's share of the cores (`cap_threads`) reaches the
    int8 scan's ONNX Runtime pool, opened before the cap or after."""
    from spacy_bioel.encoders import onnx_sessions

    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, index_type="flat_int8")
    store.add(names, owners)
    want = store.search_names(queries, 5)
    try:
        onnx_sessions.cap_threads(1)
        assert store._scan._session is None  # dropped: reopened on its next use
        assert store.search_names(queries, 5) == want
        assert store._scan._session.get_session_options().intra_op_num_threads == 1
    finally:
        onnx_sessions.cap_threads(0)


def test_flat_int8_scan_graph_is_the_packaged_one():
    """The packaged weightless graphs are what `scan_graph` builds (no drift)."""
    pytest.importorskip("onnx")
    from spacy_bioel.index.int8_scan import graph_file, scan_graph

    assert graph_file().read_bytes() == scan_graph()
    assert graph_file(unsigned=True).read_bytes() == scan_graph(unsigned=True)


@pytest.mark.parametrize("unsigned", ["auto", "1"])
def test_the_int8_scan_scores_are_the_exact_int32_products_signed_or_unsigned(data, monkeypatch,
                                                                               unsigned):
    """The scan's scores are the exact int32 products of the int8 query and
    names, times their scales: as the probe chooses on this CPU (int8 names, or
    uint8 + 128 where the CPU's uint8 x int8 kernel saturates), and with the
    uint8 names forced, which are exact on any CPU."""
    from spacy_bioel.encoders import int8_exact
    from spacy_bioel.index.int8_scan import Int8Scan, quantize_names, quantize_queries

    names, _, queries, _ = data
    queries = np.ascontiguousarray(queries[:6], dtype=np.float32)
    n, dim = names.shape
    weights, scales = quantize_names(names.astype(np.float32), block=n)  # one (dim, n) block
    quantised, query_scale = quantize_queries(queries)
    matrix = weights.reshape(dim, n).astype(np.int64)
    exact = ((quantised.astype(np.int64) - 128) @ matrix).astype(np.float64)
    want = exact * scales.astype(np.float64).reshape(1, -1) * query_scale.astype(np.float64)
    monkeypatch.setenv(int8_exact.ENV, unsigned)
    int8_exact.u8s8_saturates.cache_clear()
    try:
        scan = Int8Scan(weights, scales, dim, n)
        assert scan._unsigned is (unsigned == "1" or int8_exact.u8s8_saturates())
        rows, scores = scan.top(queries, 5)
    finally:
        int8_exact.u8s8_saturates.cache_clear()
    np.testing.assert_allclose(scores, np.take_along_axis(want, rows, 1), rtol=1e-5)
    assert (rows == np.argsort(-want, axis=1, kind="stable")[:, :5]).all()


@pytest.mark.parametrize("index_type", dense.INT8_TYPES)
def test_the_scan_in_blocks_finds_what_one_pass_finds(data, tmp_path, monkeypatch, index_type):
    """Names scanned in blocks (here 128 names, the last block 48) propose the
    same rows with the same scores as one pass over every name, exact ties
    across blocks by the lower row; saved and loaded, the same again, and a
    store saved with its names in one (dim, n) matrix (store format 3) loads,
    searches the same and is saved in blocks, byte for byte."""
    from spacy_bioel.index import int8_scan

    names, owners, queries, concept_ids = data
    names = np.vstack([names, names[:5]])  # rows 1200-1204 tie exactly with rows 0-4
    owners = np.r_[owners, np.full(5, owners.max())]
    one = DenseCandidateStore(concept_ids, 16, index_type=index_type)
    one.add(names, owners)
    one_block = one.int8_names()[2]  # quantised in one block, before the block size changes
    monkeypatch.setattr(int8_scan, "BLOCK_NAMES", 128)
    blocks = DenseCandidateStore(concept_ids, 16, index_type=index_type)
    blocks.add(names, owners)
    assert blocks.int8_names()[2] == 128 and one_block > len(names)
    for pool in (1, 7, 64, 300):
        want_rows, want_scores = one._propose(queries, pool)
        rows, scores = blocks._propose(queries, pool)
        assert np.array_equal(rows, want_rows) and np.array_equal(scores, want_scores)
    ties = blocks._propose(names[:5], 2)[0]
    assert ties[:, 0].tolist() == [0, 1, 2, 3, 4] and ties[:, 1].tolist() == [1200, 1201, 1202, 1203, 1204]
    want = one.search_names(queries, 10)
    assert blocks.search_names(queries, 10) == want
    save_store(blocks, tmp_path / "blocks")
    assert json.loads((tmp_path / "blocks" / "store.json").read_text())["int8_block"] == 128
    assert load_store(tmp_path / "blocks", concept_ids).search_names(queries, 10) == want
    # format 3: one (dim, n) matrix, no block size
    weights, scales, _ = one.int8_names()
    save_store(one, tmp_path / "old")
    np.save(tmp_path / "old" / "names_int8.npy", weights.reshape(16, len(names)))
    meta = json.loads((tmp_path / "old" / "store.json").read_text())
    del meta["int8_block"]
    (tmp_path / "old" / "store.json").write_text(json.dumps({**meta, "format": 3}))
    old = load_store(tmp_path / "old", concept_ids)
    assert old.int8_names()[2] == len(names) and old.search_names(queries, 10) == want
    save_store(old, tmp_path / "old")
    assert np.array_equal(np.load(tmp_path / "old" / "names_int8.npy"), blocks.int8_names()[0])
    assert load_store(tmp_path / "old", concept_ids).int8_names()[2] == 128


@pytest.mark.parametrize("index_type", ["flat", "int8", "flat_int8", "hnsw_sq8", "ivf_sq8"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_to_disk_loads_by_memory_map(data, tmp_path, index_type, dtype):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, index_type=index_type, ivf_lists=8, nprobe=8)
    store.add(names.astype(dtype), owners)
    save_store(store, tmp_path / "index")
    loaded = load_store(tmp_path / "index", concept_ids)
    assert isinstance(loaded.embeddings, np.memmap) and loaded.embeddings.dtype == dtype
    assert loaded.search_names(queries, 7) == store.search_names(queries, 7)
    save_store(loaded, tmp_path / "index")  # saved over the files it maps: nothing lost
    again = load_store(tmp_path / "index", concept_ids)
    assert again.search_names(queries, 7) == store.search_names(queries, 7)
    assert (tmp_path / "index" / "names_int8.npy").exists() == (index_type in dense.INT8_TYPES)
    if dtype == "float16":  # scores are float32 products of the stored float16 vectors
        want = exact_concepts(queries, names.astype(dtype).astype(np.float32), owners,
                              concept_ids, 7)
        if index_type == "flat":
            assert ids(loaded.search(queries, 7)) == ids(want)


def test_flat_int8_names_are_saved_and_never_quantised_at_load(data, tmp_path, monkeypatch):
    """The int8 names a 'flat_int8' store scans are saved with it and mapped at
    load: nothing is quantised at load or first search. A store saved without
    them (an older version) quantises them on its first search; names that do
    not fit the vectors are E154; another index type saved over the folder
    removes them."""
    from spacy_bioel.index import int8_scan

    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, index_type="flat_int8")
    store.add(names.astype("float16"), owners)
    want = store.search_names(queries, 7)
    save_store(store, tmp_path / "index")
    weights, scales = int8_scan.quantize_names(names.astype("float16"))
    assert weights.shape == (len(names) * 16,)
    assert np.array_equal(np.load(tmp_path / "index" / "names_int8.npy"), weights)
    assert np.array_equal(np.load(tmp_path / "index" / "names_scale.npy"), scales)

    def refuse(vectors, block=None):
        raise AssertionError("quantised again")

    monkeypatch.setattr(int8_scan, "quantize_names", refuse)
    loaded = load_store(tmp_path / "index", concept_ids)
    assert isinstance(loaded.int8_names()[0], np.memmap)
    assert loaded.search_names(queries, 7) == want
    monkeypatch.undo()
    (tmp_path / "index" / "names_int8.npy").unlink()  # saved before the int8 names were
    (tmp_path / "index" / "names_scale.npy").unlink()
    assert load_store(tmp_path / "index", concept_ids).search_names(queries, 7) == want
    np.save(tmp_path / "index" / "names_int8.npy", weights[:-16])
    np.save(tmp_path / "index" / "names_scale.npy", scales[:-1])
    with pytest.raises(BioELError) as err:
        load_store(tmp_path / "index", concept_ids)
    assert err.value.code == "E154" and "int8 names" in str(err.value)
    flat = DenseCandidateStore(concept_ids, 16)
    flat.add(names, owners)
    save_store(flat, tmp_path / "index")
    assert not (tmp_path / "index" / "names_int8.npy").exists()
    assert not (tmp_path / "index" / "names_scale.npy").exists()


@pytest.mark.parametrize("backend", ["faiss", "torch"])
def test_bytes_round_trip(data, backend):
    names, owners, queries, concept_ids = data
    store = DenseCandidateStore(concept_ids, 16, backend=backend)
    store.add(names, owners)
    loaded = store_from_bytes(store_to_bytes(store))
    assert ids(loaded.search(queries, k=7)) == ids(store.search(queries, k=7))


def test_reads_a_store_saved_by_the_previous_version(data, tmp_path):
    """Pipelines saved before the folder format hold one msgpack file: flat FAISS
    bytes (the old default) load, HNSW keeps its graph."""
    import faiss
    import srsly

    names, owners, queries, concept_ids = data
    for index_type, index in (("flat", faiss.IndexFlatIP(16)),
                              ("hnsw", faiss.IndexHNSWFlat(16, 32, faiss.METRIC_INNER_PRODUCT))):
        index.add(names)
        old = srsly.msgpack_dumps({"concept_ids": concept_ids, "dim": 16, "index_type": index_type,
                                   "backend": "faiss", "params": {"hnsw_m": 32, "ivf_lists": 1024,
                                                                  "pq_m": 16},
                                   "owners": owners.tolist(),
                                   "index": faiss.serialize_index(index).tobytes()})
        (tmp_path / index_type).write_bytes(old)
        loaded = load_store(tmp_path / index_type, concept_ids)
        want = exact_concepts(queries, names, owners, concept_ids, 5)
        got = ids(loaded.search(queries, 5))
        assert got == ids(want) if index_type == "flat" else \
            np.mean([len(set(g) & set(w)) / 5 for g, w in zip(got, ids(want))]) >= 0.9


def test_errors(data, tmp_path):
    names, owners, queries, concept_ids = data
    for index_type in ("hnsw", "int8", "flat_int8"):
        with pytest.raises(BioELError) as err:
            DenseCandidateStore(concept_ids, 16, index_type=index_type, backend="torch")
        assert err.value.code == "E152"
    store = DenseCandidateStore(concept_ids, 16)
    with pytest.raises(BioELError) as err:
        store.search(queries, k=3)
    assert err.value.code == "E105"
    with pytest.raises(BioELError) as err:
        store.add(names[:, :8], owners)
    assert err.value.code == "E153"
    with pytest.raises(BioELError) as err:
        store.add(names, owners[::-1])  # names must be grouped by concept
    assert err.value.code == "E153"
    with pytest.raises(BioELError) as err:
        store_from_bytes(b"\x93garbage")
    assert err.value.code == "E154"
    store.add(names, owners)
    save_store(store, tmp_path / "index")
    np.save(tmp_path / "index" / "vectors.npy", names[:10])
    with pytest.raises(BioELError) as err:
        load_store(tmp_path / "index", concept_ids)
    assert err.value.code == "E154" and "vectors of shape" in str(err.value)


def test_the_scan_orders_equal_scores_by_row_in_one_block_too():
    """ONNX Runtime's TopK can return equal scores with the higher row first
    (seen in one block of MEDIC's 72,968 names); the scan orders them by row,
    as it does across blocks. A session that answers so is stood in."""
    from spacy_bioel.index.int8_scan import Int8Scan, quantize_names

    class Answer:
        def __init__(self, array):
            self.array = array

        def numpy(self):
            return self.array

    class Session:
        def run_with_ort_values(self, outputs, feeds):
            return (Answer(np.array([[3, 1, 0], [2, 0, 1]], dtype=np.int64)),
                    Answer(np.array([[0.5, 0.5, 0.2], [0.9, 0.4, 0.4]], dtype=np.float32)))

    names = np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32)
    weights, scales = quantize_names(names, block=4)
    scan = Int8Scan(weights, scales, 8, 4)
    scan._session = Session()
    rows, scores = scan.top(names[:2], 3)
    assert rows.tolist() == [[1, 3, 0], [2, 0, 1]]
    assert scores.tolist() == [[0.5, 0.5, np.float32(0.2)], [np.float32(0.9), np.float32(0.4), np.float32(0.4)]]

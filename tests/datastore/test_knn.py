import math

import numpy as np
import pytest

from spacy_bioel.datastore import DatastoreKNN, interpolate, knn_distribution, model_distribution
from spacy_bioel.errors import BioELError


def test_interpolation_against_hand_computation():
    candidates = [("A", 0.9), ("B", 0.8), ("C", 0.1)]
    neighbours = [("B", 0.95), ("B", 0.5), ("D", 0.7)]
    lam, beta1, beta2 = 0.3, 0.1, 0.5
    # eq. 4
    za = math.exp(9.0) + math.exp(8.0) + math.exp(1.0)
    p_model = {"A": math.exp(9.0) / za, "B": math.exp(8.0) / za, "C": math.exp(1.0) / za}
    # eq. 5, MAX aggregation: B keeps 0.95 only
    zk = math.exp(0.95 / 0.5) + math.exp(0.7 / 0.5)
    p_knn = {"B": math.exp(1.9) / zk, "D": math.exp(1.4) / zk}
    expected = {c: lam * p_knn.get(c, 0) + (1 - lam) * p_model.get(c, 0) for c in "ABCD"}
    got = dict(interpolate(candidates, neighbours, lam, beta1, beta2))
    assert got == pytest.approx(expected)
    assert sum(got.values()) == pytest.approx(1.0)
    ranked = [c for c, _ in interpolate(candidates, neighbours, lam, beta1, beta2)]
    assert ranked == sorted(expected, key=lambda c: -expected[c])
    assert model_distribution(candidates, beta1) == pytest.approx(p_model)
    assert knn_distribution(neighbours, beta2) == pytest.approx(p_knn)


def test_interpolation_edges():
    assert interpolate([("A", 0.5)], [], 0.5, 1.0, 1.0) == [("A", 0.5)]
    assert interpolate([], [("A", 0.2)], 0.5, 1.0, 1.0) == [("A", 0.5)]
    assert interpolate([("A", 1.0), ("B", 0.0)], [("B", 1.0)], 1.0, 1.0, 1.0)[0] == ("B", 1.0)


def test_datastore_search_and_round_trip():
    rng = np.random.default_rng(1)
    keys = rng.normal(size=(50, 8)).astype(np.float32)
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    values = [f"D{i % 7}" for i in range(50)]
    store = DatastoreKNN(8)
    store.add(keys, values)
    hits = store.search(keys[:3], k=4)
    assert [row[0][0] for row in hits] == values[:3]
    assert [row[0][1] for row in hits] == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    brute = keys[:3] @ keys.T
    for row, sims in zip(hits, brute):
        assert [s for _, s in row] == pytest.approx(sorted(sims, reverse=True)[:4], abs=1e-5)
    loaded = DatastoreKNN.from_bytes(store.to_bytes())
    assert loaded.search(keys[:3], k=4) == hits
    assert DatastoreKNN(8).search(keys[:2], k=3) == [[], []]
    with pytest.raises(BioELError) as err:
        store.add(keys, values[:-1])
    assert err.value.code == "E155"
    with pytest.raises(BioELError) as err:
        store.search(keys[:1], k=2, exclude=[7])  # no document keys recorded
    assert err.value.code == "E189"


def test_datastore_leaves_a_documents_entries_out():
    from spacy_bioel.datastore.knn import document_key

    keys = np.eye(4, dtype=np.float32)
    keys[1] = keys[0]  # entries 0 and 1: the same mention text in two documents
    groups = [document_key("doc a"), document_key("doc b"), document_key("doc a"),
              document_key("doc c")]
    store = DatastoreKNN(4)
    store.add(keys, ["D0", "D1", "D2", "D3"], groups)
    query = keys[[0, 0, 2]]
    plain = store.search(query, k=4)
    held = store.search(query, k=4, exclude=[groups[0], None, groups[0]])
    assert [c for c, _ in plain[0]][:2] == ["D0", "D1"]
    assert [c for c, _ in held[0]] == ["D1", "D3"]  # doc a's two entries left out
    assert held[1] == plain[1]  # None: sees everything
    assert "D2" not in [c for c, _ in held[2]] and len(held[2]) == 2
    assert DatastoreKNN.from_bytes(store.to_bytes()).groups.tolist() == groups
    assert document_key("doc a") == document_key("doc a") != document_key("doc b")
    with pytest.raises(BioELError) as err:
        store.add(keys, ["D0", "D1", "D2", "D3"], groups[:2])
    assert err.value.code == "E155"


def test_datastore_search_in_blocks_of_queries_is_the_search_at_once(monkeypatch):
    """`search` scores a bounded block of queries at a time (SCORE_CELLS): any
    block size gives the neighbours, similarities and left-out documents of one
    matrix, here 1 and 3 queries a block against all 30 at once."""
    import spacy_bioel.datastore.knn as knn

    rng = np.random.default_rng(3)
    keys = rng.normal(size=(40, 6)).astype(np.float32)
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    groups = [i % 5 for i in range(40)]
    store = DatastoreKNN(6)
    store.add(keys, [f"D{i % 9}" for i in range(40)], groups)
    queries = keys[:30] + rng.normal(scale=0.1, size=(30, 6)).astype(np.float32)
    exclude = [i % 5 if i % 3 else None for i in range(30)]
    monkeypatch.setattr(knn, "SCORE_CELLS", 1 << 30)
    whole = store.search(queries, k=5, exclude=exclude)
    assert any(row != plain for row, plain in zip(whole, store.search(queries, k=5)))
    for cells in (1, 3 * 40):
        monkeypatch.setattr(knn, "SCORE_CELLS", cells)
        blocked = store.search(queries, k=5, exclude=exclude)
        assert [[c for c, _ in row] for row in blocked] == [[c for c, _ in row] for row in whole]
        for row, want in zip(blocked, whole):
            assert [s for _, s in row] == pytest.approx([s for _, s in want], abs=1e-6)


def test_datastore_keeps_each_distinct_key_once_with_the_search_of_every_entry():
    """Repeated training mentions share one key row: the search (neighbours in
    training order among exact ties, left-out documents) is the brute-force
    search over every entry's key, and a datastore saved with every key (the
    earlier format) loads to the same store."""
    import io

    import srsly

    rng = np.random.default_rng(5)
    base = rng.normal(size=(12, 6)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    picks = rng.integers(0, 12, size=90)
    keys, values, groups = base[picks], [f"D{p % 4}{i % 2}" for i, p in enumerate(picks)], picks % 5
    store = DatastoreKNN(6)
    store.add(keys, values, groups.tolist())
    assert store._unique.shape == (len(set(picks.tolist())), 6)
    assert np.array_equal(store.keys, keys)
    queries = base[:8] + rng.normal(scale=0.05, size=(8, 6)).astype(np.float32)
    exclude = [int(groups[i]) if i % 2 else None for i in range(8)]
    found = store.search(queries, k=7, exclude=exclude)
    scores = queries @ keys.T
    for i, row in enumerate(found):
        allowed = [j for j in range(90) if exclude[i] is None or groups[j] != exclude[i]]
        best = sorted(allowed, key=lambda j: (-round(float(scores[i, j]), 5), j))[:7]
        assert [c for c, _ in row] == [values[j] for j in best]
        assert [s for _, s in row] == pytest.approx([scores[i, j] for j in best], abs=1e-5)
    saved = DatastoreKNN.from_bytes(store.to_bytes())
    assert saved.search(queries, k=7, exclude=exclude) == found
    buffer = io.BytesIO()
    np.save(buffer, keys)
    earlier = srsly.msgpack_dumps({"dim": 6, "keys": buffer.getvalue(), "values": values,
                                   "groups": groups.tolist()})
    assert DatastoreKNN.from_bytes(earlier).search(queries, k=7, exclude=exclude) == found
    broken = srsly.msgpack_loads(store.to_bytes())
    broken["rows"][0] = 99
    with pytest.raises(ValueError):
        DatastoreKNN.from_bytes(srsly.msgpack_dumps(broken))


def test_datastore_entries_of_keys_that_tie_exactly_come_in_training_order():
    """Two distinct keys at exactly the same similarity: their entries interleave
    in training order (entry by entry), not key after key."""
    keys = np.eye(3, dtype=np.float32)[[0, 1, 0, 2, 1]]
    store = DatastoreKNN(3)
    store.add(keys, ["A0", "B1", "A2", "C3", "B4"])
    query = np.array([[1.0, 1.0, 0.0]], dtype=np.float32) / np.sqrt(2)
    assert [c for c, _ in store.search(query, k=4)[0]] == ["A0", "B1", "A2", "B4"]
    assert [c for c, _ in store.search(query, k=1)[0]] == ["A0"]
    plain = np.array([[1.0, 0.2, 0.0]], dtype=np.float32)
    assert [c for c, _ in store.search(plain, k=4)[0]] == ["A0", "A2", "B1", "B4"]
    assert store.search(plain, k=0) == [[]]


def test_grid_accuracy_matches_interpolate_mention_by_mention():
    import itertools

    from spacy_bioel.datastore.interpolation import grid_accuracy, interpolate

    rng = np.random.default_rng(0)
    ids = [f"D{i}" for i in range(12)]
    candidates, neighbours, gold = [], [], []
    for i in range(200):
        cands = [(c, float(s)) for c, s in zip(rng.choice(ids, size=rng.integers(0, 6), replace=False),
                                                rng.normal(size=6))]
        sims = sorted(rng.uniform(-1, 1, size=rng.integers(0, 8)), reverse=True)
        neigh = [(str(rng.choice(ids)), float(s)) for s in sims]
        if i % 10 == 0 and cands:  # exact ties between candidates: the first must win
            cands = [(c, 0.5) for c, _ in cands]
        candidates.append(cands)
        neighbours.append(neigh)
        gold.append({str(rng.choice(ids))} if i % 3 else {cands[0][0]} if cands else {"D0"})
    grid = dict(k_values=[1, 2, 4, 8], lambdas=[0.0, 0.3, 1.0], beta1s=[0.05, 1.0], beta2s=[0.1, 2.0])
    rows = grid_accuracy(candidates, neighbours, gold, **grid)
    assert len(rows) == 4 * 3 * 2 * 2
    for row in rows:
        expected = sum(bool(ranked) and ranked[0][0] in g for ranked, g in (
            (interpolate(c, n[:row["k"]], row["lambda"], row["beta1"], row["beta2"]), g)
            for c, n, g in zip(candidates, neighbours, gold))) / len(gold)
        assert row["acc@1"] == pytest.approx(expected), row
    assert len({r["acc@1"] for r in rows}) > 3  # the settings matter: the test can tell them apart

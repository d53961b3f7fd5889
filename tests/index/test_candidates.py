"""Candidate stages, the semantic-type filter and the name index, on a toy KB
with hand-made embeddings (no encoder)."""
import numpy as np
import pytest

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError
from spacy_bioel.index.candidates import (DenseCandidates, ExactCandidates, HybridCandidates,
                                          SparseCandidates)
from spacy_bioel.index.name_index import NameIndex
from spacy_bioel.index.names import NameTable
from spacy_bioel.index.type_filter import TypeFilter

CONCEPTS = [("D1", "colorectal carcinoma", ("colon cancer",), ("disease",)),
            ("D2", "myocardial infarction", ("heart attack",), ("disease",)),
            ("HP1", "abnormal heart rhythm", (), ("phenotype",)),
            ("HP2", "large colon", ("megacolon",), ("phenotype",)),
            ("D3", "asthma", (), ("disease",))]


def toy_kb():
    kb = KnowledgeBase(name="toy")
    for cid, name, syns, types in CONCEPTS:
        kb.add(Concept(cid, name, syns, types=types))
    return kb


def index_with_random_embeddings(kb, dim=8, seed=0):
    """A NameIndex whose 'encoder' maps each text to a fixed random unit vector."""
    rng = np.random.default_rng(seed)
    cache = {}

    def encode(texts):
        for text in texts:
            if text not in cache:
                vector = rng.normal(size=dim).astype(np.float32)
                cache[text] = vector / np.linalg.norm(vector)
        return np.stack([cache[t] for t in texts])

    index = NameIndex()
    index.set_names(NameTable(kb))
    index.refresh(encode)
    return index, encode


def test_name_index_similarities_are_the_best_name_per_concept():
    kb = toy_kb()
    index, encode = index_with_random_embeddings(kb)
    query = encode(["colon cancer"])  # the exact embedding of D1's synonym
    [sims] = index.similarities(query, [[0, 1, 3]])
    assert sims[0] == pytest.approx(1.0, abs=1e-6)
    names = index.names
    for concept, sim in zip([1, 3], sims[1:]):
        rows = range(names.offsets[concept], names.end(concept))
        assert sim == pytest.approx(max(float(index.embeddings[r] @ query[0]) for r in rows))


def test_dense_candidates_and_type_masks_grow_the_pool():
    kb = toy_kb()
    index, encode = index_with_random_embeddings(kb)
    queries = encode(["heart attack", "megacolon"])
    dense = DenseCandidates()
    dense.initialize(kb, index)
    rows = dense(["heart attack", "megacolon"], queries, index, k=5)
    assert [r[0][0] for r in rows] == [1, 3]  # D2, HP2: their own names
    assert all(score == sim for row in rows for _, score, sim in row)
    type_filter = TypeFilter({"Phenotype": ["phenotype"]})
    type_filter.initialize(kb, index)
    masks = type_filter.masks(["Phenotype", "Disease"])
    assert masks[1] is None and masks[0].tolist() == [False, False, True, True, False]
    filtered = dense(["heart attack", "megacolon"], queries, index, k=5, masks=masks)
    assert {c for c, _, _ in filtered[0]} == {2, 3}  # only phenotypes, as many as exist
    assert [c for c, _, _ in filtered[1]] == [c for c, _, _ in rows[1]]  # unfiltered label


def test_type_filter_errors():
    with pytest.raises(BioELError, match="E170"):
        TypeFilter({"Phenotype": []})
    kb = toy_kb()
    type_filter = TypeFilter({"Phenotype": ["human_phenotype"]})  # not a type of this KB
    index = NameIndex()
    index.set_names(NameTable(kb))
    with pytest.raises(BioELError, match="E171"):
        type_filter.initialize(kb, index)


def test_exact_and_sparse_candidates_carry_dense_similarities():
    kb = toy_kb()
    index, encode = index_with_random_embeddings(kb)
    mentions = ["Colon Cancer", "megacolon", "gout"]
    queries = encode(mentions)
    exact = ExactCandidates()
    exact.initialize(kb, index)
    rows = exact(mentions, queries, index, k=5)
    assert [[c for c, _, _ in r] for r in rows] == [[0], [3], []]
    assert rows[0][0][2] == pytest.approx(index.similarities(queries[:1], [[0]])[0][0])
    sparse = SparseCandidates()
    sparse.initialize(kb, index)
    rows = sparse(mentions, queries, index, k=2)
    assert rows[0][0][0] == 0 and rows[0][0][1] == pytest.approx(1.0, abs=1e-5)
    sims = index.similarities(queries, [[c for c, _, _ in r] for r in rows])
    assert [[s for _, _, s in r] for r in rows] == [pytest.approx(s) for s in sims]


def test_exact_lookup_lists_every_concept_of_a_shared_name_in_kb_order():
    """The exact-match lookup (built at every load) gives each normalised name
    its concepts in KB order: one for most names, all of them for a name that
    concepts share (KeyLookup holds 64-bit key ids, not the strings)."""
    kb = KnowledgeBase(name="shared")
    for cid, name, syns in [("A", "Cold", ("common cold", "rhinitis")), ("B", "COLD", ("chill",)),
                            ("C", "chills", ("cold", "Chill")), ("D", "fever", ())]:
        kb.add(Concept(cid, name, syns))
    index, encode = index_with_random_embeddings(kb)
    exact = ExactCandidates()
    exact.initialize(kb, index)
    ids = index.names.concept_ids
    assert [ids[c] for c in exact.lookup.get("cold")] == ["A", "B", "C"]
    assert [ids[c] for c in exact.lookup.get("chill")] == ["B", "C"]
    assert [ids[c] for c in exact.lookup.get("rhinitis")] == ["A"]
    assert exact.lookup.get("flu") is None and exact.lookup.get("flu", []) == []
    mentions = ["a cold", "Cold!", "Fever"]
    rows = exact(mentions, encode(mentions), index, k=2)
    assert [[ids[c] for c, _, _ in row] for row in rows] == [[], ["A", "B"], ["D"]]


def test_the_key_lookup_agrees_with_a_dict_of_the_key_strings():
    from spacy_bioel.index.names import KeyLookup, key_id

    rng = np.random.default_rng(0)
    words = ["cold", "fever", "chill", "flu", "ache", "rash", "cough", "pain"]
    keys, owners = [], []
    for concept in range(300):  # each concept 1-4 distinct keys; many keys shared between concepts
        for key in {" ".join(rng.choice(words, size=rng.integers(1, 3))) for _ in range(rng.integers(1, 5))}:
            keys.append(key)
            owners.append(concept)
    want = {}
    for key, owner in zip(keys, owners):
        want.setdefault(key, []).append(owner)
    lookup = KeyLookup([key_id(k) for k in keys], owners)
    assert len(lookup) == len(keys)
    for key, concepts in want.items():
        assert lookup.get(key) == concepts  # every concept, concept order
    for missing in ["", "colds", "zzz zzz", "fever fever fever"]:
        assert lookup.get(missing) is None and lookup.get(missing, []) == []
    assert KeyLookup([], []).get("cold") is None


def test_hybrid_with_zero_sparse_weight_is_dense_and_fusion_adds_recall():
    kb = toy_kb()
    index, encode = index_with_random_embeddings(kb)
    mentions = ["colorectal carcinomas", "heart attacks", "asthmatic"]
    queries = encode(mentions)  # random: the dense side knows nothing of these strings
    dense = DenseCandidates()(mentions, queries, index, k=2)
    hybrid = HybridCandidates(sparse_weight=0.0)
    hybrid.initialize(kb, index)
    assert [[c for c, _, _ in r] for r in hybrid(mentions, queries, index, k=2)] == \
        [[c for c, _, _ in r] for r in dense]
    hybrid.set_params(sparse_weight=0.9)  # mostly TF-IDF: the surface forms win
    fused = hybrid(mentions, queries, index, k=2)
    assert [r[0][0] for r in fused] == [0, 1, 4]
    for row in fused:  # fused scores sorted; the similarity stays the dense cosine
        assert [s for _, s, _ in row] == sorted([s for _, s, _ in row], reverse=True)
    sims = index.similarities(queries, [[c for c, _, _ in r] for r in fused])
    assert [[s for _, _, s in r] for r in fused] == [pytest.approx(s) for s in sims]
    rrf = HybridCandidates(fusion="rrf")
    rrf.initialize(kb, index)
    for row in rrf(mentions, queries, index, k=3):
        assert all(0 < s <= 2 / 61 for _, s, _ in row)
    with pytest.raises(BioELError, match="E169"):
        HybridCandidates(fusion="max")


def test_name_index_round_trip_and_errors():
    kb = toy_kb()
    index, encode = index_with_random_embeddings(kb)
    fresh = NameIndex()
    with pytest.raises(BioELError, match="E168"):
        fresh.search(encode(["asthma"]), k=1)
    fresh.set_names(NameTable(kb))
    fresh.from_bytes(index.to_bytes())
    assert np.allclose(fresh.embeddings, index.embeddings) and not fresh.stale
    queries = encode(["asthma", "large colon"])
    assert fresh.search(queries, 3) == index.search(queries, 3)
    other = KnowledgeBase()
    other.add(Concept("X", "x"))
    wrong = NameIndex()
    wrong.set_names(NameTable(other))
    with pytest.raises(BioELError, match="E154"):
        wrong.from_bytes(index.to_bytes())

import numpy as np
import pytest

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError
from spacy_bioel.index.exact import ExactMatchCandidates
from spacy_bioel.index.names import NameTable, top_k
from spacy_bioel.index.sparse import TfidfCandidates


@pytest.fixture
def kb():
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("colorectal cancer", "CRC")))
    kb.add(Concept("D2", "breast carcinoma", ("breast cancer", "CRC")))
    kb.add(Concept("D3", "myocardial infarction", ("heart attack",)))
    kb.add(Concept("D4", "hepatoblastoma"))
    return kb


def test_name_table_groups_and_max(kb):
    table = NameTable(kb, [("D4", "liver tumour of infancy"), ("D4", "Hepatoblastoma")])
    assert table.concept_ids == ["D1", "D2", "D3", "D4"]
    assert table.n_extra == 1  # the duplicate (normalised) name is not added
    assert table.offsets.tolist() == [0, 3, 6, 8]
    scores = np.arange(len(table), dtype=np.float32)[None, :]
    assert table.max_per_concept(scores).tolist() == [[2, 5, 7, 9]]
    from spacy_bioel.kb.normalize import normalize_text

    from spacy_bioel.index.names import key_id

    assert table.key_ids.tolist() == [key_id(normalize_text(n)) for n in table.names]  # aligned
    assert table.key_ids[-1] == key_id("liver tumour of infancy")


def test_top_k_sorted_with_index_ties():
    scores = np.array([[0.1, 0.9, 0.5, 0.9], [1.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    idx, val = top_k(scores, 3)
    assert idx.tolist() == [[1, 3, 2], [0, 1, 2]]
    assert np.allclose(val, [[0.9, 0.9, 0.5], [1.0, 0.0, 0.0]])
    idx, _ = top_k(scores, 10)
    assert idx.shape == (2, 4)


def test_exact_match(kb):
    gen = ExactMatchCandidates(kb)
    assert gen(["Colorectal  Cancer", "crc", "unknown", "HEART-ATTACK"], k=5) == [
        [("D1", 1.0)], [("D1", 1.0), ("D2", 1.0)], [], [("D3", 1.0)]]
    assert gen(["crc"], k=1) == [[("D1", 1.0)]]
    with pytest.raises(BioELError) as err:
        gen(["x"], k=0)
    assert err.value.code == "E104"


def test_exact_match_extra_names(kb):
    gen = ExactMatchCandidates(kb, [("D3", "MI"), ("D9", "unknown concept")])
    assert gen(["mi"], k=3) == [[("D3", 1.0)]]
    assert gen(["unknown concept"], k=3) == [[("D9", 1.0)]]


def test_tfidf_ranks_the_right_concept(kb):
    gen = TfidfCandidates(kb, progress=False)
    results = gen(["colorectal carcinomas", "breast cancers", "myocardial infarct", "hepatoblastomas"], k=4)
    assert [r[0][0] for r in results] == ["D1", "D2", "D3", "D4"]
    for ranked in results:
        scores = [s for _, s in ranked]
        assert scores == sorted(scores, reverse=True)
        assert all(0 < s <= 1.0 + 1e-6 for s in scores)
        assert len({cid for cid, _ in ranked}) == len(ranked)  # one entry per concept


def test_tfidf_exact_name_scores_one_and_max_aggregation(kb):
    gen = TfidfCandidates(kb, progress=False)
    [(best, score), *_] = gen(["heart attack"], k=2)[0]
    assert best == "D3" and score == pytest.approx(1.0, abs=1e-5)
    # max over names: the score of D3 equals the best of its two names
    [full] = gen.score_concepts(["heart attack"], [[0, 1, 2, 3]])
    assert len(full) == 4
    assert full[2] == pytest.approx(1.0, abs=1e-5)
    assert [c for c, _ in gen.search(["heart attack"], k=4)[0]] == \
        sorted(range(4), key=lambda c: (-full[c], c))[:len(gen.search(["heart attack"], k=4)[0])]


def test_tfidf_name_blocks_equal_one_block(kb):
    """Scoring names in column blocks (a concept's names split across blocks)
    gives the same ranking as one block."""
    mentions = ["colorectal carcinomas", "breast cancers", "heart attacks", "liver", "tumour"]
    one = TfidfCandidates(kb, progress=False)(mentions, k=4)
    for block in (1, 2, 3):
        blocked = TfidfCandidates(kb, progress=False, name_block=block)(mentions, k=4)
        assert [[c for c, _ in r] for r in blocked] == [[c for c, _ in r] for r in one]
        assert [[s for _, s in r] for r in blocked] == \
            [pytest.approx([s for _, s in r], abs=1e-6) for r in one]


def test_tfidf_batches_equal_single(kb):
    mentions = ["colorectal carcinomas", "breast cancers", "heart attacks", "liver"] * 3
    batched = TfidfCandidates(kb, batch_size=2, progress=False)(mentions, k=3)
    single = TfidfCandidates(kb, batch_size=100, progress=False)(mentions, k=3)
    assert [[c for c, _ in r] for r in batched] == [[c for c, _ in r] for r in single]


def test_tfidf_word_weight_zero_and_extra_names(kb):
    gen = TfidfCandidates(kb, [("D4", "liver tumour of infancy")], word_weight=0.0, progress=False)
    assert gen.word_vectorizer is None
    assert gen(["liver tumour of infancy"], k=1)[0][0][0] == "D4"


def test_tfidf_errors(kb):
    with pytest.raises(BioELError) as err:
        TfidfCandidates(kb, ngram_range=(3, 2))
    assert err.value.code == "E103"
    with pytest.raises(BioELError) as err:
        TfidfCandidates(KnowledgeBase())
    assert err.value.code == "E105"
    with pytest.raises(BioELError) as err:
        ExactMatchCandidates(KnowledgeBase())
    assert err.value.code == "E105"


def test_top_k_ties_do_not_depend_on_k():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 3, size=(20, 50)).astype(np.float32)  # many ties
    full, _ = top_k(scores, 50)
    for k in (1, 2, 5, 17):
        idx, val = top_k(scores, k)
        assert idx.tolist() == full[:, :k].tolist()
        expected = np.lexsort((np.arange(50)[None].repeat(20, 0), -scores), axis=1)[:, :k]
        assert idx.tolist() == expected.tolist()


def test_the_name_table_packs_its_names_and_reads_them_back():
    """`NameTable.names` holds the names as one UTF-8 buffer: indexing (negative
    too), slicing, iteration and the joined bytes of the cache keys give the names
    as strings, in row order (non-ASCII names included); a table without names is
    empty."""
    from spacy_bioel.index.names import joined_utf8

    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "Sjögren syndrome", synonyms=("SS", "Sicca")))
    kb.add(Concept("D2", "maladie de Crohn"))
    table = NameTable(kb, [("D2", "Crohn’s"), ("D9", "unlisted")])
    expected = ["Sjögren syndrome", "SS", "Sicca", "maladie de Crohn", "Crohn’s", "unlisted"]
    assert list(table.names) == expected and len(table) == 6 and table.names[-1] == "unlisted"
    assert table.names[1:4] == expected[1:4] and table.names[4] == "Crohn’s"
    assert joined_utf8(table.names) == "\n".join(expected).encode("utf-8") == joined_utf8(expected)
    assert table.concept_ids == ["D1", "D2", "D9"] and table.owners.tolist() == [0, 0, 0, 1, 1, 2]
    with pytest.raises(IndexError):
        table.names[6]
    empty = NameTable(KnowledgeBase(name="empty"))
    assert len(empty) == 0 and list(empty.names) == [] and joined_utf8(empty.names) == b""

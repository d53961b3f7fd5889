"""The name index: encoding in chunks into a resumable cache, float16 vectors,
swapping the index type of a trained linker without encoding anything, and
searching on the encoder's device."""
import json

import numpy as np
import pytest
import spacy
from spacy.tokens import Span

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.index import name_index
from spacy_bioel.index.name_index import NameIndex
from spacy_bioel.index.names import NameTable
from tests.utils import tiny_linker_config


def kb_of(n):
    kb = KnowledgeBase(name="many")
    for i in range(n):
        kb.add(Concept(f"C{i}", f"disease number {i}", (f"syndrome {i}",)))
    return kb


def fake_encoder(calls):
    def encode(texts):
        calls.append(len(texts))
        rng = np.random.default_rng(len("".join(texts)))
        out = rng.normal(size=(len(texts), 8)).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)
    return encode


def test_encoding_is_chunked_and_resumes_after_an_interruption(tmp_path, monkeypatch):
    monkeypatch.setattr(name_index, "ENCODE_CHUNK", 10)
    names = NameTable(kb_of(20))  # 40 names: 4 chunks
    calls = []
    encode = fake_encoder(calls)

    def interrupted(texts):
        if len(calls) == 3:  # the shape probe, then 2 chunks: stop in the third
            raise KeyboardInterrupt
        return encode(texts)

    index = NameIndex(embedding_cache=str(tmp_path), vectors_dtype="float16")
    index.set_names(names)
    with pytest.raises(KeyboardInterrupt):
        index.refresh(interrupted, cache_key="k", progress=False)
    chunks = sorted(p.name.split("-")[0] for p in (tmp_path / "names-k-f16.chunks").iterdir())
    assert chunks == ["000000000000", "000000000010"]  # two whole chunks, nothing half-written
    calls.clear()
    index.refresh(encode, cache_key="k", progress=False)
    assert calls[1:] == [10, 10] and index.resumed_at == 20  # only the chunks not yet encoded
    assert (tmp_path / "names-k-f16.npy").exists() and index.embeddings.dtype == np.float16
    assert json.loads((tmp_path / "names-k-f16.npy.json").read_text())["shape"] == [40, 8]
    fresh = NameIndex(vectors_dtype="float16")
    fresh.set_names(names)
    fresh.refresh(encode, progress=False)  # no cache: everything in one go
    assert np.array_equal(fresh.embeddings, index.embeddings)


@pytest.fixture(scope="module")
def nlp(tiny_bert_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir))
    nlp.get_pipe("bioel_linker").set_kb(kb_of(50))
    nlp.initialize()
    return nlp


def ranked(nlp, text="disease number 7"):
    doc = nlp.make_doc(text)
    doc.ents = [Span(doc, 0, len(doc), label="Disease")]
    return [c for c, _ in nlp(doc).ents[0]._.kb_ents]


@pytest.mark.parametrize("block", [
    {"@misc": "spacy-bioel.NameIndex.v2", "vectors_dtype": "float16"},
    {"@misc": "spacy-bioel.NameIndex.v2", "index_type": "hnsw_sq8", "ef_search": 256},
    {"@misc": "spacy-bioel.NameIndex.v1", "index_type": "flat", "backend": "torch"}])
def test_swapping_the_index_encodes_nothing(nlp, tmp_path, block, monkeypatch):
    linker = nlp.get_pipe("bioel_linker")
    want = ranked(nlp)
    vectors = np.array(linker.index.embeddings, dtype=np.float32)
    monkeypatch.setattr(linker, "embed", lambda *a, **k: pytest.fail("encoded"))
    new = spacy.registry.resolve({"index": block})["index"]
    saved = linker.index
    try:
        linker.set_stage("index", new)
        assert np.allclose(np.asarray(new.embeddings, dtype=np.float32), vectors, atol=1e-3)
        got = ranked(nlp)
        assert got[:3] == want[:3]
    finally:
        linker.set_stage("index", saved)


def test_the_index_searches_on_the_encoders_device(nlp):
    linker = nlp.get_pipe("bioel_linker")
    assert linker.model_device() == "cpu" and linker.index.store.device == "cpu"
    index = NameIndex(device="auto")
    index.initialize(linker.kb, linker.index)
    index.use_device("cpu")
    assert index.store.device == "cpu" and index.store.backend == "numpy"
    pinned = NameIndex(device="cpu")
    pinned.initialize(linker.kb, linker.index)
    pinned.use_device("cuda:0")  # an explicit device wins over the encoder's
    assert pinned.store.device == "cpu"


@pytest.mark.gpu
def test_flat_search_on_a_gpu_equals_the_cpu(nlp):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    linker = nlp.get_pipe("bioel_linker")
    index = NameIndex()
    index.initialize(linker.kb, linker.index)
    index.use_device("cuda:0")
    assert index.store.backend == "torch" and index.store.device == "cuda:0"
    queries = linker.embed(["disease number 3", "syndrome 9"], "mention")
    assert [[c for c, _, _ in row] for row in index.search(queries, 5)] == \
        [[c for c, _, _ in row] for row in linker.index.search(queries, 5)]


def test_errors_of_the_v2_settings():
    from spacy_bioel.errors import BioELError

    for block in ({"vectors_dtype": "int4"}, {"device": "tpu"}, {"nprobe": 0}):
        with pytest.raises(BioELError, match="E175"):
            spacy.registry.resolve({"index": {"@misc": "spacy-bioel.NameIndex.v2", **block}})


def test_top_k_orders_by_score_then_tie_rank_then_index_whatever_k():
    """`top_k` against its definition (every column sorted by score desc, tie rank
    asc, index asc; the first k), on scores with many ties and -inf, with and
    without a tie rank, for every k: rows whose ties reach past the k-th place
    and rows whose partition is the answer alike."""
    from spacy_bioel.index.names import top_k

    rng = np.random.default_rng(7)
    scores = rng.integers(0, 4, size=(40, 12)).astype(np.float32)
    scores[rng.random(scores.shape) < 0.1] = -np.inf
    scores[:10] += rng.random((10, 12)).astype(np.float32)  # rows without ties
    tie_rank = rng.permutation(12)
    for ranks in (None, tie_rank):
        for k in range(1, 14):
            got, values = top_k(scores, k, ranks)
            for row in range(len(scores)):
                ties = ranks if ranks is not None else np.arange(12)
                want = sorted(range(12), key=lambda j: (-scores[row, j], ties[j], j))[:k]
                assert got[row].tolist() == want
                assert values[row].tolist() == scores[row, want].tolist()
    assert top_k(scores, 0)[0].shape == (40, 0) and top_k(scores[:0], 3)[0].shape == (0, 3)
    assert top_k(np.zeros((2, 0), dtype=np.float32), 3)[0].shape == (2, 0)


def table_fields(table):
    return (table.concept_ids, list(table.names), table.key_ids.tolist(), table.owners.tolist(),
            table.offsets.tolist(), table.tie_rank.tolist(), table.n_unindexed, table.n_extra)


def test_a_saved_name_table_loads_as_built_and_only_for_its_kb(tmp_path, monkeypatch):
    """`NameTable.save`/`load`: the same table as building it from the KB (rows,
    keys, owners, tie ranks), read only for the KB digest and the normalisation
    rules it was written for, and never from a damaged file (then: None)."""
    from spacy_bioel.index import names as names_module

    kb = kb_of(30)
    kb.add(Concept("C-dash", "--"))  # no indexable name: W007 when built and when loaded
    kb.add(Concept("C-ü", "Morbus Crohn\u00fc", ("MORBUS  crohnü",)))
    with pytest.warns(Warning, match="W007"):
        built = NameTable(kb)
    built.save(tmp_path / "t.npz", "digest-a")
    with pytest.warns(Warning, match="W007"):
        loaded = NameTable.load(tmp_path / "t.npz", kb, "digest-a")
    assert loaded is not None and table_fields(loaded) == table_fields(built)
    assert NameTable.load(tmp_path / "t.npz", kb, "digest-b") is None  # another KB file
    monkeypatch.setattr(names_module, "rules_fingerprint", lambda: "other rules")
    assert NameTable.load(tmp_path / "t.npz", kb, "digest-a") is None
    monkeypatch.undo()
    data = (tmp_path / "t.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[:len(data) // 2])
    assert NameTable.load(tmp_path / "cut.npz", kb, "digest-a") is None
    assert NameTable.load(tmp_path / "absent.npz", kb, "digest-a") is None


def test_a_saved_pipeline_reads_its_name_table_and_links_the_same(nlp, tmp_path, monkeypatch):
    """Saving writes the name table beside the index; loading reads it instead of
    building it from the KB, and links as a load that builds it; a pipeline saved
    without one (before it was saved, or its manifest sealed without it), or
    with one for another KB file, gets the table built from its KB."""
    from spacy_bioel.files import sha256_of
    from spacy_bioel.index.names import TABLE_FILE
    from spacy_bioel.pipeline.integrity import seal

    nlp.to_disk(tmp_path / "p")
    with np.load(tmp_path / "p" / "bioel_linker" / "index" / TABLE_FILE) as saved:
        meta = json.loads(saved["meta"].tobytes())
    assert meta["kb"] == sha256_of(tmp_path / "p" / "bioel_linker" / "kb")  # the KB saved with it
    built = []
    original = NameTable.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(NameTable, "__init__", counting)
    loaded = spacy.load(tmp_path / "p")
    assert not built and ranked(loaded) == ranked(nlp)
    table = tmp_path / "p" / "bioel_linker" / "index" / TABLE_FILE
    saved = table.read_bytes()
    table.unlink()
    seal(tmp_path / "p" / "bioel_linker")
    assert ranked(spacy.load(tmp_path / "p")) == ranked(nlp) and built == [1]
    monkeypatch.setattr("spacy_bioel.pipeline.serialize.sha256_of", lambda path: "another KB")
    table.write_bytes(saved)
    seal(tmp_path / "p" / "bioel_linker")
    assert ranked(spacy.load(tmp_path / "p")) == ranked(nlp) and built == [1, 1]

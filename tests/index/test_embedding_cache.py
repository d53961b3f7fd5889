"""The embedding cache trusts nothing it finds: damaged chunks, a cache of the
wrong width or one changed behind its record are set aside (W011) and encoded
again, and two writers on one entry both end with the same, whole result."""
import threading
import time

import numpy as np
import pytest

from spacy_bioel.errors import BioELWarning
from spacy_bioel.index.embedding_cache import EmbeddingCache, cached_embeddings

ROWS, DIM, SIZE = 25, 6, 10  # chunks of 10, 10 and 5 rows


def vectors(start, stop, width=DIM):
    return np.arange(start * width, stop * width, dtype=np.float32).reshape(stop - start, width) / 100


def run(folder, calls=None, width=DIM, delay=0.0):
    def encode(start, stop):
        if calls is not None:
            calls.append(start)
        time.sleep(delay)
        return vectors(start, stop, width)

    cache = EmbeddingCache(folder, "k", ROWS, "float32")
    return cached_embeddings(cache, width, SIZE, encode)


def chunk_files(folder):
    return sorted((folder / "names-k.chunks").iterdir())


def interrupted(folder):
    """Leave chunks 0 and 10 written, as a run killed in the third chunk does."""
    cache = EmbeddingCache(folder, "k", ROWS, "float32")
    for start in (0, 10):
        cache.write_chunk(start, vectors(start, start + SIZE))


def test_a_clean_resume_encodes_only_the_missing_chunk(tmp_path):
    interrupted(tmp_path)
    calls = []
    embeddings, resumed = run(tmp_path, calls)
    assert calls == [20] and resumed == 20 and np.array_equal(embeddings, vectors(0, ROWS))
    assert not (tmp_path / "names-k.chunks").exists()
    calls.clear()
    again, resumed = run(tmp_path, calls)
    assert calls == [] and resumed == ROWS and np.array_equal(again, vectors(0, ROWS))


@pytest.mark.parametrize("damage", ["truncate", "zero-fill", "garbage name", "wrong width"])
def test_a_damaged_chunk_is_encoded_again(tmp_path, damage):
    interrupted(tmp_path)
    first = chunk_files(tmp_path)[0]
    if damage == "truncate":
        first.write_bytes(first.read_bytes()[:60])
    elif damage == "zero-fill":
        data = first.read_bytes()
        first.write_bytes(data[:128] + b"\0" * (len(data) - 128))  # the header kept, rows zeroed
    elif damage == "garbage name":
        (first.parent / "junk.npy").write_bytes(b"junk")
    else:
        first.unlink()
        EmbeddingCache(tmp_path, "k", ROWS, "float32").write_chunk(0, vectors(0, SIZE, DIM + 1))
    calls = []
    with pytest.warns(BioELWarning, match="W011"):
        embeddings, _ = run(tmp_path, calls)
    assert np.array_equal(embeddings, vectors(0, ROWS))
    assert 0 in calls or damage == "garbage name"


@pytest.mark.parametrize("damage", ["width", "behind its record", "no record"])
def test_a_bad_assembled_entry_is_encoded_again(tmp_path, damage):
    run(tmp_path)
    path = tmp_path / "names-k.npy"
    if damage == "width":  # a cache of another width, its record consistent with it
        run(tmp_path / "other", width=DIM + 2)
        for suffix in ("", ".json"):
            (tmp_path / f"names-k.npy{suffix}").write_bytes(
                (tmp_path / "other" / f"names-k.npy{suffix}").read_bytes())
    elif damage == "behind its record":
        np.save(path, np.zeros((ROWS, DIM), dtype=np.float32))
    else:
        (tmp_path / "names-k.npy.json").unlink()
    calls = []
    with pytest.warns(BioELWarning, match="W011"):
        embeddings, resumed = run(tmp_path, calls)
    assert calls == [0, 10, 20] and resumed == 0
    assert embeddings.shape == (ROWS, DIM) and np.array_equal(embeddings, vectors(0, ROWS))


def test_two_writers_on_one_entry_both_get_the_whole_result(tmp_path):
    results, errors = [], []

    def writer():
        try:
            results.append(run(tmp_path, delay=0.05)[0])
        except Exception as err:  # pragma: no cover - the failure this test guards against
            errors.append(err)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 2
    assert all(np.array_equal(r, vectors(0, ROWS)) for r in results)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("names-k.npy", "names-k.npy.json",
                                                                     "names-k.lock")]
    assert leftovers == []


def test_the_auto_folder_is_the_users_cache(tmp_path, monkeypatch):
    """'auto' (the factory default) is $SPACY_BIOEL_CACHE/names, else the XDG or
    home cache; a folder that cannot be made is W014 and no cache; None is none."""
    import os

    from spacy_bioel.index.name_index import cache_folder

    assert cache_folder(None) is None and cache_folder("") is None
    assert cache_folder(str(tmp_path / "mine")) == str(tmp_path / "mine")  # as configured
    monkeypatch.setenv("SPACY_BIOEL_CACHE", str(tmp_path / "env"))
    assert cache_folder("auto") == str(tmp_path / "env" / "names")
    assert (tmp_path / "env" / "names").is_dir()
    monkeypatch.delenv("SPACY_BIOEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_folder("auto") == os.path.join(str(tmp_path / "xdg"), "spacy_bioel", "names")
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("SPACY_BIOEL_CACHE", str(tmp_path / "file"))
    with pytest.warns(BioELWarning, match="W014"):
        assert cache_folder("auto") is None


def test_an_untrained_linker_encodes_a_kbs_names_once_per_machine(tiny_bert_dir, tmp_path,
                                                                  monkeypatch):
    """The factory default (`embedding_cache = "auto"`, towers trained when
    training): a second pipeline on the same KB and base model reads the names'
    embeddings from the cache; once the linker has trained, nothing is cached."""
    import spacy

    from spacy_bioel import Concept, KnowledgeBase
    from spacy_bioel.pipeline.factory import DEFAULT_CONFIG
    from tests.utils import torch_linker

    assert DEFAULT_CONFIG["index"]["embedding_cache"] == "auto"
    monkeypatch.setenv("SPACY_BIOEL_CACHE", str(tmp_path / "cache"))
    kb = KnowledgeBase(name="toy")
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction")]:
        kb.add(Concept(cid, name))

    def linker():
        nlp = spacy.blank("en")
        pipe = nlp.add_pipe("bioel_linker", config=torch_linker({"model": {
            "@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
            "max_length": 16}}))
        pipe.set_kb(kb)
        nlp.initialize(lambda: [])
        return pipe

    first = linker()
    assert first.index.resumed_at == 0  # encoded, and written
    assert list((tmp_path / "cache" / "names").glob("names-*.npy"))
    second = linker()
    assert second.index.resumed_at == len(first.index.names)  # read back, nothing encoded
    assert np.array_equal(second.index.store.vectors(), first.index.store.vectors())
    second.steps.steps = 1  # after a training step the concept tower is no longer the base's
    calls = []
    monkeypatch.setattr(second.index, "cached_embeddings", lambda encode, key, progress: calls.append(key)
                        or np.asarray(encode(second.index.names.names)))
    second.refresh(force=True)
    assert calls == [None]


def test_a_float16_index_reads_the_float32_entry_of_the_same_names(tiny_bert_dir, tmp_path,
                                                                   monkeypatch):
    """The embedded default's float16 index on names a float32 index cached before
    (an earlier version's `link`): cast from that entry, nothing encoded."""
    import spacy

    from spacy_bioel import Concept, KnowledgeBase

    monkeypatch.setenv("SPACY_BIOEL_CACHE", str(tmp_path / "cache"))
    kb = KnowledgeBase(name="toy")
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction")]:
        kb.add(Concept(cid, name))

    def linker(dtype):
        nlp = spacy.blank("en")
        pipe = nlp.add_pipe("bioel_linker", config={
            "model": {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
                      "max_length": 16},
            "index": {"@misc": "spacy-bioel.NameIndex.v2", "vectors_dtype": dtype,
                      "embedding_cache": "auto"}})
        pipe.set_kb(kb)
        nlp.initialize(lambda: [])
        return pipe

    full = linker("float32")
    assert full.index.resumed_at == 0
    half = linker("float16")
    assert half.index.resumed_at == len(full.index.names)  # read, not encoded
    assert np.array_equal(half.index.store.vectors(),
                          full.index.store.vectors().astype(np.float16).astype(np.float32))
    assert not list((tmp_path / "cache" / "names").glob("names-*-f16.npy"))


def test_a_read_only_cache_is_read_and_never_written(tmp_path, monkeypatch):
    """A complete entry is read without the lock (a read-only folder cannot hold one);
    in a read-only folder without the entry the names are encoded and nothing is written."""
    import os

    whole, _ = run(tmp_path)
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, *a, **k: False if mode & os.W_OK
                        else real(path, mode))
    monkeypatch.setattr(EmbeddingCache, "lock", lambda self: pytest.fail("took the write lock"))
    calls = []
    again, _ = run(tmp_path, calls)
    assert calls == [] and np.array_equal(again, whole)
    empty = tmp_path / "empty"
    empty.mkdir()
    encoded, resumed = run(empty, calls)
    assert calls == [0, 10, 20] and resumed == 0 and np.array_equal(encoded, whole)
    assert list(empty.iterdir()) == []

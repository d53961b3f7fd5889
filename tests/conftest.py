import os
import string
from pathlib import Path

import pytest

from spacy_bioel import Concept, KnowledgeBase

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_ROOT = Path(os.environ.get("BIOEL_DATA_ROOT", REPO_ROOT.parent / "shared" / "data")).resolve()


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): tests that run on one pytest-xdist "
                                       "worker (set for every test by tests/conftest.py)")
    _share_the_cores_between_workers()


def _share_the_cores_between_workers() -> None:
    """On an xdist worker, cap its thread pools (and, through OMP_NUM_THREADS, those of
    the processes its tests start) at its share of the cores: two workers each running
    PyTorch on every core of a 2-core machine took twice as long as one process. An
    OMP_NUM_THREADS the caller set is kept; tests about default thread counts drop it
    from their subprocess' environment."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers < 2 or "OMP_NUM_THREADS" in os.environ:
        return
    from spacy_bioel.encoders.threads import limit_threads

    threads = max(1, (os.cpu_count() or 1) // workers)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    limit_threads(threads)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """`make test` runs the suite on a few processes (pytest-xdist, `--dist loadgroup`):
    a test without a group of its own (`tests.utils.starts_ray`) is grouped by its file,
    so each file stays on one worker and its module fixtures are built once."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


@pytest.fixture(autouse=True)
def embedding_cache_home(tmp_path_factory, monkeypatch):
    """`embedding_cache = "auto"` (the factory default) writes under
    $SPACY_BIOEL_CACHE: a fresh folder per test, never the user's cache."""
    monkeypatch.setenv("SPACY_BIOEL_CACHE", str(tmp_path_factory.mktemp("bioel_cache")))


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real corpora (../shared/data, or $BIOEL_DATA_ROOT); data tests skip without it."""
    if not (DATA_ROOT / "ncbi_disease").is_dir():
        pytest.skip(f"real data not found at {DATA_ROOT} (set BIOEL_DATA_ROOT)")
    return DATA_ROOT



@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    """A random-weight 2-layer BERT (hidden 32) with a character WordPiece vocab (~100 KB)."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny_bert")
    chars = list(string.ascii_lowercase + string.digits) + list("[]/-'(),.")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # from_pretrained reads vocab.txt under transformers 4.x and 5.x alike (5.x's
    # constructor no longer takes `vocab_file`, and would silently keep 5 tokens)
    tokenizer = BertTokenizerFast.from_pretrained(str(path), do_lower_case=True)
    assert len(tokenizer.get_vocab()) == len(vocab), "the tiny tokenizer lost its vocabulary"
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    import torch
    torch.manual_seed(0)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture
def toy_kb():
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("colon cancer",)))
    kb.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    kb.add(Concept("D3", "type 2 diabetes", ("NIDDM",)))
    kb.add(Concept("D4", "breast carcinoma"))
    kb.add(Concept("D5", "hepatoblastoma"))
    kb.add(Concept("D6", "asthma"))
    return kb


@pytest.fixture(autouse=True)
def _reset_cli_logging():
    """CLI commands attach a handler to the 'spacy_bioel' logger (as a CLI process
    should); in-process tests remove it again so tests stay independent."""
    import logging

    yield
    package = logging.getLogger("spacy_bioel")
    for handler in list(package.handlers):
        package.removeHandler(handler)
    package.setLevel(logging.NOTSET)

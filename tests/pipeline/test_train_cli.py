"""`spacy train configs/<each linker config>` end to end on a tiny fixture (CI smoke test)."""
from pathlib import Path

import numpy as np
import pytest
import spacy

from tests.utils import spacy_train_toy

REPO = Path(__file__).resolve().parents[2]
FAST_DEFAULTS = ("linker.cfg", "linker_cpu.cfg")  # the two configs users train (issue 45)


@pytest.mark.parametrize("config", ["linker.cfg", "linker_cpu.cfg", "linker_proxy.cfg",
                                    "linker_triplet.cfg", "linker_prototype.cfg"])
def test_spacy_train_linker_config(tiny_bert_dir, tmp_path, config):
    progress = ("--training.logger.every_seconds", "0") if config in FAST_DEFAULTS else ()
    result = spacy_train_toy(REPO / "configs" / config, tmp_path, tiny_bert_dir, *progress)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    if progress:  # the progress line between evaluations (spacy-bioel.ProgressLogger.v1)
        assert "bioel_linker: step " in result.stdout
        assert "next evaluation (step" in result.stdout or "no evaluation before the end" in result.stdout
    trained = spacy.load(tmp_path / "out" / "model-last")
    linker = trained.get_pipe("bioel_linker")
    doc = trained.make_doc("colon cancers")  # no KB name: encoded, every concept ranked
    doc.ents = [doc.char_span(0, 13, label="Disease")]
    doc = trained(doc)
    assert doc.ents[0].kb_id_ in {"D1", "D2", "D3"}
    assert len(doc.ents[0]._.kb_ents) == 3
    if config in FAST_DEFAULTS:  # what `train` gives: ONNX int8, float16 names, the int8 scan, the shortcut
        assert (tmp_path / "out" / "model-last" / "bioel_linker" / "runtime" / "mention.onnx").is_file()
        assert linker.deferred_model is not None  # predicted without building the PyTorch module
        assert linker.index.store.vectors().dtype == np.float16
        assert linker.index.store.index_type == "int8"  # searched by the int8 scan
        exact = trained.make_doc("colon cancer")
        exact.ents = [exact.char_span(0, 12, label="Disease")]
        assert trained(exact).ents[0]._.kb_ents == [("D1", 1.0)]
        assert linker.counts["exact_shortcut"] == 1
    # model-last was saved after the RefreshLinkers callback: its datastore holds the
    # final weights' embeddings (re-encoding now gives the same keys)
    saved_keys = linker.datastore.keys.copy()
    linker.datastore_stale = True
    linker.refresh()
    assert np.allclose(linker.datastore.keys, saved_keys, atol=1e-5)

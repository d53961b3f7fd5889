"""`spacy train configs/<each linker config>` end to end on a tiny fixture (CI smoke test)."""
from pathlib import Path

import pytest
import spacy

from tests.utils import spacy_train_toy

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("config", ["linker.cfg", "linker_cpu.cfg", "linker_proxy.cfg",
                                    "linker_triplet.cfg", "linker_prototype.cfg"])
def test_spacy_train_linker_config(tiny_bert_dir, tmp_path, config):
    result = spacy_train_toy(REPO / "configs" / config, tmp_path, tiny_bert_dir)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    trained = spacy.load(tmp_path / "out" / "model-last")
    doc = trained.make_doc("colon cancer")
    doc.ents = [doc.char_span(0, 12, label="Disease")]
    doc = trained(doc)
    assert doc.ents[0].kb_id_ in {"D1", "D2", "D3"}
    assert len(doc.ents[0]._.kb_ents) == 3
    # model-last was saved after the RefreshLinkers callback: its datastore holds the
    # final weights' embeddings (re-encoding now gives the same keys)
    import numpy as np

    linker = trained.get_pipe("bioel_linker")
    saved_keys = linker.datastore.keys.copy()
    linker.datastore_stale = True
    linker.refresh()
    assert np.allclose(linker.datastore.keys, saved_keys, atol=1e-5)

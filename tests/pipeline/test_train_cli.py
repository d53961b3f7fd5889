"""`spacy train configs/<each linker config>` end to end on a tiny fixture (CI smoke test)."""
import subprocess
import sys
from pathlib import Path

import pytest
import spacy

from tests.utils import write_toy_linking_data

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("config", ["linker.cfg", "linker_cpu.cfg", "linker_proxy.cfg",
                                    "linker_triplet.cfg", "linker_prototype.cfg"])
def test_spacy_train_linker_config(tiny_bert_dir, tmp_path, config):
    write_toy_linking_data(tmp_path, nil=False, repeat=3)
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(REPO / "configs" / config),
         "--output", str(tmp_path / "out"), "--paths.train", str(tmp_path / "data.spacy"),
         "--paths.dev", str(tmp_path / "data.spacy"), "--paths.kb", str(tmp_path / "kb.bioelkb"),
         "--paths.encoder", str(tiny_bert_dir), "--training.max_epochs", "2",
         "--training.eval_frequency", "2", "--components.bioel_linker.model.max_length", "16"],
        capture_output=True, text=True)
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

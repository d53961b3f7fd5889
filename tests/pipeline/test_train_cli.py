"""`spacy train configs/<each linker config>` end to end on a tiny fixture (CI smoke test)."""
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_bioel import Concept, KnowledgeBase

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("config", ["linker.cfg", "linker_cpu.cfg", "linker_proxy.cfg",
                                    "linker_triplet.cfg", "linker_prototype.cfg"])
def test_spacy_train_linker_config(tiny_bert_dir, tmp_path, config):
    nlp = spacy.blank("en")
    docs = []
    for text, spans in [("colon cancer and heart attack", [(0, 12, "D1"), (17, 29, "D2")]),
                        ("asthma in a child", [(0, 6, "D3")])] * 3:
        doc = nlp.make_doc(text)
        doc.ents = [doc.char_span(s, e, label="Disease", kb_id=c) for s, e, c in spans]
        docs.append(doc)
    DocBin(docs=docs, store_user_data=True).to_disk(tmp_path / "train.spacy")
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("colon cancer",)))
    kb.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    kb.add(Concept("D3", "asthma"))
    kb.to_disk(tmp_path / "kb.bioelkb")
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(REPO / "configs" / config),
         "--output", str(tmp_path / "out"), "--paths.train", str(tmp_path / "train.spacy"),
         "--paths.dev", str(tmp_path / "train.spacy"), "--paths.kb", str(tmp_path / "kb.bioelkb"),
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

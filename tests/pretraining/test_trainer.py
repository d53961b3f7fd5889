import json

import pytest
import torch

from spacy_bioel.errors import BioELError
from spacy_bioel.pretraining import SynonymSet, make_pairs
from spacy_bioel.pretraining.trainer import CHECKPOINT_DIR, RECORD_FILE, PretrainSettings, pretrain

SYNONYMS = [
    ("D1", ("colon cancer", "colorectal carcinoma", "bowel cancer", "crc")),
    ("D2", ("heart attack", "myocardial infarction", "mi", "cardiac infarction")),
    ("D3", ("type 2 diabetes", "niddm", "t2dm", "adult onset diabetes")),
    ("D4", ("asthma", "bronchial asthma", "reactive airway disease")),
    ("D5", ("hepatoblastoma", "liver blastoma")),
    ("D6", ("kidney failure", "renal failure", "renal insufficiency")),
]


def pairs():
    return make_pairs([SynonymSet(c, names) for c, names in SYNONYMS], max_pairs_per_concept=None)


def settings(tiny_bert_dir, **overrides):
    values = dict(base_model=str(tiny_bert_dir), batch_size=8, epochs=6, learning_rate=2e-3,
                  max_length=16, seed=0, threads=1, checkpoint_every=1000)
    values.update(overrides)
    return PretrainSettings(**values)


def synonym_gap(model_dir):
    """Mean cosine of synonym pairs minus mean cosine of names of different concepts."""
    from spacy_bioel.encoders.torch_biencoder import BiEncoder, encode_texts, load_transformer

    tokenizer, transformer = load_transformer(str(model_dir))
    texts = [name for _, names in SYNONYMS for name in names]
    labels = torch.tensor([i for i, (_, names) in enumerate(SYNONYMS) for _ in names])
    emb = encode_texts(BiEncoder(transformer), tokenizer, texts, max_length=16)
    sim = emb @ emb.T
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(texts), dtype=torch.bool)
    return float(sim[same & ~eye].mean() - sim[~same].mean())


def test_pretraining_widens_the_synonym_gap(tiny_bert_dir, tmp_path):
    record = pretrain(pairs(), tmp_path / "out", settings(tiny_bert_dir), progress=False)
    before, after = synonym_gap(tiny_bert_dir), synonym_gap(tmp_path / "out")
    assert after > before + 0.05, (before, after)
    assert record["loss_last_10pct"] < record["loss_first_10pct"]
    saved = json.loads((tmp_path / "out" / RECORD_FILE).read_text())
    assert saved["steps"] == 6 * 4 and saved["pairs"] == len(pairs()) == 25
    assert saved["names_seen"] == 2 * 6 * 25 and saved["names_per_s"] > 0
    assert not (tmp_path / "out" / CHECKPOINT_DIR).exists()


def test_an_interrupted_run_resumes_to_the_same_weights(tiny_bert_dir, tmp_path, monkeypatch):
    from spacy_bioel.losses import multi_similarity

    full = tmp_path / "full"
    pretrain(pairs(), full, settings(tiny_bert_dir, epochs=2), progress=False)
    calls = {"n": 0}
    forward = multi_similarity.MultiSimilarityLoss.forward

    def crash_on_fifth_step(self, *args):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return forward(self, *args)

    monkeypatch.setattr(multi_similarity.MultiSimilarityLoss, "forward", crash_on_fifth_step)
    resumed = tmp_path / "resumed"
    run = settings(tiny_bert_dir, epochs=2, checkpoint_every=2)
    with pytest.raises(KeyboardInterrupt):
        pretrain(pairs(), resumed, run, progress=False)
    meta = json.loads((resumed / CHECKPOINT_DIR / "meta.json").read_text())
    assert meta["step"] == 4
    monkeypatch.setattr(multi_similarity.MultiSimilarityLoss, "forward", forward)
    with pytest.raises(BioELError, match="E182"):  # another run's settings
        pretrain(pairs(), resumed, settings(tiny_bert_dir, epochs=2, learning_rate=1e-3),
                 progress=False)
    record = pretrain(pairs(), resumed, run, progress=False)
    assert record["resumed_at_step"] == 4 and record["steps"] == 8
    from transformers import AutoModel

    a = AutoModel.from_pretrained(str(full)).state_dict()
    b = AutoModel.from_pretrained(str(resumed)).state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_no_pairs_is_a_coded_error(tiny_bert_dir, tmp_path):
    with pytest.raises(BioELError, match="E183"):
        pretrain([], tmp_path / "out", settings(tiny_bert_dir), progress=False)


def test_frozen_layers_keep_their_weights(tiny_bert_dir, tmp_path):
    from transformers import AutoModel

    pretrain(pairs(), tmp_path / "out", settings(tiny_bert_dir, epochs=1, freeze_layers=1),
             progress=False)
    before = AutoModel.from_pretrained(str(tiny_bert_dir)).state_dict()
    after = AutoModel.from_pretrained(str(tmp_path / "out")).state_dict()
    frozen = [k for k in before if k.startswith(("embeddings.", "encoder.layer.0."))]
    trained = [k for k in before if k.startswith("encoder.layer.1.")]
    assert frozen and trained
    assert all(torch.equal(before[k], after[k]) for k in frozen)
    assert any(not torch.equal(before[k], after[k]) for k in trained)

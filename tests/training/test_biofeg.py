"""BioFEG: the WGAN-GP feature generator and the concept-tower fine-tuning stage."""
from pathlib import Path

import numpy as np
import pytest
import spacy
import torch
from thinc.api import Adam

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError, BioELWarning
from spacy_bioel.research.biofeg import description_text
from spacy_bioel.research.feature_gan import (FeatureCritic, GANSettings, generate_features,
                                              gradient_penalty, train_feature_gan)
from tests.utils import gold_examples, spacy_train_toy, torch_linker

REPO = Path(__file__).resolve().parents[2]
TRAIN = [
    ("Patients with colon cancer had a heart attack .", [(14, 26, "D1"), (33, 45, "D2")]),
    ("NIDDM and breast carcinoma were frequent .", [(0, 5, "D3"), (10, 26, "D4")]),
    ("Colon cancer , heart attack and NIDDM .", [(0, 12, "D1"), (15, 27, "D2"), (32, 37, "D3")]),
]


def test_gradient_penalty_matches_a_loop_over_the_formula():
    """(||grad_{y^} D(y^, y_d)||_2 - 1)^2 averaged over the batch, y^ = eps y + (1 - eps) y~."""
    torch.manual_seed(0)
    critic = FeatureCritic(feature_dim=3, description_dim=2, hidden=5)
    real, fake, cond = torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 2)
    eps = torch.rand(4, 1)
    expected = 0.0
    for i in range(4):
        point = (eps[i] * real[i] + (1 - eps[i]) * fake[i]).unsqueeze(0).requires_grad_(True)
        (grad,) = torch.autograd.grad(critic(point, cond[i:i + 1]).sum(), point)
        expected += (float(torch.sqrt((grad ** 2).sum())) - 1) ** 2
    value = gradient_penalty(critic, real, fake, cond, eps)
    assert value.requires_grad  # the critic's step differentiates through it
    assert float(value.detach()) == pytest.approx(expected / 4, rel=1e-5)


def test_generator_learns_the_cluster_of_each_description():
    """Two Gaussian clusters of 'mention features', each conditioned on its own
    'description': generated features land near their own cluster's centre."""
    torch.manual_seed(0)
    centres = torch.tensor([[2.0, 2.0, 0.0, 0.0], [-2.0, 0.0, 2.0, -2.0]])
    descriptions = torch.eye(2)
    labels = torch.arange(2).repeat_interleave(200)
    features = centres[labels] + 0.3 * torch.randn(400, 4)
    settings = GANSettings(epochs=100, critic_steps=5, penalty=10.0, learning_rate=5e-3,
                           hidden=32, batch_size=32)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only add overhead
    try:
        gen, _, history = train_feature_gan(features, descriptions[labels], settings,
                                            torch.Generator().manual_seed(0))
    finally:
        torch.set_num_threads(threads)
    fake = generate_features(gen, descriptions, per_concept=100)  # 100 for each description
    nearest = torch.cdist(fake, centres).argmin(dim=1)
    assert float((nearest == torch.arange(2).repeat_interleave(100)).float().mean()) > 0.95
    # What the conditional critic guarantees is the side of each condition, not how
    # close a 100-epoch WGAN's mean comes to the centre: that distance moves with
    # the floating-point kernels of the machine (0.19-1.28 over seeds 0-7 here; 1.05
    # on a fresh machine for seed 0). Each description's features sit on its own
    # side of the midpoint between the centres, not collapsed onto the other.
    separation = float((centres[0] - centres[1]).norm())
    for k in range(2):
        own = float((fake[k * 100:(k + 1) * 100].mean(0) - centres[k]).norm())
        assert own < 0.5 * separation
    assert len(history.wasserstein) == 100 and history.summary()["epochs"] == 100


def test_description_text_prefers_the_definition_then_names_and_parents():
    kb = KnowledgeBase()
    kb.add(Concept("P", "neoplasm"))
    kb.add(Concept("C", "colon cancer", ("colorectal carcinoma",),
                   relations=(("is_a", "P"),)))
    kb.add(Concept("D", "gout", definition="A disorder of purine metabolism."))
    assert description_text(kb["D"], kb) == "gout: A disorder of purine metabolism."
    assert description_text(kb["C"], kb) == "colon cancer; also: colorectal carcinoma; a kind of: neoplasm"
    assert len(description_text(kb["D"], kb, max_chars=10)) == 10


def toy_kb():
    kb = KnowledgeBase(name="toy")
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"),
                      ("D3", "type 2 diabetes"), ("D4", "breast carcinoma"),
                      ("D5", "hepatoblastoma"), ("D6", "asthma"), ("D7", "gout"),
                      ("D8", "rickets")]:
        kb.add(Concept(cid, name, definition="a disease" if cid == "D7" else None))
    return kb


def biofeg_block(tiny_bert_dir, **params):
    return {"@misc": "spacy-bioel.BioFEG.v1", "iterations": 1,
            "description_encoder": str(tiny_bert_dir), "gan_epochs": 3, "hidden": 16,
            "gan_batch_size": 4, "finetune_learning_rate": 1e-3, "finetune_batch_size": 2,
            **params}


def build(tiny_bert_dir, shared=False, train_concept_tower=True, examples=True, **biofeg):
    nlp = spacy.blank("en")
    model = {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
             "max_length": 16, "shared_towers": shared,
             "train_concept_tower": train_concept_tower}
    linker = nlp.add_pipe("bioel_linker", config=torch_linker({
        "model": model, "top_k": 8, "abbreviations": False,
        "negatives": {"@misc": "spacy-bioel.HardNegatives.v1", "n": 2},
        "ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "use_knn": False},
        "biofeg": biofeg_block(tiny_bert_dir, **biofeg)}))
    linker.set_kb(toy_kb())
    train = gold_examples(nlp, TRAIN)
    nlp.initialize(lambda: train if examples else [])
    linker.steps.eval_frequency = 0  # no dev passes here (spaCy's default 200 would warn: W010)
    return nlp, linker, train


def spy_on_gan(monkeypatch) -> dict:
    """Record the conditions train_feature_gan is called with (key 'conditions')."""
    import spacy_bioel.research.biofeg as biofeg_module

    seen = {}
    real_train = biofeg_module.train_feature_gan

    def spy(features, descriptions, settings, **kwargs):
        seen["conditions"] = descriptions.cpu().numpy()
        return real_train(features, descriptions, settings, **kwargs)

    monkeypatch.setattr(biofeg_module, "train_feature_gan", spy)
    return seen


def test_finetuning_touches_only_the_concept_tower(tiny_bert_dir, tmp_path):
    torch.manual_seed(0)
    _, linker, _ = build(tiny_bert_dir, report=str(tmp_path / "biofeg" / "history.json"))
    module = linker.model.layers[0].shims[0]._model
    mention = {k: v.clone() for k, v in module.mention_encoder.state_dict().items()}
    concept = {k: v.clone() for k, v in module.concept_encoder.state_dict().items()}
    before = linker.index.vectors(slice(None)).copy()
    record = linker.biofeg.run(linker)
    assert all(torch.equal(mention[k], v) for k, v in module.mention_encoder.state_dict().items())
    assert any(not torch.equal(concept[k], v) for k, v in module.concept_encoder.state_dict().items())
    # only training mentions define "seen": D1-D4; D5-D8 get generated features
    assert record["seen_concepts"] == 4 and record["unseen_finetuned"] == 4
    assert 0.0 <= record["generated_top1_unseen_after"] <= 1.0
    assert 0.0 <= record["real_top1_seen"] <= 1.0
    assert np.isfinite(record["finetune_loss"]) and record["gan_epochs"] == 3
    assert not np.allclose(before, linker.index.vectors(slice(None)))  # the KB was re-encoded
    assert linker.biofeg.history == [record]
    import srsly

    saved = srsly.read_json(tmp_path / "biofeg" / "history.json")
    assert len(saved) == 1 and saved[0] == pytest.approx(record, rel=1e-6)


def test_the_gan_learns_from_training_mentions_only(tiny_bert_dir, monkeypatch):
    """The GAN's conditions are the descriptions of the training mentions' gold
    concepts, one row per mention: no other concept is treated as seen."""
    _, linker, _ = build(tiny_bert_dir, max_unseen=2)
    seen = spy_on_gan(monkeypatch)
    record = linker.biofeg.run(linker)
    gold = [cid for _, cid in linker.train_mentions]
    assert sorted(set(gold)) == ["D1", "D2", "D3", "D4"]
    assert np.allclose(seen["conditions"], linker.biofeg.describe(linker.kb, gold))
    assert record["unseen_concepts"] == 4 and record["unseen_finetuned"] == 2  # max_unseen


def test_runs_after_an_epoch_inside_training(tiny_bert_dir):
    torch.manual_seed(0)
    nlp, linker, train = build(tiny_bert_dir, iterations=1)
    optimizer = Adam(1e-4)
    for epoch in range(2):
        nlp.update(train, sgd=optimizer, losses={})  # one batch = one epoch
    assert len(linker.biofeg.history) == 1  # after epoch 1 only (iterations = 1)
    assert linker.epoch_seconds and len(linker.epoch_seconds) == 2


@pytest.mark.parametrize("eval_frequency,warns", [(5, True), (1, False), (0, False)])
def test_warns_when_dev_is_evaluated_less_than_once_an_epoch(tiny_bert_dir, eval_frequency, warns):
    """Dev every 5 steps with 1-step epochs may never see the linker after BioFEG's
    iterations (model-best can be the step-0 linker): W010 after epoch 1."""
    import warnings

    nlp, linker, train = build(tiny_bert_dir, iterations=1, gan_epochs=1)
    linker.steps.eval_frequency = eval_frequency
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp.update(train, sgd=Adam(1e-4), losses={})  # one batch = one epoch
    codes = [str(w.message)[:6] for w in caught if issubclass(w.category, BioELWarning)]
    assert ("[W010]" in codes) is warns
    assert len(linker.biofeg.history) == 1


def test_refuses_shared_towers(tiny_bert_dir):
    _, linker, _ = build(tiny_bert_dir, shared=True)
    with pytest.raises(BioELError) as err:
        linker.biofeg.run(linker)
    assert err.value.code == "E194" and "shared_towers = false" in str(err.value)


def test_a_frozen_concept_tower_is_unfrozen_for_finetuning_only(tiny_bert_dir):
    """The CPU configs freeze the concept tower for the retriever's epochs: BioFEG
    moves it anyway, and it is frozen again afterwards."""
    torch.manual_seed(0)
    _, linker, _ = build(tiny_bert_dir, train_concept_tower=False)
    module = linker.model.layers[0].shims[0]._model
    concept = {k: v.clone() for k, v in module.concept_encoder.state_dict().items()}
    linker.biofeg.run(linker)
    assert any(not torch.equal(concept[k], v) for k, v in module.concept_encoder.state_dict().items())
    assert not any(p.requires_grad for p in module.concept_encoder.parameters())


def test_refuses_without_training_mentions(tiny_bert_dir):
    _, linker, _ = build(tiny_bert_dir, examples=False)
    with pytest.raises(BioELError) as err:
        linker.biofeg.run(linker)
    assert err.value.code == "E195"


@pytest.mark.parametrize("config", ["linker_biofeg.cfg", "linker_biofeg_cpu.cfg"])
def test_spacy_train_linker_biofeg_config(tiny_bert_dir, tmp_path, config):
    """configs/linker_biofeg*.cfg train end to end; the saved pipeline links like any linker."""
    result = spacy_train_toy(
        REPO / "configs" / config, tmp_path, tiny_bert_dir,
        "--components.bioel_linker.model.mixed_precision", "false",
        "--components.bioel_linker.biofeg.description_encoder", str(tiny_bert_dir),
        "--components.bioel_linker.biofeg.gan_epochs", "2",
        "--components.bioel_linker.biofeg.hidden", "16")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    trained = spacy.load(tmp_path / "out" / "model-last")
    doc = trained.make_doc("colon cancer")
    doc.ents = [doc.char_span(0, 12, label="Disease")]
    assert trained(doc).ents[0].kb_id_ in {"D1", "D2", "D3"}


def test_each_description_is_encoded_once(tiny_bert_dir, monkeypatch):
    """y_d comes from a frozen encoder: one pass per concept, however many mentions it has."""
    import spacy_bioel.encoders.torch_biencoder as torch_biencoder

    _, linker, _ = build(tiny_bert_dir)
    encoded = []
    real_encode = torch_biencoder.encode_texts

    def spy(model, tokenizer, texts, **kwargs):
        encoded.extend(texts)
        return real_encode(model, tokenizer, texts, **kwargs)

    monkeypatch.setattr(torch_biencoder, "encode_texts", spy)
    gold = [cid for _, cid in linker.train_mentions]
    assert len(gold) > len(set(gold))  # D1-D3 have two mentions each
    linker.biofeg.describe(linker.kb, gold)
    linker.biofeg.describe(linker.kb, ["D1", "D7", "D7"])
    assert len(encoded) == len(set(gold)) + 1 == len(set(encoded))


def test_refuses_graphprompt_before_training_the_gan(tiny_bert_dir, monkeypatch):
    import spacy_bioel.research.biofeg as biofeg_module

    _, linker, _ = build(tiny_bert_dir)
    linker.loss = type("GraphLoss", (), {"uses_graph": True})()
    monkeypatch.setattr(biofeg_module, "train_feature_gan", None)  # never reached
    with pytest.raises(BioELError) as err:
        linker.biofeg.run(linker)
    assert err.value.code == "E192"

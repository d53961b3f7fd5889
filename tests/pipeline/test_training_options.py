"""Negative sampling schemes, FGSM and every loss inside the component."""
import hashlib
import json

import numpy as np
import pytest
import spacy
import torch
from thinc.api import Adam

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError, BioELWarning
from tests.utils import gold_examples, torch_linker

TRAIN = [
    ("Patients with colon cancer had a heart attack .", [(14, 26, "D1"), (33, 45, "D2")]),
    ("NIDDM and breast carcinoma were frequent .", [(0, 5, "D3"), (10, 26, "D4")]),
    ("One child had hepatoblastoma and asthma .", [(14, 28, "D5"), (33, 39, "D6")]),
    ("Colon cancer , heart attack and NIDDM .", [(0, 12, "D1"), (15, 27, "D2"), (32, 37, "D3")]),
]
LOSSES = {
    "info_nce": {"@misc": "spacy-bioel.InfoNCELoss.v1", "temperature": 0.1},
    "proxy": {"@misc": "spacy-bioel.ProxyLoss.v1", "alpha": 16.0, "margin": 0.05},
    "triplet": {"@misc": "spacy-bioel.TripletLoss.v1", "margin": 0.5},
    "triplet_downsampled": {"@misc": "spacy-bioel.TripletLoss.v1", "margin": 0.5,
                            "downsample": True},
    "prototype_srn": {"@misc": "spacy-bioel.PrototypeTripletLoss.v1", "margin": 0.5,
                      "radius": 0.3, "epsilon": 0.1},
}


def toy_kb():
    kb = KnowledgeBase(name="toy")
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"),
                      ("D3", "type 2 diabetes"), ("D4", "breast carcinoma"),
                      ("D5", "hepatoblastoma"), ("D6", "asthma"), ("D7", "gout"),
                      ("D8", "rickets")]:
        kb.add(Concept(cid, name))
    return kb


def sampler(kind, n=3, **params):
    """A negatives block: 'hard', 'random' or 'mixed'."""
    return {"@misc": f"spacy-bioel.{kind.capitalize()}Negatives.v1", "n": n, **params}


def fgsm(epsilon):
    return {"@misc": "spacy-bioel.FGSM.v1", "epsilon": epsilon, "chunk": 32}


def frozen_tower(tiny_bert_dir):
    """Model config: separate towers, the concept tower frozen."""
    return {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
            "max_length": 16, "shared_towers": False, "train_concept_tower": False}


def build(tiny_bert_dir, **overrides):
    nlp = spacy.blank("en")
    config = {"model": {"@architectures": "spacy-bioel.BiEncoder.v1",
                        "encoder": str(tiny_bert_dir), "max_length": 16},
              "negatives": sampler("hard"), "top_k": 8, "abbreviations": False,
              "ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "use_knn": False}}
    config.update(overrides)
    linker = nlp.add_pipe("bioel_linker", config=torch_linker(config))
    linker.set_kb(toy_kb())
    train = gold_examples(nlp, TRAIN)
    nlp.initialize(lambda: train)
    return nlp, linker, train


@pytest.mark.parametrize("sampling", ["hard", "random", "mixed"])
def test_negative_sampling(tiny_bert_dir, sampling):
    torch.manual_seed(0)
    np.random.seed(0)
    params = {"hard_fraction": 0.34} if sampling == "mixed" else {}
    nlp, linker, _ = build(tiny_bert_dir, negatives=sampler(sampling, **params))
    queries = linker.embed(["colon cancer", "asthma"], "mention")
    gold = [0, 5]
    positives, negatives, p = linker.negatives(queries, gold, linker.index, np.random.default_rng(0))
    owners = [int(linker.index.names.owners[i]) for i in negatives]
    assert p == 3 and [int(linker.index.names.owners[i]) for i in positives] == gold
    assert len(negatives) == 6
    for row, concept in zip([owners[:3], owners[3:]], gold):
        assert concept not in row and len(set(row)) == 3  # p distinct wrong concepts
    hard = [[c for c, _, _ in r if c != g][:3] for r, g in
            zip(linker.index.search(queries, k=4), gold)]
    if sampling == "hard":
        assert [owners[:3], owners[3:]] == hard
    elif sampling == "mixed":  # round(3 * 0.34) = 1 hard negative, then 2 random
        assert owners[0] == hard[0][0] and owners[3] == hard[1][0]


def test_random_negatives_vary_and_cover_the_kb(tiny_bert_dir):
    _, linker, _ = build(tiny_bert_dir, negatives=sampler("random"))
    queries = linker.embed(["colon cancer"], "mention")
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(30):
        _, negatives, _ = linker.negatives(queries, [0], linker.index, rng)
        seen.update(int(linker.index.names.owners[i]) for i in negatives)
    assert seen == set(range(1, 8))  # every wrong concept, never the gold one


def test_bad_sampling_option_errors(tiny_bert_dir):
    with pytest.raises(BioELError) as err:
        build(tiny_bert_dir, negatives=sampler("mixed", hard_fraction=1.5))
    assert err.value.code == "E175"  # hard_fraction outside [0, 1]


def encode_chunks(linker, chunks, inverse):
    from spacy_bioel.encoders.thinc_biencoder import torch_module

    module = torch_module(linker.model)
    with torch.no_grad():
        return torch.cat([module.encode("concept", None, mask, z) for z, mask in chunks])[inverse]


@pytest.mark.parametrize("chunk", [2, 64])
def test_fgsm_moves_names_adversarially(tiny_bert_dir, chunk):
    """eqs. 6-7: the perturbed positive is less similar to its mention, the
    perturbed negatives more similar (first order, dropout off); length-sorted
    chunks come back in the input order."""
    from thinc.api import xp2torch

    from spacy_bioel.encoders.thinc_biencoder import torch_module
    from spacy_bioel.research.fgsm import FGSM

    torch.manual_seed(0)
    _, linker, _ = build(tiny_bert_dir)
    texts = ["colon cancer", "asthma"]
    mentions = xp2torch(linker.model.ops.asarray(linker.embed(texts, "mention")))
    names = ["colorectal carcinoma", "asthma", "gout", "rickets", "gout", "breast carcinoma"]
    torch_module(linker.model).eval()  # thinc's predict (embed) leaves it in train mode
    adversarial = encode_chunks(linker, *FGSM(1e-4, chunk=chunk).perturb(linker.model, mentions, names, 2))
    clean = encode_chunks(linker, *FGSM(0.0, chunk=chunk).perturb(linker.model, mentions, names, 2))
    assert torch.allclose(clean, torch.tensor(linker.embed(names, "concept")), atol=1e-5)
    owner = torch.tensor([0, 1, 0, 0, 1, 1])
    before = (mentions[owner] * clean).sum(-1)
    after = (mentions[owner] * adversarial).sum(-1)
    assert torch.all(after[:2] < before[:2]) and torch.all(after[2:] > before[2:])


def test_fgsm_on_a_frozen_concept_tower_runs_it_in_eval_mode(tiny_bert_dir):
    """The cached clean names are eval-mode embeddings; so are the FGSM passes
    of a frozen tower (no dropout noise on top of the perturbation), which keep
    no graph, and the tower's train mode is restored."""
    from thinc.api import xp2torch

    from spacy_bioel.encoders.thinc_biencoder import torch_module
    from spacy_bioel.research.fgsm import FGSM

    torch.manual_seed(0)
    _, linker, _ = build(tiny_bert_dir, model=frozen_tower(tiny_bert_dir))
    names = ["colorectal carcinoma", "asthma", "gout", "rickets", "gout", "breast carcinoma"]
    mentions = xp2torch(linker.model.ops.asarray(linker.embed(["colon cancer", "asthma"],
                                                               "mention")))
    expected = torch.tensor(linker.embed(names, "concept"))
    module = torch_module(linker.model)
    module.train()  # as inside update
    clean = FGSM(0.0, chunk=2).encode_frozen(linker.model, mentions, names, 2)
    assert module.tower("concept").training
    assert not clean.requires_grad
    assert torch.allclose(clean, expected, atol=1e-5)


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("sampling,epsilon", [("hard", 0.0), ("mixed", 0.0), ("random", 1e-2)])
def test_every_loss_trains(tiny_bert_dir, loss, sampling, epsilon):
    torch.manual_seed(0)
    np.random.seed(0)
    nlp, linker, train = build(tiny_bert_dir, loss=LOSSES[loss], negatives=sampler(sampling),
                               fgsm=fgsm(epsilon) if epsilon else None)
    optimizer = Adam(1e-3)
    history = []
    for _ in range(25):
        losses = {}
        nlp.update(train, sgd=optimizer, losses=losses)
        history.append(losses["bioel_linker"])
    assert all(np.isfinite(history))
    assert np.mean(history[-5:]) < np.mean(history[:5])
    linker.refresh()
    scores = nlp.evaluate(train)
    assert scores["bioel_acc@5"] >= 0.8


def test_embedding_cache_for_a_frozen_or_untrained_concept_tower(tiny_bert_dir, tmp_path):
    frozen = frozen_tower(tiny_bert_dir)
    cache = {"@misc": "spacy-bioel.NameIndex.v1", "embedding_cache": str(tmp_path)}
    _, first, _ = build(tiny_bert_dir, model=frozen, index=cache)
    files = list(tmp_path.glob("names-*.npy"))
    assert len(files) == 1 and not list(tmp_path.glob("*.tmp.npy"))
    np.save(files[0], np.load(files[0]) * 0 + 0.5)  # mark it: a hit must read this file
    record_path = files[0].with_name(files[0].name + ".json")
    record = json.loads(record_path.read_text())
    with pytest.warns(BioELWarning, match="W011"):  # changed behind its record: encoded again
        _, again, _ = build(tiny_bert_dir, model=frozen, index=cache)
    assert not np.all(again.index.embeddings == 0.5)
    np.save(files[0], np.load(files[0]) * 0 + 0.5)
    record["sha256"] = hashlib.sha256(files[0].read_bytes()).hexdigest()  # as its writer would
    record_path.write_text(json.dumps(record))
    _, second, _ = build(tiny_bert_dir, model=frozen, index=cache)
    assert np.all(second.index.embeddings == 0.5)
    # other encoder settings, another key
    build(tiny_bert_dir, model=dict(frozen, max_length=12), index=cache)
    assert len(list(tmp_path.glob("names-*.npy"))) == 2
    # a shared (trained) tower before its first step has the base weights: the same entry
    _, shared, _ = build(tiny_bert_dir, index=cache)
    assert len(list(tmp_path.glob("names-*.npy"))) == 2
    assert np.all(shared.index.embeddings == 0.5)
    shared.steps.steps = 1  # once it trains, its names are encoded afresh and not cached
    shared.refresh(force=True)
    assert len(list(tmp_path.glob("names-*.npy"))) == 2
    assert not np.all(shared.index.embeddings == 0.5)


@pytest.mark.parametrize("shared", [True, False])
def test_frozen_layers_train_only_the_top(tiny_bert_dir, shared):
    from spacy_bioel.encoders.thinc_biencoder import torch_module

    model = {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
             "max_length": 16, "shared_towers": shared, "frozen_layers": 1}
    nlp, linker, train = build(tiny_bert_dir, model=model)
    module = torch_module(linker.model)
    before = {k: v.clone() for k, v in module.state_dict().items()}
    optimizer = Adam(1e-2)
    for _ in range(3):
        nlp.update(train, sgd=optimizer, losses={})
    changed = {k for k, v in module.state_dict().items() if not torch.equal(v, before[k])}
    assert changed, "nothing trained"
    for tower in ("mention_encoder", "concept_encoder") if not shared else ("mention_encoder",):
        assert not any(k.startswith(f"{tower}.embeddings.") or
                       k.startswith(f"{tower}.encoder.layer.0.") for k in changed)
        assert any(k.startswith(f"{tower}.encoder.layer.1.") for k in changed)


def test_frozen_layers_beyond_the_encoder_depth_is_an_error(tiny_bert_dir):
    model = {"@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
             "max_length": 16, "frozen_layers": 3}  # the tiny model has 2 layers
    with pytest.raises(BioELError, match="E167"):
        build(tiny_bert_dir, model=model)

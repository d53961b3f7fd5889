"""Every registered name resolves through spaCy's registry (entry points)."""
from pathlib import Path

import pytest
import spacy
from spacy.util import registry
from thinc.api import Config

from spacy_bioel import Concept, KnowledgeBase

MISC_NAMES = [
    "spacy-bioel.KBFromFile.v1", "spacy-bioel.MedicKB.v1", "spacy-bioel.CTDDiseasesKB.v1",
    "spacy-bioel.OBOKB.v1", "spacy-bioel.ScispacyJSONLKB.v1", "spacy-bioel.UMLSKB.v1",
    "spacy-bioel.AskAPatientKB.v1", "spacy-bioel.InfoNCELoss.v1", "spacy-bioel.ProxyLoss.v1",
    "spacy-bioel.TripletLoss.v1", "spacy-bioel.PrototypeTripletLoss.v1",
    "spacy-bioel.NameIndex.v1", "spacy-bioel.DenseCandidates.v1",
    "spacy-bioel.SparseCandidates.v1", "spacy-bioel.ExactCandidates.v1",
    "spacy-bioel.HybridCandidates.v1", "spacy-bioel.TypeFilter.v1", "spacy-bioel.KNNRanker.v1",
    "spacy-bioel.ThresholdNIL.v1", "spacy-bioel.ThresholdNIL.v2", "spacy-bioel.CalibratedNIL.v1",
    "spacy-bioel.HardNegatives.v1", "spacy-bioel.RandomNegatives.v1",
    "spacy-bioel.MixedNegatives.v1", "spacy-bioel.FGSM.v1", "spacy-bioel.NameIndex.v2",
    "spacy-bioel.ExactShortcut.v1", "spacy-bioel.ExactShortcut.v2", "spacy-bioel.TorchRuntime.v1",
    "spacy-bioel.OnnxRuntime.v1",
]
OTHER_NAMES = [("architectures", "spacy-bioel.BiEncoder.v1"),
               ("architectures", "spacy-bioel.ContextualBiEncoder.v1"),
               ("architectures", "spacy-bioel.TransformerModel.v1"),
               ("architectures", "spacy-bioel.KBNameEmbed.v1"),
               ("readers", "spacy-bioel.GoldEntsCorpus.v1"),
               ("augmenters", "spacy-bioel.one_label.v1"),
               ("scorers", "spacy-bioel.linker_scorer.v1"),
               ("callbacks", "spacy-bioel.RefreshLinkers.v1"),
               ("factories", "bioel_linker")]


@pytest.mark.parametrize("old,new", [("spacy-bioel.NameIndex.v1", "spacy-bioel.NameIndex.v2"),
                                     ("spacy-bioel.ThresholdNIL.v2", "spacy-bioel.CalibratedNIL.v1")])
def test_an_old_name_is_the_same_stage(old, new):
    """Twins folded (issue 75): the name saved pipelines carry resolves to the one function."""
    assert registry.misc.get(old) is registry.misc.get(new)


def test_exact_shortcut_v2_is_v1_that_remembers():
    v1 = registry.resolve({"s": {"@misc": "spacy-bioel.ExactShortcut.v1"}})["s"]
    v2 = registry.resolve({"s": {"@misc": "spacy-bioel.ExactShortcut.v2"}})["s"]
    assert type(v1) is type(v2) and (v1.min_training_count, v2.min_training_count) == (0, 2)


@pytest.mark.parametrize("registry_name,name", OTHER_NAMES)
def test_other_entry_points_registered(registry_name, name):
    if registry_name == "factories":
        from spacy.language import Language
        spacy.blank("en")  # loads spacy_factories entry points
        assert Language.has_factory(name)
    else:
        assert getattr(registry, registry_name).get(name) is not None


def test_factory_without_import():
    """A fresh interpreter finds the factory through entry points alone."""
    import subprocess
    import sys

    code = ("import spacy; nlp = spacy.blank('en'); "
            "pipe = nlp.add_pipe('bioel_linker'); print(type(pipe).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "BioELLinker"


@pytest.mark.parametrize("name", MISC_NAMES)
def test_entry_points_registered(name):
    assert registry.misc.get(name) is not None


def test_entry_points_declared_in_metadata():
    from importlib.metadata import entry_points

    declared = {ep.name for ep in entry_points(group="spacy_misc")}
    assert set(MISC_NAMES) <= declared
    for registry_name, name in OTHER_NAMES:
        group = "spacy_factories" if registry_name == "factories" else f"spacy_{registry_name}"
        assert name in {ep.name for ep in entry_points(group=group)}


def test_resolve_kb_from_config(tmp_path: Path):
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("CRC",)))
    kb.to_disk(tmp_path / "kb.bioelkb")
    config = Config().from_str(f"""
[kb]
@misc = "spacy-bioel.KBFromFile.v1"
path = "{tmp_path / 'kb.bioelkb'}"
""")
    resolved = registry.resolve(config)
    loaded = resolved["kb"]()
    assert loaded.concept_ids == ["D1"]


def test_medic_and_obo_loaders_from_config(tmp_path: Path):
    (tmp_path / "medic.txt").write_text("D1||Colorectal Carcinoma|CRC\n")
    (tmp_path / "o.obo").write_text("format-version: 1.2\n\n[Term]\nid: HP:1\nname: a\n\n"
                                    "[Term]\nid: GO:1\nname: b\n")
    config = Config().from_str(f"""
[medic]
@misc = "spacy-bioel.MedicKB.v1"
path = "{tmp_path / 'medic.txt'}"

[obo]
@misc = "spacy-bioel.OBOKB.v1"
path = "{tmp_path / 'o.obo'}"
prefixes = ["HP:"]
""")
    resolved = registry.resolve(config)
    assert resolved["medic"]().concept_ids == ["D1"]
    assert resolved["obo"]().concept_ids == ["HP:1"]


def test_factory_declares_what_it_needs():
    from spacy.language import Language

    spacy.blank("en")
    meta = Language.get_factory_meta("bioel_linker")
    assert meta.requires == ["doc.ents"] and meta.assigns == ["token.ent_kb_id"]


CONFIGS = Path(__file__).resolve().parents[1] / "configs"
LINKER_CONFIGS = sorted(p for p in CONFIGS.glob("*.cfg")  # those that build their own linker
                        if p.name != "reranker.cfg" and not p.name.startswith("ner_"))


@pytest.mark.parametrize("path", LINKER_CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_resolves_its_stages(path):
    """configs/*.cfg build a linker (stages resolved) without loading an encoder."""
    from spacy.util import load_model_from_config

    if path.name == "linker_trf.cfg":  # its transformer component is spacy-transformers'
        pytest.importorskip("spacy_transformers", reason="the trf extra is not installed here "
                            "(make test-trf checks linker_trf.cfg by training it)")
    config = Config().from_disk(path, overrides={"paths.kb": "kb.bioelkb"})  # not read here
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    linker = nlp.get_pipe("bioel_linker")
    stages = ("index", "candidates", "ranker", "nil", "negatives")
    assert all(getattr(linker, stage, None) is not None for stage in stages)
    assert nlp.config["training"]["before_to_disk"]["@callbacks"] == "spacy-bioel.RefreshLinkers.v1"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("ner_linker_*.cfg")), ids=lambda p: p.name)
def test_ner_configs_train_an_ner_before_a_frozen_sourced_linker(path):
    """configs/ner_linker_*.cfg (the sourced linker swapped for a fresh one) build
    the NER's features, the NER and the linker, and train the NER alone."""
    from spacy.util import load_model_from_config

    config = Config().from_disk(path)
    config["components"]["bioel_linker"] = {"factory": "bioel_linker"}
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    # the NER's mentions made consistent in each document before the linker reads them
    assert nlp.pipe_names[1:] == ["ner", "bioel_mention_consistency", "bioel_linker"]
    assert nlp.config["training"]["frozen_components"] == ["bioel_linker"]
    assert nlp.config["corpora"]["train"]["@readers"] == "spacy.Corpus.v1"  # raw text in


def test_the_cnn_ner_config_trains_an_ner_alone_on_the_default_kbs_names():
    """configs/ner_cnn.cfg (the NER shipped until issue 73, the in-context NER's
    baseline): spaCy's CNN tok2vec with the embedded DOID's KB-name features and a
    one-label ner on raw text, a fixed number of steps."""
    from spacy.util import load_model_from_config

    config = Config().from_disk(CONFIGS / "ner_cnn.cfg")
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == ["tok2vec", "ner"]
    assert config["paths"]["kb"] == "embedded:doid"
    embed = config["components"]["tok2vec"]["model"]["embed"]
    assert embed["@architectures"] == "spacy-bioel.KBNameEmbed.v1"
    assert embed["embed"]["@architectures"] == "spacy.MultiHashEmbed.v2"
    assert config["corpora"]["train"]["augmenter"]["label"] == "Disease"
    assert config["training"]["patience"] == 0 and config["training"]["max_steps"] > 0


def test_the_shipped_ner_config_fine_tunes_three_encoder_layers_in_context(tiny_bert_dir):
    """configs/ner_default.cfg (the shipped NER's, issue 73): the encoder's first 3
    layers fine-tuned in context beside the embedded DOID's KB-name features, a
    one-label ner on raw text, a fixed number of steps (no step chosen on dev: dev is
    training data there)."""
    from spacy.util import load_model_from_config

    shipped = Config().from_disk(CONFIGS / "ner_default.cfg")
    assert shipped["paths"]["kb"] == "embedded:doid"
    assert shipped["paths"]["encoder"] == "embedded:all-MiniLM-L6-v2"
    embed = shipped["components"]["tok2vec"]["model"]["embed"]
    assert embed["@architectures"] == "spacy-bioel.KBNameEmbed.v1"
    assert embed["embed"]["@architectures"] == "spacy-bioel.TransformerTokens.v1"
    assert embed["embed"]["frozen"] is False and embed["embed"]["layers"] == 3
    assert shipped["corpora"]["train"]["augmenter"]["label"] == "Disease"
    assert shipped["training"]["patience"] == 0 and shipped["training"]["max_steps"] == 4000
    # it builds (the tiny encoder has 2 layers)
    config = Config().from_disk(CONFIGS / "ner_default.cfg", overrides={
        "paths.encoder": str(tiny_bert_dir), "components.tok2vec.model.embed.embed.layers": 2})
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == ["tok2vec", "ner"]


def test_the_in_context_ner_config_builds_on_a_tiny_encoder(tiny_bert_dir):
    """configs/ner_minilm.cfg (issue 73): the encoder's token vectors in context, frozen,
    beside the KB-name features, under the one-label ner."""
    from spacy.util import load_model_from_config

    config = Config().from_disk(CONFIGS / "ner_minilm.cfg",
                                overrides={"paths.encoder": str(tiny_bert_dir)})
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == ["tok2vec", "ner"]
    embed = config["components"]["tok2vec"]["model"]["embed"]
    assert embed["@architectures"] == "spacy-bioel.KBNameEmbed.v1"
    assert embed["embed"]["@architectures"] == "spacy-bioel.TransformerTokens.v1"
    assert embed["embed"]["frozen"] is True


def test_the_form_and_context_ner_config_trains_on_a_tiny_encoder(tiny_bert_dir):
    """configs/ner_minilm_cnn.cfg (issue 73): the hash embeddings beside the encoder's
    vectors in context (spacy-bioel.BesideEmbed.v1), with the KB-name features; it
    initialises, updates and predicts."""
    import spacy
    from spacy.training import Example
    from spacy.util import load_model_from_config

    from spacy_bioel.kb import Concept, KnowledgeBase

    config = Config().from_disk(CONFIGS / "ner_minilm_cnn.cfg",
                                overrides={"paths.encoder": str(tiny_bert_dir)})
    embed = config["components"]["tok2vec"]["model"]["embed"]["embed"]
    assert embed["@architectures"] == "spacy-bioel.BesideEmbed.v1"
    assert embed["embed"]["@architectures"] == "spacy.MultiHashEmbed.v2"
    assert embed["beside"]["@architectures"] == "spacy-bioel.TransformerTokens.v1"
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colon cancer"))
    nlp.get_pipe("tok2vec").model.get_ref("embed").layers[0].layers[1].attrs["names"] = \
        sorted(name for _, name in kb.names())
    doc = spacy.blank("en")("Colon cancer runs in families .")
    example = Example.from_dict(doc, {"entities": [(0, 12, "Disease")]})
    optimizer = nlp.initialize(lambda: [example])
    losses = {}
    nlp.update([example], sgd=optimizer, losses=losses)
    assert losses["ner"] > 0
    assert nlp("Colon cancer again .").text == "Colon cancer again ."


def test_reranker_config_trains_behind_a_frozen_annotating_linker():
    """configs/reranker.cfg (its sourced linker swapped for a fresh one) builds the
    reranker without loading an encoder, and the linker annotates each batch."""
    from spacy.util import load_model_from_config

    path = Path(__file__).resolve().parents[1] / "configs" / "reranker.cfg"
    config = Config().from_disk(path)
    config["components"]["bioel_linker"] = {"factory": "bioel_linker"}
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == ["bioel_linker", "bioel_reranker"]
    assert type(nlp.get_pipe("bioel_reranker")).__name__ == "BioELReranker"
    assert nlp.config["training"]["frozen_components"] == ["bioel_linker"]
    assert nlp.config["training"]["annotating_components"] == ["bioel_linker"]
    # the measured recipe: seen-only training candidates (README, BC5CDR 3 seeds)
    assert nlp.get_pipe("bioel_reranker").cfg["train_candidates"] == "seen"


def test_losses_are_checked_at_once_and_built_on_first_use():
    """A pipeline that only predicts never builds (or imports) a torch loss."""
    from spacy_bioel.errors import BioELError
    from spacy_bioel.losses.registry import DeferredLoss

    loss = registry.resolve({"loss": {"@misc": "spacy-bioel.InfoNCELoss.v1",
                                      "temperature": 0.1}})["loss"]
    assert isinstance(loss, DeferredLoss) and loss._module is None
    assert loss.temperature == 0.1 and type(loss.module).__name__ == "InfoNCELoss"
    with pytest.raises(BioELError, match="E175"):
        registry.resolve({"loss": {"@misc": "spacy-bioel.ProxyLoss.v1", "alpha": 0}})


def test_thread_limits_reach_every_library():
    import torch
    from threadpoolctl import threadpool_info

    from spacy_bioel.encoders.threads import limit_threads

    before = torch.get_num_threads()
    try:
        for threads in (2, 1):  # up, then down: whatever the count the run started with
            limit_threads(threads)
            assert torch.get_num_threads() == threads
            assert all(pool["num_threads"] == threads for pool in threadpool_info()
                       if pool["user_api"] == "blas")
    finally:
        limit_threads(before)

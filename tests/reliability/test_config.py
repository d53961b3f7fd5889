"""Settings are checked where they enter (E175): the config, set_option / --set,
ablation overrides; empty and name-less KBs are refused at initialize."""
from pathlib import Path

import pytest
import spacy

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError, BioELWarning
from tests.utils import tiny_linker_config


def tiny(tiny_bert_dir, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, **config))
    return nlp


@pytest.mark.parametrize("config", [
    {"ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "beta1": 0}},
    {"ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "knn_k": 0}},
    {"ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "knn_lambda": 1.5}},
    {"ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "use_knn": "flase"}},
    {"nil": {"@misc": "spacy-bioel.ThresholdNIL.v2", "threshold": "high"}},
    {"nil": {"@misc": "spacy-bioel.ThresholdNIL.v2", "calibration": [1.0]}},
    {"nil": {"@misc": "spacy-bioel.ThresholdNIL.v1", "threshold": -0.5}},
    {"encode_batch_size": 0}, {"top_k": 0}, {"context_window": -1},
    {"loss": {"@misc": "spacy-bioel.InfoNCELoss.v1", "temperature": 0}},
    {"negatives": {"@misc": "spacy-bioel.MixedNegatives.v1", "hard_fraction": 2}},
    {"candidates": {"@misc": "spacy-bioel.HybridCandidates.v1", "sparse_weight": "a lot"}},
])
def test_bad_setting_is_refused_at_construction(tiny_bert_dir, config):
    """Ranges are ours (E175); a value of the wrong type may already be stopped by
    spaCy's own config validation, which names the block and the key too."""
    from confection import ConfigValidationError

    with pytest.raises((BioELError, ConfigValidationError)) as err:
        tiny(tiny_bert_dir, **config)
    if isinstance(err.value, BioELError):
        assert err.value.code == "E175"
    else:
        assert list(config)[0] in str(err.value)


@pytest.mark.parametrize("key,value,code", [
    ("ranker.use_knn", "flase", "E175"), ("ranker.knn_k", 0, "E175"),
    ("ranker.beta1", 0, "E175"), ("nil.threshold", "0.4x", "E175"),
    ("ranker.knn_kk", 3, "E172"), ("rankr.knn_k", 3, "E172"), ("top_k", "many", "E175")])
def test_set_option_checks_keys_and_values(tiny_bert_dir, key, value, code):
    linker = tiny(tiny_bert_dir).get_pipe("bioel_linker")
    with pytest.raises(BioELError) as err:
        linker.set_option(key, value)
    assert err.value.code == code


def test_set_option_parses_strings(tiny_bert_dir):
    linker = tiny(tiny_bert_dir).get_pipe("bioel_linker")
    linker.set_option("ranker.use_knn", "false")
    linker.set_option("ranker.knn_k", "8")
    assert linker.ranker.use_knn is False and linker.ranker.knn_k == 8


def test_evaluate_set_requires_key_value():
    from spacy_bioel.cli.evaluate import parse_settings

    assert parse_settings(["ranker.use_knn=false"]) == {"ranker.use_knn": False}
    with pytest.raises(BioELError, match="E175"):
        parse_settings(["ranker.use_knn"])


def test_an_empty_kb_is_refused_at_initialize(tiny_bert_dir):
    nlp = tiny(tiny_bert_dir)
    with pytest.raises(BioELError, match="E105"):
        nlp.get_pipe("bioel_linker").set_kb(KnowledgeBase(name="empty"))


def test_concepts_without_an_indexable_name_are_counted(tiny_bert_dir):
    kb = KnowledgeBase(name="punct")
    kb.add(Concept("P1", "???"))
    kb.add(Concept("D1", "asthma"))
    linker = tiny(tiny_bert_dir).get_pipe("bioel_linker")
    with pytest.warns(BioELWarning, match=r"W007.*1 concept.*P1"):
        linker.set_kb(kb)
    assert linker.index.names.n_unindexed == 1
    kb_only_punct = KnowledgeBase(name="only punct")
    kb_only_punct.add(Concept("P1", "!!"))
    with pytest.warns(BioELWarning, match="W007"), pytest.raises(BioELError, match="E105"):
        linker.set_kb(kb_only_punct)


def test_ablation_overrides_must_be_settings_of_the_config(tmp_path):
    from bench.cli.ablate import load_spec

    def spec(overrides):
        path = tmp_path / "spec.yml"
        import srsly
        config = Path(__file__).resolve().parents[2] / "configs" / "linker_cpu.cfg"
        srsly.write_yaml(path, {"seeds": [0], "variants": {"v": {
            "config": str(config), "overrides": overrides}}})
        return path

    assert load_spec(spec({"training.max_epochs": 2}))
    assert load_spec(spec({"components.bioel_linker.model.frozen_layers": 3}))
    for bad in ({"code": "evil.py"}, {"nosuchsection.x": 1}, {"training": 1},
                {"training.max_epochs": [1, 2]}, {"training.max epochs; rm": 1}):
        with pytest.raises(BioELError, match="E166"):
            load_spec(spec(bad))

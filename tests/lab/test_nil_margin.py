"""`python -m bench nil-margin`: a tuned pipeline's NIL threshold fitted on dev by
2% of dev's own right links and by a 95% upper bound on the rate; the bound
answers NIL for fewer right links, on dev by construction and on a fresh sample."""
import json

import numpy as np
import pytest

from ..utils import save_linker_pipeline, write_toy_linking_data


def draw(rng, n=1000):
    """n mentions without gold NIL: 60% with a right top candidate, whose supports
    spread over [0.3, 1] (so more than 2% of them fall below the p = 0.5 floor),
    the wrong ones over [0.2, 0.6]."""
    right = np.arange(n) < 0.6 * n
    support = np.where(right, rng.uniform(0.3, 1.0, n), rng.uniform(0.2, 0.6, n))
    return {"support": support, "has_candidates": np.ones(n, dtype=bool), "right": right,
            "gold_nil": np.zeros(n, dtype=bool), "encoded": np.ones(n, dtype=bool)}


def test_the_bounded_rule_throws_fewer_right_links_on_dev_and_test(tiny_bert_dir, tmp_path, monkeypatch):
    import bench.nil_margin as nil_margin
    from spacy_bioel.nil.threshold import allowed_right_as_nil

    saved = save_linker_pipeline(tmp_path / "linker", tiny_bert_dir, [("D1", "asthma"), ("D2", "gout")])
    rng = np.random.default_rng(0)
    drawn = {"dev.spacy": draw(rng), "test.spacy": draw(rng)}
    monkeypatch.setattr(nil_margin, "_mentions", lambda nlp, linker, path: drawn[path.name])
    result = nil_margin.probe({"toy": saved}, {"toy": tmp_path / "dev.spacy"}, {"toy": tmp_path / "test.spacy"})
    rules = result["runs"]["toy"]["rules"]
    point, bounded = rules["2% of dev"], rules["95% bound"]
    assert point["dev"]["right_as_nil_count"] == allowed_right_as_nil(1000, confidence=None) == 20
    assert bounded["dev"]["right_as_nil_count"] == allowed_right_as_nil(1000) == 12
    assert bounded["threshold"] > point["threshold"]
    assert bounded["test"]["right_as_nil_count"] < point["test"]["right_as_nil_count"]
    assert bounded["test"]["kb_id_acc"] > point["test"]["kb_id_acc"]
    table = nil_margin.markdown(result)
    assert "| toy | 95% bound |" in table and "(12) |" in table


def test_the_command_refuses_a_malformed_run_and_an_uncalibrated_stage(tiny_bert_dir, tmp_path):
    from typer.testing import CliRunner

    from bench.cli import app

    runner = CliRunner()
    out = runner.invoke(app, ["nil-margin", "toy=only-a-pipeline"])
    assert out.exit_code != 0 and "LABEL=PIPELINE=DEV.spacy=TEST.spacy" in out.output
    write_toy_linking_data(tmp_path, nil=False)
    saved = save_linker_pipeline(tmp_path / "linker", tiny_bert_dir, [("D1", "asthma")])
    import spacy

    from spacy_bioel.pipeline.loading import find_linker

    nlp = spacy.load(saved)
    find_linker(nlp).nil.forget_calibration()  # what training leaves until `tune`
    nlp.to_disk(tmp_path / "trained")
    data = tmp_path / "data.spacy"
    out = runner.invoke(app, ["nil-margin", f"toy={tmp_path / 'trained'}={data}={data}",
                              "--output", str(tmp_path / "m.json")])
    assert out.exit_code != 0 and "run `python -m spacy_bioel tune` on it first" in out.output
    assert not (tmp_path / "m.json").exists()

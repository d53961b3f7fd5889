"""BioFEG's dev measure (seen concepts held out of the GAN), the unit-sphere
generator and the `biofeg` command on a saved pipeline."""
import numpy as np
import pytest
import srsly
import torch

from spacy_bioel.errors import BioELError
from spacy_bioel.research.feature_gan import FeatureGenerator
from tests.training.test_biofeg import build, spy_on_gan


def test_normalized_generator_outputs_unit_vectors():
    gen = FeatureGenerator(description_dim=3, feature_dim=5, hidden=8, normalize=True)
    out = gen(torch.randn(6, 3))
    assert torch.allclose(out.norm(dim=1), torch.ones(6), atol=1e-5)
    assert not torch.allclose(FeatureGenerator(3, 5, hidden=8)(torch.randn(6, 3)).norm(dim=1),
                              torch.ones(6), atol=1e-3)


def test_heldout_seen_concepts_are_kept_out_of_the_gan(tiny_bert_dir, monkeypatch):
    """With heldout_seen = 0.5, 2 of the 4 seen concepts are held out: the GAN's
    conditions are the mentions of the other 2, and their realism is measured."""
    _, linker, _ = build(tiny_bert_dir, heldout_seen=0.5)
    seen = spy_on_gan(monkeypatch)
    _, record = linker.biofeg.fit_gan(linker)
    assert record["heldout_concepts"] == 2
    gold = [cid for _, cid in linker.train_mentions]
    described = linker.biofeg.describe(linker.kb, gold)
    used = [i for i, row in enumerate(described) if any(np.allclose(row, c)
                                                       for c in seen["conditions"])]
    assert len({gold[i] for i in used}) == 2 and len(seen["conditions"]) == len(used)
    for key in ("generated_top1_heldout", "generated_top10_heldout", "real_top1_heldout"):
        assert 0.0 <= record[key] <= 1.0
    # the same concepts are held out each time (settings are compared on one dev set)
    assert linker.biofeg.fit_gan(linker)[1]["heldout_concepts"] == 2


def _saved(tiny_bert_dir, tmp_path):
    torch.manual_seed(0)
    nlp, _, _ = build(tiny_bert_dir)
    nlp.to_disk(tmp_path / "base")
    return tmp_path / "base"


def test_biofeg_command_compares_settings_then_finetunes(tiny_bert_dir, tmp_path):
    from typer.testing import CliRunner

    from bench.cli import app
    from spacy_bioel.pipeline.loading import find_linker, load_pipeline

    base = _saved(tiny_bert_dir, tmp_path)
    report = tmp_path / "biofeg.json"
    result = CliRunner().invoke(app, [
        "biofeg", str(base), "--output", str(tmp_path / "new" / "out"), "--report", str(report),
        "--try", "gan_learning_rate=0.001;gan_learning_rate=0.01,gan_epochs=2",
        "--heldout", "0.5", "--set", f"description_encoder={tiny_bert_dir}"])
    assert result.exit_code == 0, result.output
    data = srsly.read_json(report)
    assert [t["settings"] for t in data["tries"]] == [
        {"gan_learning_rate": 0.001}, {"gan_learning_rate": 0.01, "gan_epochs": 2}]
    assert all(t["heldout_concepts"] == 2 for t in data["tries"])
    assert data["chosen"] in [t["settings"] for t in data["tries"]]
    assert data["history"][0]["unseen_finetuned"] == 4
    md = report.with_suffix(".md").read_text().splitlines()
    assert md[0].startswith("| try | gan_wasserstein_last") and len(md[2:4]) == 2
    assert all(line.startswith("| gan_learning_rate=") for line in md[2:4])
    assert md[5].startswith("chosen on 2 held-out")
    header, rule, row = md[7:10]  # the iteration table: one cell per column
    assert header.count("|") == rule.count("|") == row.count("|")
    before = find_linker(load_pipeline(base), None)
    after = find_linker(load_pipeline(tmp_path / "new" / "out"), None)
    assert np.allclose(before.embed(["colon cancer"], "mention"),
                       after.embed(["colon cancer"], "mention"))  # the mention tower: untouched
    assert not np.allclose(before.index.vectors(slice(None)), after.index.vectors(slice(None)))


def test_biofeg_command_names_a_bad_setting(tiny_bert_dir, tmp_path):
    from bench.cli.biofeg import parse_settings

    assert parse_settings(["gan_epochs=3,normalize_features=false"], "--set") == {
        "gan_epochs": 3, "normalize_features": False}
    with pytest.raises(BioELError) as err:
        parse_settings(["gan_lr=0.1"], "--try")
    assert err.value.code == "E196" and "gan_learning_rate" in str(err.value)


def test_biofeg_command_uses_a_single_setting_as_given(tiny_bert_dir, tmp_path):
    from typer.testing import CliRunner

    from bench.cli import app

    base = _saved(tiny_bert_dir, tmp_path)
    report = tmp_path / "gan.json"
    result = CliRunner().invoke(app, [
        "biofeg", str(base), "--no-finetune", "--report", str(report),
        "--try", "gan_learning_rate=0.01,gan_epochs=2"])
    assert result.exit_code == 0, result.output
    data = srsly.read_json(report)
    assert data["tries"] == [] and "chosen" not in data
    assert data["settings"]["gan_learning_rate"] == 0.01
    assert data["history"][0]["gan_epochs"] == 2 and data["history"][0]["unseen_finetuned"] == 0


def test_residual_generator_starts_from_the_description():
    """y~_m = y_d + MLP(y_d, z): with the MLP's last layer at zero, G returns y_d."""
    gen = FeatureGenerator(description_dim=4, feature_dim=4, hidden=8, residual=True)
    torch.nn.init.zeros_(gen.net[-1].weight)
    torch.nn.init.zeros_(gen.net[-1].bias)
    descriptions = torch.randn(3, 4)
    assert torch.allclose(gen(descriptions), descriptions)
    with pytest.raises(ValueError):
        FeatureGenerator(description_dim=3, feature_dim=4, residual=True)


def test_residual_generator_refuses_other_widths(tiny_bert_dir):
    _, linker, _ = build(tiny_bert_dir, residual_generator=True)
    linker.biofeg.describe(linker.kb, ["D1"])  # the tiny encoder: as wide as the linker
    linker.biofeg._descriptions = {k: np.zeros(3, dtype=np.float32)
                                   for k in linker.kb.concept_ids}
    with pytest.raises(BioELError) as err:
        linker.biofeg.fit_gan(linker)
    assert err.value.code == "E197"


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_finetuning_batches_mix_in_real_pairs(tiny_bert_dir, monkeypatch, share):
    """With finetune_real_share = 0.5 each fine-tuning batch of 4 holds 2
    generated features of unseen concepts (D5-D8) and 2 real training-mention
    features of seen ones (D1-D4), drawn from the mention tower's outputs."""
    _, linker, _ = build(tiny_bert_dir, finetune_batch_size=4, finetune_real_share=share)
    real, _ = linker.biofeg.real_features(linker)
    batches = []
    loss = linker.loss

    def spy(m, positives, hard, concepts, targets):
        batches.append((m.detach().numpy().copy(), concepts.tolist()))
        return loss(m, positives, hard, concepts, targets)

    monkeypatch.setattr(linker, "loss", spy)
    record = linker.biofeg.run(linker)
    ids = linker.index.names.concept_ids
    seen = {"D1", "D2", "D3", "D4"}
    kinds = [[ids[c] in seen for c in concepts] for _, concepts in batches]
    assert sum(not k for row in kinds for k in row) == record["unseen_finetuned"]
    if not share:
        assert len(batches) == 1 and not any(k for row in kinds for k in row)
        assert "finetune_real_pairs" not in record
        return
    assert len(batches) == 2 and all(row == [False, False, True, True] for row in kinds)
    assert record["finetune_real_pairs"] == len(linker.train_mentions)
    for queries, _ in batches:  # the real rows are training mentions' features
        assert all(np.isclose(real @ q, 1.0, atol=1e-4).any() for q in queries[2:])

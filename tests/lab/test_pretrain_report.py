import json

from bench.pretrain_report import pretrain_summary


def report(acc, n=100, dataset="ncbi-disease"):
    return {"n": n, "acc@1": acc, "meta": {"dataset": dataset, "kb_name": "MEDIC"}}


def test_summary_means_seeds_and_pairs_them_with_the_untrained_row(tmp_path):
    (tmp_path / "untrained").mkdir()
    (tmp_path / "untrained" / "ncbi.json").write_text(json.dumps(report(0.70)))
    (tmp_path / "untrained" / "hp.json").write_text(json.dumps(report(0.40, dataset="hp")))
    for seed, acc in [("s0", 0.80), ("s1", 0.84), ("s2", 0.82)]:
        (tmp_path / "pre" / seed).mkdir(parents=True)
        (tmp_path / "pre" / seed / "ncbi.json").write_text(json.dumps(report(acc)))
    (tmp_path / "enc" / "s0").mkdir(parents=True)
    (tmp_path / "enc" / "s0" / "pretraining.json").write_text(json.dumps({
        "pairs": 10, "steps": 2, "epochs_done": 1.0, "seconds": 30.0, "names_per_s": 40.0,
        "device": "cpu", "loss_first_10pct": 0.5, "loss_last_10pct": 0.2}))
    summary = pretrain_summary(tmp_path / "untrained", tmp_path / "pre", tmp_path / "enc")
    table = summary["markdown"]
    assert "| ncbi-disease | MEDIC | 100 | 70.0 | 82.0 ± 2.0 | +12.0 ± 2.0 | 3 |" in table
    assert "| hp | MEDIC | 100 | 40.0 | not run | - | 0 |" in table
    assert "| s0 | 10 | 2 | 1.00 | 30 | 40 | cpu | 0.5000 -> 0.2000 |" in table
    assert summary["data"]["datasets"]["ncbi"]["pretrained_acc@1"] == {"s0": 0.8, "s1": 0.84,
                                                                        "s2": 0.82}

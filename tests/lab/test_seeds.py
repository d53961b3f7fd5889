"""`seeds-table`: mean +- std over seeds and differences paired by seed."""
import json

import pytest
from typer.testing import CliRunner

from bench.cli import app
from spacy_bioel.errors import BioELError
from bench.seeds import seed_of, seeds_table, summarise


def report(acc, unseen=None, label=""):
    out = {"acc@1": acc, "acc@10": acc + 0.1, "recall@64": acc + 0.2, "meta": {"linker": label}}
    if unseen is not None:
        out["unseen"] = {"acc@1": unseen}
    return out


def test_mean_std_and_differences_paired_by_seed():
    systems = {"base": {"0": report(0.50, 0.30), "1": report(0.52, 0.32), "2": report(0.54, 0.28)},
               "new": {"0": report(0.51, 0.35), "1": report(0.55, 0.36), "3": report(0.90, 0.90)}}
    rows = summarise(systems, baseline="base")
    base, new = rows
    assert base["Acc@1"]["mean"] == pytest.approx(0.52) and base["Acc@1"]["std"] == pytest.approx(0.02)
    assert base["Acc@1"]["n"] == 3 and "Acc@1 diff" not in base
    # seeds 0 and 1 are paired; seed 3 has no baseline run
    assert new["Acc@1 diff"]["n"] == 2
    assert new["Acc@1 diff"]["mean"] == pytest.approx((0.01 + 0.03) / 2)
    assert new["unseen diff"]["mean"] == pytest.approx((0.05 + 0.04) / 2)
    table = seeds_table(rows, "base")
    assert "| new | 0, 1, 3 |" in table and "ΔAcc@1 vs base" in table and "2.0 ± 1.4" in table
    assert "seen |" not in table.replace("unseen", "")  # no report has a seen subset


def test_seed_comes_from_the_file_name_or_the_label(tmp_path):
    assert seed_of(tmp_path / "plain_s2.json", {}) == "2"
    assert seed_of(tmp_path / "x.json", {"meta": {"linker": "prompt-s1"}}) == "1"
    with pytest.raises(BioELError) as err:
        seed_of(tmp_path / "x.json", {"meta": {"linker": "prompt"}})
    assert err.value.code == "E166"
    with pytest.raises(BioELError) as err:
        summarise({"a": {"0": report(0.5)}}, baseline="b")
    assert err.value.code == "E175"


def test_cli_writes_markdown_and_json(tmp_path):
    for seed, acc in enumerate([0.4, 0.5]):
        (tmp_path / f"a_s{seed}.json").write_text(json.dumps(report(acc)))
    runner = CliRunner()
    out = tmp_path / "seeds.md"
    result = runner.invoke(app, ["seeds-table", "--row", f"a={tmp_path}/a_s*.json",
                                 "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "| a | 0, 1 | 45.0 ± 7.1 |" in out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())["rows"][0]["seeds"] == ["0", "1"]
    result = runner.invoke(app, ["seeds-table", "--row", f"a={tmp_path}/none_*.json",
                                 "--output", str(out)])
    assert result.exit_code != 0 and getattr(result.exception, "code", "") == "E175"


def test_error_kinds_are_averaged_over_seeds():
    """BioFEG's Table 4 kinds, mean ± std of the counts; a kind a run lacks counts 0."""
    def with_kinds(acc, **kinds):
        return {**report(acc), "error_kinds": {"seen": kinds, "mention": {"other": 9}}}

    systems = {"base": {"0": with_kinds(0.5, unseen_to_wrong_seen=10, seen_to_wrong_seen=4),
                        "1": with_kinds(0.5, unseen_to_wrong_seen=12)},
               "new": {"0": with_kinds(0.6, unseen_to_wrong_unseen=3)}}
    rows = summarise(systems, baseline="base")
    assert rows[0]["error_kinds"]["unseen_to_wrong_seen"]["mean"] == pytest.approx(11)
    assert rows[0]["error_kinds"]["seen_to_wrong_seen"]["mean"] == pytest.approx(2)
    table = seeds_table(rows, "base")
    assert "| base | 11.0 ± 1.4 | 0.0 ± 0.0 | 0.0 ± 0.0 | 2.0 ± 2.8 | 0.0 ± 0.0 |" in table
    assert "| new | 0.0 | 0.0 | 3.0 | 0.0 | 0.0 |" in table
    assert "error" not in seeds_table(summarise({"a": {"0": report(0.5)}}))


def test_e2e_reports_over_seeds(tmp_path):
    """`--kind e2e`: end-to-end and gold-span F1 of `bench e2e` reports, the seed read
    from the report (its pipeline's training seed) when the file name has none."""
    def e2e(ner, doc):
        f = lambda v: {"f": v}  # noqa: E731
        return {"end_to_end": {"ner": f(ner), "mentions": f(ner - 0.1), "documents": f(doc)},
                "gold_spans": {"mentions": f(0.9), "documents": f(0.86)}}

    for seed, (ner, doc) in enumerate([(0.80, 0.82), (0.82, 0.84), (0.84, 0.80)]):
        (tmp_path / f"run{seed}_e2e.json").write_text(json.dumps({**e2e(ner, doc), "seed": seed}))
    out = tmp_path / "e2e_seeds.md"
    result = CliRunner().invoke(app, ["seeds-table", "--kind", "e2e", "--row",
                                      f"cnn={tmp_path}/run*_e2e.json", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "| cnn | 0, 1, 2 | 82.0 ± 2.0 | 72.0 ± 2.0 | 82.0 ± 2.0 | 90.0 ± 0.0 | 86.0 ± 0.0 |" \
        in out.read_text()
    for seed, (ner, doc) in enumerate([(0.82, 0.83), (0.85, 0.84), (0.84, 0.83)]):
        (tmp_path / f"kb{seed}_e2e.json").write_text(json.dumps({**e2e(ner, doc), "seed": seed}))
    result = CliRunner().invoke(app, ["seeds-table", "--kind", "e2e", "--row",
                                      f"cnn={tmp_path}/run*_e2e.json", "--row",
                                      f"kb={tmp_path}/kb*_e2e.json", "--baseline", "cnn",
                                      "--output", str(out)])
    assert result.exit_code == 0, result.output
    # paired by seed: NER +2, +3, 0; documents +1, 0, +3
    assert "ΔNER F1 vs cnn | Δmention F1 vs cnn | Δdocument F1 vs cnn |" in out.read_text()
    assert "| 1.7 ± 1.5 | 1.7 ± 1.5 | 1.3 ± 1.5 |" in out.read_text()
    result = CliRunner().invoke(app, ["seeds-table", "--kind", "nope", "--row",
                                      f"cnn={tmp_path}/run*_e2e.json", "--output", str(out)])
    assert getattr(result.exception, "code", "") == "E175"

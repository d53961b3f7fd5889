"""`ablate` and `ablate-table` end to end on a tiny fixture: two variants, two seeds."""
import srsly
from typer.testing import CliRunner

from bench.cli import app
from spacy_bioel.errors import BioELError

from tests.utils import write_toy_linking_data

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_ablate_and_table(tiny_bert_dir, tmp_path):
    write_toy_linking_data(tmp_path, repeat=2)
    small = {"paths.encoder": str(tiny_bert_dir), "training.max_epochs": 1,
             "training.eval_frequency": 2, "components.bioel_linker.model.max_length": 16}
    srsly.write_yaml(tmp_path / "spec.yml", {"seeds": [0, 1], "overrides": small, "comparisons": [
        {"question": "proxy vs InfoNCE", "a": "proxy-fgsm", "b": "infonce", "metrics": ["Acc@1"]}],
        "variants": {
        "infonce": {"config": str(REPO / "configs/linker_cpu.cfg"),
                    "overrides": {"training.eval_frequency": 3},  # wins over the shared one
                    "describe": {"loss": "InfoNCE", "negatives": "hard", "fgsm": "no"}},
        "proxy-fgsm": {"config": str(REPO / "configs/linker_proxy.cfg"),
                       "describe": {"loss": "proxy", "negatives": "mixed", "fgsm": "yes"}}}})
    data, runner = str(tmp_path / "data.spacy"), CliRunner()
    args = ["ablate", str(tmp_path / "spec.yml"), "--dataset", "toy", "--train", data,
            "--dev", data, "--test", data, "--kb", str(tmp_path / "kb.bioelkb"),
            "--results", str(tmp_path / "results"), "--work", str(tmp_path / "work"),
            "--embedding-cache", str(tmp_path / "cache")]
    result = runner.invoke(app, args + ["--seeds", "0"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert sorted(p.name for p in (tmp_path / "results" / "toy").iterdir()) == \
        ["infonce__seed0.json", "proxy-fgsm__seed0.json"]
    assert not (tmp_path / "work" / "toy" / "infonce__seed0").exists()  # models dropped
    # the frozen tower's names, encoded once per stored dtype (linker_cpu.cfg keeps float16,
    # linker_proxy.cfg float32); the second seed encodes nothing
    assert len(list((tmp_path / "cache").glob("names-*.npy"))) == 2
    run = srsly.read_json(tmp_path / "results" / "toy" / "infonce__seed0.json")
    command = " ".join(run["command"])
    assert "--training.max_epochs 1" in command and "--training.eval_frequency 3" in command
    other = " ".join(srsly.read_json(tmp_path / "results" / "toy" / "proxy-fgsm__seed0.json")["command"])
    assert "--training.max_epochs 1" in other and "--training.eval_frequency 2" in other
    for key in ("knn_off", "knn_on"):
        report = run["evaluations"][key]
        assert report["n"] == 6 and report["nil"]["n_gold_nil"] == 2
        assert report["nil_threshold"] is not None  # calibrated on dev for this setting
        assert len(report["nil_pr_curve"]["precision"]) == len(report["nil_pr_curve"]["recall"])
    # resumable: seed 0 is skipped, seed 1 runs
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and "2 of 4 runs to do" in result.output
    assert len(list((tmp_path / "cache").glob("names-*.npy"))) == 2
    result = runner.invoke(app, ["ablate-table", str(tmp_path / "results"),
                                 "--output", str(tmp_path / "results" / "table.md"),
                                 "--spec", str(tmp_path / "spec.yml")])
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = srsly.read_json(tmp_path / "results" / "table.json")["rows"]
    comparisons = srsly.read_json(tmp_path / "results" / "table.json")["comparisons"]
    assert [(c["question"], c["pairs"]) for c in comparisons] == [("proxy vs InfoNCE", 2)]
    assert len(rows) == 4 and all(row["seeds"] == 2 for row in rows)
    runs = [srsly.read_json(p) for p in (tmp_path / "results" / "toy").glob("infonce__*.json")]
    values = [r["evaluations"]["knn_off"]["acc@1"] for r in runs]
    row = next(r for r in rows if r["variant"] == "infonce" and r["knn"] == "off")
    assert abs(row["Acc@1"]["mean"] - sum(values) / 2) < 1e-9
    table = (tmp_path / "results" / "table.md").read_text()
    assert "| toy | proxy-fgsm | proxy | mixed | yes | on | 2 |" in table
    assert (tmp_path / "results" / "nil_pr_toy.png").stat().st_size > 1000


def test_bad_spec_errors(tmp_path):
    srsly.write_yaml(tmp_path / "spec.yml", {"variants": {"x": {"overrides": {}}}})
    from bench.cli.ablate import load_spec
    try:
        load_spec(tmp_path / "spec.yml")
    except BioELError as err:
        assert err.code == "E166" and "no config" in str(err)
    else:
        raise AssertionError("E166 expected")


def test_seed_placeholder_in_overrides(tmp_path):
    """'{seed}' in a string override becomes the run's seed; other values pass unchanged."""
    from bench.cli.ablate import train_command
    variant = {"config": "configs/linker_cpu.cfg",
               "overrides": {"paths.encoder": "enc/s{seed}", "training.max_epochs": 2,
                             "components.bioel_linker.model.normalize": True}}
    paths = {"train": tmp_path / "t", "dev": tmp_path / "d", "kb": tmp_path / "kb"}
    command = train_command(variant, 2, tmp_path / "out", paths, {})
    flags = dict(zip(command[5::2], command[6::2]))  # after `python -m spacy train CONFIG`
    assert flags["--paths.encoder"] == "enc/s2" and flags["--training.max_epochs"] == "2"
    assert flags["--components.bioel_linker.model.normalize"] == "true"
    assert flags["--system.seed"] == "2"

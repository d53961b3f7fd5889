"""`python -m bench reliability` on a tiny saved pipeline: every count is
written, and this package's own hostile runs (the edge cases included) find nothing."""
import srsly
from typer.testing import CliRunner

from bench.cli import app

from tests.reliability.test_docs import build
from tests.utils import starts_ray

pytestmark = starts_ray()  # its edge cases start Ray


def test_reliability_command_writes_counts(tiny_bert_dir, tmp_path):
    build(tiny_bert_dir).to_disk(tmp_path / "pipeline")
    result = CliRunner().invoke(app, ["reliability", str(tmp_path / "out"), "--pipeline",
                                      str(tmp_path / "pipeline"), "--docs", "30", "--flips", "1",
                                      "--edges-encoder", str(tiny_bert_dir)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    report = srsly.read_json(tmp_path / "out" / "reliability.json")
    inputs, docs, files = report["malformed_inputs"], report["documents"], report["saved_files"]
    assert inputs["files"] > 150 and inputs.get("crash", 0) == inputs.get("silent_wrong", 0) == 0
    assert docs["documents"] == 30 and docs["entities"] > 0
    assert docs["crashes"] == docs["dropped_entities"] == docs["unknown_ids"] == 0
    assert docs["nondeterministic_docs"] == docs["n_process_mismatches"] == 0
    assert files["flips"] >= 8 and files["coded_error"] == files["flips"]
    edges = report["edges"]["all"]
    assert edges["cases"] >= 45 and edges["coded"] + edges["clean"] == edges["cases"]
    assert edges["crash"] == edges["silent_wrong"] == edges["hang"] == 0
    page = (tmp_path / "out" / "reliability.md").read_text()
    assert page.startswith("| check |") and "| edge | cases | coded | clean |" in page

"""`bench train-step-speed`: the bi-encoder's training steps timed with each
cpu_length_chunks setting in one process, on a shipped config and toy data."""
import json
from pathlib import Path

from typer.testing import CliRunner

from bench.cli import app

from ..utils import write_toy_linking_data

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_train_step_speed_times_each_setting_on_the_same_batches(tiny_bert_dir, tmp_path,
                                                                   monkeypatch):
    from spacy_bioel.encoders import torch_biencoder

    write_toy_linking_data(tmp_path, nil=False, repeat=3)
    seen = []
    encode_by_length = torch_biencoder.BiEncoder.encode_by_length

    def spy(self, tower, input_ids, attention_mask, chunks):
        seen.append(chunks)
        return encode_by_length(self, tower, input_ids, attention_mask, chunks)

    monkeypatch.setattr(torch_biencoder.BiEncoder, "encode_by_length", spy)
    output = tmp_path / "speed.json"
    data = str(tmp_path / "data.spacy")
    result = runner.invoke(app, [
        "train-step-speed", str(REPO / "configs" / "linker_cpu.cfg"), "--chunks", "1,2",
        "--steps", "2", "--repeats", "2", "--output", str(output), "--paths.train", data,
        "--paths.dev", data, "--paths.kb", str(tmp_path / "kb.bioelkb"), "--paths.encoder",
        str(tiny_bert_dir), "--components.bioel_linker.model.max_length", "16"])
    assert result.exit_code == 0, (result.output, result.exception)
    report = json.loads(output.read_text())
    assert [row["cpu_length_chunks"] for row in report["rows"]] == [1, 2]
    assert all(len(row["seconds_per_step"]) == 2 for row in report["rows"])
    assert report["rows"][0]["speedup"] == 1.0
    assert 1 in seen and 2 in seen  # the training forward ran under both settings
    assert "| 2 |" in output.with_suffix(".md").read_text()

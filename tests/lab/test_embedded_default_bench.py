"""`python -m bench embedded-default` on a tiny encoder and KB: two calls per path,
each a fresh process on its own fresh cache; the default path saves its
pipeline on the first call (its cache holds more than the PyTorch path's
name embeddings), and the report and its table have a row per path."""
import json

from typer.testing import CliRunner

from spacy_bioel import Concept, KnowledgeBase
from tests.utils import needs

pytestmark = needs("onnxruntime", "onnx")


def test_embedded_default_bench(tiny_bert_dir, tmp_path):
    from bench.cli import app

    kb = KnowledgeBase(name="toy")
    for cid, name in (("D1", "familial adenomatous polyposis"), ("D2", "colorectal carcinoma"),
                      ("D3", "myocardial infarction"), ("D4", "hepatoblastoma")):
        kb.add(Concept(cid, name))
    kb.to_disk(tmp_path / "kb.bioelkb")
    out = tmp_path / "embedded.json"
    result = CliRunner().invoke(app, ["embedded-default", str(out), "--kb",
                                      str(tmp_path / "kb.bioelkb"), "--encoder",
                                      str(tiny_bert_dir), "--calls", "2"])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert set(report["paths"]) == {"default", "torch"}
    for path, entry in report["paths"].items():
        assert len(entry["calls"]) == 2
        assert all(c["seconds"] > 0 and c["peak_rss_mb"] > 0 and c["chars"] > 0
                   for c in entry["calls"])
    # the default path saved its pipeline (cache holds it); the PyTorch path only names
    assert report["paths"]["default"]["cache_bytes"] > report["paths"]["torch"]["cache_bytes"] > 0
    assert "| default |" in out.with_suffix(".md").read_text()

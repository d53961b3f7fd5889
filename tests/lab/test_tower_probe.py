"""`python -m bench tower-probe` on a tiny pipeline: its int8 ONNX tower against
the same weights on PyTorch, encoded as each links; a row-scaled graph's
embeddings do not move when the texts come in another order."""
import json

from spacy.tokens import DocBin, Span
from typer.testing import CliRunner

from .conftest import toy_linker


def test_tower_probe_compares_towers_on_the_same_texts(tiny_bert_dir, tmp_path):
    from bench.cli import app
    from spacy_bioel.cli import app as bioel

    nlp = toy_linker(tiny_bert_dir, tmp_path / "torch")
    staged = CliRunner().invoke(bioel, [
        "set-stage", str(tmp_path / "torch"), str(tmp_path / "int8"), "runtime",
        "spacy-bioel.OnnxRuntime.v1", "--param", 'quantize="int8"'])
    assert staged.exit_code == 0, staged.output
    docs = DocBin()
    for text in ("colon cancer and asthma", "a heart attack in a man", "asthma with colon cancer"):
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, 0, 2, label="Disease"), Span(doc, len(doc) - 1, len(doc), label="Disease")]
        docs.add(doc)
    docs.to_disk(tmp_path / "data.spacy")
    out = tmp_path / "probe.json"
    result = CliRunner().invoke(app, ["tower-probe", str(tmp_path / "data.spacy"), "--reference",
                                      str(tmp_path / "torch"), "--pipeline", f"int8={tmp_path / 'int8'}",
                                      "--pipeline", f"torch={tmp_path / 'torch'}", "--repeats", "2",
                                      "--output", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["texts"] == 6
    int8, same = report["pipelines"]["int8"], report["pipelines"]["torch"]
    assert len(int8["encode_s"]) == 2 and int8["texts_per_s"] > 0
    assert 0.9 < int8["cosine_to_reference_mean"] < 1.0 + 1e-6 and int8["shuffled_max_change"] <= 1e-6
    assert same["cosine_to_reference_min"] > 0.99999
    assert "| int8 |" in out.with_suffix(".md").read_text()

"""`python -m bench distill-probe` on a tiny pipeline: a one-layer student of the
two-layer mention tower, distilled and scored on dev in memory; with --served,
also as an int8 ONNX graph in place of an ONNX-served copy's, whose file is the
only thing written."""
import json

import pytest

import spacy
from spacy.tokens import DocBin, Span
from typer.testing import CliRunner

from spacy_bioel import Concept, KnowledgeBase


def docbin(nlp, rows, path):
    docs = DocBin()
    for text, ents in rows:
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, s, e, label="Disease", kb_id=kb_id) for s, e, kb_id in ents]
        docs.add(doc)
    docs.to_disk(path)
    return path


def test_distill_probe_scores_teacher_and_student(tiny_bert_dir, tmp_path):
    from bench.cli import app

    kb = KnowledgeBase(name="toy")
    for cid, name in (("D1", "colon cancer"), ("D2", "heart attack"), ("D3", "asthma")):
        kb.add(Concept(cid, name))
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config={"model": {
        "@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(tiny_bert_dir),
        "shared_towers": False, "train_concept_tower": False}})
    linker.set_kb(kb)
    nlp.initialize(lambda: [])
    nlp.to_disk(tmp_path / "p")
    rows = [("colon cancer in the colon", [(0, 2, "D1")]), ("heart attack and asthma", [(0, 2, "D2"), (3, 4, "D3")])]
    data = docbin(nlp, rows, tmp_path / "data.spacy")
    out = tmp_path / "probe.json"
    result = CliRunner().invoke(app, ["distill-probe", str(tmp_path / "p"), str(data), str(data),
                                      "--layers", "0", "--epochs", "3", "--output", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["layers"] == [0] and report["texts"] == 3  # the names; the mentions repeat them
    assert 0 <= report["student_dev_acc@1"] <= 1 and report["teacher_dev_acc@1"] == 1.0  # exact names
    assert report["loss_curve"] and set(report["encode_s_per_tower"]) == {"student", "teacher"}
    assert "teacher dev Acc@1 100.00" in result.output
    from spacy_bioel.cli import app as bioel

    staged = CliRunner().invoke(bioel, ["set-stage", str(tmp_path / "p"), str(tmp_path / "served"),
                                        "runtime", "spacy-bioel.OnnxRuntime.v1",
                                        "--param", 'quantize="int8-all"'])
    assert staged.exit_code == 0, staged.output
    result = CliRunner().invoke(app, ["distill-probe", str(tmp_path / "p"), str(data), str(data),
                                      "--layers", "0", "--epochs", "1", "--output", str(out),
                                      "--served", str(tmp_path / "served")])
    assert result.exit_code == 0, result.output
    served = json.loads(out.read_text())["served"]
    assert served["teacher_dev_acc@1"] == 1.0 and 0 <= served["student_dev_acc@1"] <= 1
    assert set(served["onnx_s"]) == {"teacher", "student"}
    graph = tmp_path / "probe.json.student_int8.onnx"
    assert graph.stat().st_size / 1e6 == pytest.approx(served["onnx_mb"]["student"], abs=0.06)
    import onnx

    layers = {part for node in onnx.load(str(graph)).graph.node for part in node.name.split("/")
              if part.startswith("layer.")}
    assert layers == {"layer.0"}  # one layer: the student, not the teacher

"""`python -m spacy_bioel distill`: a student of some of the mention tower's
layers, taught on the KB's names and the training mentions, served by the ONNX
runtime and saved with the pipeline; the PyTorch weights stay the teacher's;
new weights drop the student with a warning; a pipeline without the ONNX
runtime, or layers the teacher lacks, are coded errors."""
import json

import numpy as np
import pytest
import spacy
from spacy.tokens import Span
from typer.testing import CliRunner

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.cli import app
from tests.utils import needs, tiny_linker_config

pytestmark = needs("onnxruntime", "onnx")
TEXTS = ["colon cancer", "heart attack", "asthma attack"]


def pipeline(tiny_bert_dir, path, runtime=True):
    kb = KnowledgeBase(name="toy")
    for cid, name, syns in (("D1", "colorectal carcinoma", ("colon cancer",)),
                            ("D2", "myocardial infarction", ("heart attack",)), ("D3", "asthma", ())):
        kb.add(Concept(cid, name, syns))
    extra = {"runtime": {"@misc": "spacy-bioel.OnnxRuntime.v1"}} if runtime else {}
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, **extra))
    linker.set_kb(kb)
    nlp.initialize()
    linker.train_mentions = [("bowel cancer", "D1"), ("MI", "D2")]
    nlp.to_disk(path)
    return nlp


def layers_of(graph_path):
    import onnx

    return {part for node in onnx.load(str(graph_path)).graph.node
            for part in node.name.split("/") if part.startswith("layer.")}


def linked(nlp):
    out = []
    for text in TEXTS:
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, 0, len(doc), label="Disease")]
        out.append(nlp(doc).ents[0]._.kb_ents[0][0])
    return out


def test_distill_serves_a_student_and_keeps_the_teacher(tiny_bert_dir, tmp_path):
    teacher = pipeline(tiny_bert_dir, tmp_path / "p")
    assert layers_of(tmp_path / "p" / "bioel_linker" / "runtime" / "mention.onnx") == {"layer.0", "layer.1"}
    result = CliRunner().invoke(app, ["distill", str(tmp_path / "p"), str(tmp_path / "out"),
                                      "--layers", "1", "--epochs", "3"])
    assert result.exit_code == 0, result.output
    assert "on 7 texts" in result.output  # 5 KB names + 2 training mentions
    folder = tmp_path / "out" / "bioel_linker"
    assert layers_of(folder / "runtime" / "mention.onnx") == {"layer.0"}  # the student's one layer
    student = json.loads((folder / "runtime" / "runtime.json").read_text())["student"]
    assert student["layers"] == [1] and student["texts"] == 7 and student["epochs"] == 3
    # the PyTorch weights and the name index are the teacher's, byte for byte
    for part in ("model", "index/vectors.npy", "datastore"):
        assert (folder / part).read_bytes() == (tmp_path / "p" / "bioel_linker" / part).read_bytes()
    nlp = spacy.load(tmp_path / "out")
    linker = nlp.get_pipe("bioel_linker")
    assert linker.runtime.student["layers"] == [1] and linker.deferred_model is not None
    assert all(cid in {"D1", "D2", "D3"} for cid in linked(nlp))
    want = teacher.get_pipe("bioel_linker").runtime.encode(teacher.get_pipe("bioel_linker").model,
                                                           TEXTS, 8)
    got = linker.runtime.encode(linker.model, TEXTS, 8)
    assert got.shape == want.shape and not np.allclose(got, want, atol=1e-4)  # another tower
    nlp.to_disk(tmp_path / "again")  # saved again: still the student
    assert layers_of(tmp_path / "again" / "bioel_linker" / "runtime" / "mention.onnx") == {"layer.0"}
    again = spacy.load(tmp_path / "again").get_pipe("bioel_linker")
    assert again.runtime.student == linker.runtime.student
    with pytest.warns(UserWarning, match="W015"):  # new weights (training): the student goes
        again.runtime.invalidate()
    assert again.runtime.student is None and again.runtime.needs_model()


def test_distill_errors(tiny_bert_dir, tmp_path):
    pipeline(tiny_bert_dir, tmp_path / "torch", runtime=False)
    result = CliRunner().invoke(app, ["distill", str(tmp_path / "torch"), str(tmp_path / "out")])
    assert result.exception.code == "E242" and "set-stage" in str(result.exception)
    pipeline(tiny_bert_dir, tmp_path / "onnx")
    result = CliRunner().invoke(app, ["distill", str(tmp_path / "onnx"), str(tmp_path / "out"),
                                      "--layers", "0,2"])  # the teacher has 2 layers
    assert result.exception.code == "E175"
    assert not (tmp_path / "out").exists()

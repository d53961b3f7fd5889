"""`pretrain-encoder` end to end on a tiny KB: the leakage rules it reports,
and a model directory that a linker takes as its encoder."""
import json

import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_bioel import Concept, KnowledgeBase
from bench.cli import app
from spacy_bioel.pretraining.trainer import RECORD_FILE

from ..utils import tiny_linker_config, write_lines

runner = CliRunner()


def write_inputs(folder):
    kb = KnowledgeBase(name="tiny", strip_prefixes=("MESH:",))
    kb.add(Concept("D1", "colon cancer", ("colorectal carcinoma", "bowel cancer", "crc")))
    kb.add(Concept("D2", "heart attack", ("myocardial infarction", "mi")))
    kb.add(Concept("D3", "type 2 diabetes", ("niddm", "t2dm")))
    kb.add(Concept("D4", "asthma", ("bronchial asthma",)))
    kb.to_disk(folder / "kb.bioelkb")
    nlp = spacy.blank("en")
    doc = nlp.make_doc("t2dm")  # a zero-shot test query of D3
    doc.ents = [doc.char_span(0, 4, "Disease", kb_id="MESH:D3")]
    DocBin(docs=[doc]).to_disk(folder / "test.spacy")
    write_lines(folder / "ids.txt", ["# held out", "D4"])
    write_lines(folder / "queries.txt", ["Bowel-Cancer"])


def test_pretrain_encoder_applies_the_leakage_rules_and_writes_an_encoder(tiny_bert_dir, tmp_path):
    write_inputs(tmp_path)
    out = tmp_path / "encoder"
    result = runner.invoke(app, [
        "pretrain-encoder", str(tmp_path / "kb.bioelkb"), str(out), "--base-model",
        str(tiny_bert_dir), "--zero-shot-test", str(tmp_path / "test.spacy"),
        "--exclude-concepts", str(tmp_path / "ids.txt"), "--exclude-queries",
        str(tmp_path / "queries.txt"), "--batch-size", "4", "--epochs", "2",
        "--max-length", "16", "--threads", "1"])
    assert result.exit_code == 0, (result.output, result.exception)
    # held out: D3 and D4 (3 + 1 pairs); query strings: "bowel cancer" (3 of D1's 6 pairs),
    # and "t2dm", a name of D3 (already counted there)
    assert "Leakage rules (2 held-out ids, 2 query strings)" in result.output
    assert "excluded concepts: 2 (5 names, 4 synonym pairs dropped)" in result.output
    assert "names equal to a query string (normalised): 1 (3 further" in result.output
    assert "Training pairs: 6 (2 concepts with 2+ names" in result.output
    record = json.loads((out / RECORD_FILE).read_text())
    assert record["pairs"] == 6 and record["steps"] == 4
    assert record["leakage"]["pairs_dropped"] == 7
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(out))
    kb = KnowledgeBase.from_disk(tmp_path / "kb.bioelkb")
    nlp.get_pipe("bioel_linker").set_kb(kb)
    nlp.initialize()
    doc = nlp.make_doc("heart attack")
    doc.ents = [doc.char_span(0, 12, "Disease")]
    assert nlp(doc).ents[0].kb_id_ == "D2"


def test_pretrain_encoder_refuses_a_kb_without_synonyms(tiny_bert_dir, tmp_path):
    kb = KnowledgeBase(name="names only")
    kb.add(Concept("A", "one name"))
    kb.to_disk(tmp_path / "kb.bioelkb")
    result = runner.invoke(app, ["pretrain-encoder", str(tmp_path / "kb.bioelkb"),
                                 str(tmp_path / "out"), "--base-model", str(tiny_bert_dir)])
    assert result.exit_code == 1 and "E183" in str(result.exception)


def test_nil_split_lists_its_held_out_concepts_for_pretraining(tmp_path):
    kb = KnowledgeBase(name="kb")
    for i in range(10):
        kb.add(Concept(f"D{i}", f"disease {i}"))
    kb.to_disk(tmp_path / "kb.bioelkb")
    nlp = spacy.blank("en")
    docs = []
    for i in range(10):
        doc = nlp.make_doc(f"disease {i}")
        doc.ents = [doc.char_span(0, len(doc.text), "Disease", kb_id=f"D{i}")]
        docs.append(doc)
    DocBin(docs=docs).to_disk(tmp_path / "test.spacy")
    result = runner.invoke(app, ["nil-split", str(tmp_path / "kb.bioelkb"),
                                 str(tmp_path / "test.spacy"), str(tmp_path / "nil"),
                                 "--fraction", "0.2", "--seed", "1"])
    assert result.exit_code == 0, (result.output, result.exception)
    listed = (tmp_path / "nil" / "heldout_concepts.txt").read_text().split()
    reduced = KnowledgeBase.from_disk(tmp_path / "nil" / "kb.bioelkb")
    assert len(listed) == 2 and listed == reduced.meta["heldout_concepts"]
    assert not set(listed) & set(reduced.concept_ids)


def test_pretrain_speed_times_each_length_chunks_setting(tiny_bert_dir, tmp_path):
    write_inputs(tmp_path)
    output = tmp_path / "speed.json"
    result = runner.invoke(app, [
        "pretrain-speed", str(tmp_path / "kb.bioelkb"), "--base-model", str(tiny_bert_dir),
        "--chunks", "1,2", "--steps", "2", "--repeats", "2", "--batch-size", "4",
        "--threads", "1", "--output", str(output)])
    assert result.exit_code == 0, (result.output, result.exception)
    report = json.loads(output.read_text())
    assert [row["length_chunks"] for row in report["rows"]] == [1, 2]
    assert all(len(row["seconds_per_step"]) == 2 and row["median_seconds_per_step"] > 0
               for row in report["rows"])
    assert report["rows"][0]["speedup"] == 1.0
    assert "| 2 |" in output.with_suffix(".md").read_text()


def test_pretrain_speed_refuses_a_zero_chunk_setting(tiny_bert_dir, tmp_path):
    write_inputs(tmp_path)
    result = runner.invoke(app, ["pretrain-speed", str(tmp_path / "kb.bioelkb"), "--base-model",
                                 str(tiny_bert_dir), "--chunks", "1,0"])
    assert result.exit_code != 0 and "--chunks" in str(result.exception) + result.output

"""`add-ner PIPELINE OUTPUT`: an NER (the shipped one by default) before a
trained linker's pipeline, saved elsewhere, so that it reads plain text."""
import hashlib
from pathlib import Path

import pytest
import spacy
from typer.testing import CliRunner

from spacy_bioel.cli import app
from tests.utils import save_linker_pipeline

CONCEPTS = [("D1", "colon cancer"), ("D2", "heart attack"), ("D3", "asthma")]


def digest(folder: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        sha.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return sha.hexdigest()


def run(*args):
    return CliRunner().invoke(app, ["add-ner", *map(str, args)])


@pytest.fixture(scope="module")
def linker(tiny_bert_dir, tmp_path_factory):
    return save_linker_pipeline(tmp_path_factory.mktemp("add_ner") / "linker", tiny_bert_dir, CONCEPTS)


def test_the_shipped_ner_before_a_trained_linker_reads_plain_text(linker, tmp_path):
    from spacy_bioel.pipeline.loading import load_pipeline

    before = digest(linker)
    result = run(linker, tmp_path / "text")
    assert result.exit_code == 0, result.output
    assert digest(linker) == before  # the linker's own pipeline is not changed
    nlp = load_pipeline(tmp_path / "text")
    assert nlp.pipe_names == ["tok2vec", "ner", "bioel_mention_consistency", "bioel_linker"]
    doc = nlp("The patient had colon cancer last year.")
    assert [(e.text, e.kb_id_) for e in doc.ents] == [("colon cancer", "D1")]
    link = CliRunner().invoke(app, ["link", "Relatives with asthma were seen.",
                                    "--linker", str(tmp_path / "text")])
    assert link.exit_code == 0, link.output
    assert "asthma" in link.output and "D3" in link.output
    # a second run writes over its own earlier output
    assert run(linker, tmp_path / "text").exit_code == 0


def test_another_trained_ner_is_sourced_whole(linker, tmp_path):
    from spacy_bioel.pipeline.loading import load_pipeline

    ner = spacy.blank("en")
    ner.add_pipe("sentencizer")
    ner.add_pipe("entity_ruler", name="ner").add_patterns(
        [{"label": "Disease", "pattern": "heart attack"}])
    ner.to_disk(tmp_path / "ruler")
    result = run(linker, tmp_path / "text", "--ner", tmp_path / "ruler")
    assert result.exit_code == 0, result.output
    nlp = load_pipeline(tmp_path / "text")
    assert nlp.pipe_names == ["sentencizer", "ner", "bioel_mention_consistency", "bioel_linker"]
    doc = nlp("Relatives with heart attack were seen.")
    assert [(e.text, e.kb_id_) for e in doc.ents] == [("heart attack", "D2")]


def test_what_it_refuses(linker, tmp_path):
    from spacy_bioel.errors import BioELError

    def code(result):
        assert isinstance(result.exception, BioELError), result.output
        return result.exception.code

    before = digest(linker)
    assert code(run(linker, linker)) == "E245"  # its own input
    assert code(run(linker, linker / "inside")) == "E245"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert code(run(linker, tmp_path / "mine")) == "E246"  # a folder the user owns
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    assert run(linker, tmp_path / "text").exit_code == 0
    assert code(run(tmp_path / "text", tmp_path / "again")) == "E259"  # it has an NER already
    assert not (tmp_path / "again").exists()
    no_ents = spacy.blank("en")
    no_ents.add_pipe("sentencizer")
    no_ents.to_disk(tmp_path / "sentences")
    assert code(run(linker, tmp_path / "out", "--ner", tmp_path / "sentences")) == "E260"
    assert code(run(linker, tmp_path / "out2", "--ner", tmp_path / "missing")) == "E247"
    assert digest(linker) == before

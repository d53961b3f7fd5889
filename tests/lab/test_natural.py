"""`natural-corpus`: every distinct document once, with its source; repeats and
empty texts skipped and counted."""
import json

import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from bench.cli import app
from bench.natural import SOURCE_KEY, distinct_documents


def _doc(nlp, text, mention):
    doc = nlp.make_doc(text)
    start = text.index(mention)
    doc.ents = [doc.char_span(start, start + len(mention), label="Disease", kb_id="D1")]
    return doc


def test_repeats_are_skipped_and_counted_with_their_first_source():
    nlp = spacy.blank("en")
    train = [_doc(nlp, "Colon cancer in two sisters .", "Colon cancer"),
             _doc(nlp, "Asthma at night .", "Asthma")]
    test = [_doc(nlp, "Colon  cancer in two\nsisters .", "cancer"),  # the same text, spaced otherwise
            _doc(nlp, "Gout and asthma .", "Gout"), nlp.make_doc("   ")]
    docs, report = distinct_documents([("ncbi/train", train), ("ncbi/test", test)])
    assert [d.text for d in docs] == ["Colon cancer in two sisters .", "Asthma at night .",
                                      "Gout and asthma ."]
    assert [d.user_data[SOURCE_KEY] for d in docs] == ["ncbi/train", "ncbi/train", "ncbi/test"]
    assert (report["read"], report["kept"], report["duplicates"], report["empty"]) == (5, 3, 1, 1)
    assert report["per_source"]["ncbi/test"] == {"read": 3, "kept": 1, "mentions": 1}
    assert report["duplicate_examples"][0]["first_seen_in"] == "ncbi/train"
    assert report["mentions"] == 3


def test_cli_writes_the_docbin_with_sources_and_a_report(tmp_path):
    nlp = spacy.blank("en")
    for corpus, texts in (("ncbi", ["Colon cancer here .", "Asthma here ."]),
                          ("bc5cdr", ["Asthma here .", "Gout here ."])):
        (tmp_path / corpus).mkdir()
        DocBin(docs=[_doc(nlp, t, t.split()[0]) for t in texts]).to_disk(tmp_path / corpus / "test.spacy")
    out = tmp_path / "natural" / "natural.spacy"
    result = CliRunner().invoke(app, ["natural-corpus", str(tmp_path / "ncbi" / "test.spacy"),
                                      str(tmp_path / "bc5cdr" / "test.spacy"), "--output", str(out)])
    assert result.exit_code == 0, result.output
    docs = list(DocBin().from_disk(out).get_docs(nlp.vocab))
    assert [(d.text, d.user_data[SOURCE_KEY]) for d in docs] == [
        ("Colon cancer here .", "ncbi/test"), ("Asthma here .", "ncbi/test"), ("Gout here .", "bc5cdr/test")]
    assert [e.kb_id_ for d in docs for e in d.ents] == ["D1", "D1", "D1"]
    assert json.loads(out.with_suffix(".json").read_text())["duplicates"] == 1

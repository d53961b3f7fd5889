"""configs/ner_linker_cpu.cfg: a disease NER trained with `spacy train` before a
sourced, frozen bioel_linker; the saved pipeline turns plain text into linked
mentions (`link` without brackets, the end-to-end harness)."""
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin

from tests.utils import save_linker_pipeline

ROOT = Path(__file__).resolve().parents[2]
CONCEPTS = [("D1", "colon cancer"), ("D2", "heart attack"), ("D3", "asthma")]
CONTEXTS = ["The patient had {} last year .", "Relatives with {} were seen .",
            "We report {} in two siblings .", "No sign of {} was found ."]


def docs(nlp, n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        cid, name = rng.choice(CONCEPTS)
        text = rng.choice(CONTEXTS).format(name)
        doc = nlp.make_doc(text)
        start = text.index(name)
        doc.ents = [doc.char_span(start, start + len(name), label="Disease", kb_id=cid)]
        out.append(doc)
    return out


@pytest.fixture(scope="module")
def trained(tiny_bert_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ner_linker")
    nlp = spacy.blank("en")
    DocBin(docs=docs(nlp, 60, 0)).to_disk(folder / "train.spacy")
    DocBin(docs=docs(nlp, 12, 1)).to_disk(folder / "dev.spacy")
    save_linker_pipeline(folder / "linker", tiny_bert_dir, CONCEPTS)
    done = subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(ROOT / "configs" / "ner_linker_cpu.cfg"),
         "--output", str(folder / "out"), "--paths.train", str(folder / "train.spacy"),
         "--paths.dev", str(folder / "dev.spacy"), "--paths.linker", str(folder / "linker"),
         "--training.max_steps", "120", "--training.eval_frequency", "40",
         "--training.batcher.size.start", "50", "--training.batcher.size.stop", "50"],
        capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    ner_only = spacy.load(folder / "out" / "model-best")
    for name in ("bioel_mention_consistency", "bioel_linker"):
        ner_only.remove_pipe(name)
    ner_only.to_disk(folder / "ner_only")  # its tok2vec and ner alone
    return folder


def test_the_pipeline_finds_and_links_plain_text(trained):
    from spacy_bioel.pipeline.loading import load_pipeline

    nlp = load_pipeline(trained / "out" / "model-best")
    assert nlp.pipe_names == ["tok2vec", "ner", "bioel_mention_consistency", "bioel_linker"]
    doc = nlp("Relatives with heart attack were seen .")
    assert [(e.text, e.kb_id_) for e in doc.ents] == [("heart attack", "D2")]
    doc = nlp("We report asthma in two siblings .")
    assert [(e.text, e.kb_id_) for e in doc.ents] == [("asthma", "D3")]


def test_link_reads_plain_text_with_it(trained):
    from typer.testing import CliRunner

    from spacy_bioel.cli import app

    result = CliRunner().invoke(app, ["link", "The patient had colon cancer last year .",
                                      "--linker", str(trained / "out" / "model-best")])
    assert result.exit_code == 0, result.output
    assert "colon cancer" in result.output and "D1" in result.output


def test_end_to_end_harness_on_it(trained, tmp_path):
    from bench.cli._app import main

    output = tmp_path / "e2e.json"
    try:
        main(["e2e", str(trained / "out" / "model-best"), str(trained / "dev.spacy"),
              "--output", str(output), "--bootstrap", "50"])
    except SystemExit as stop:
        assert stop.code in (0, None)
    report = json.loads(output.read_text())
    assert report["documents"] == 12
    assert report["end_to_end"]["ner"]["f"] == 1.0  # found every dev mention
    assert report["end_to_end"]["documents"]["f"] == 1.0 == report["gold_spans"]["documents"]["f"]
    assert report["unrepresentable"] == {"gold_mentions": 12, "overlapping": 0, "not_token_aligned": 0}
    assert 0 < report["speed"]["share_ner"] < 1 and 0 < report["speed"]["share_linker"] < 1
    assert "| NER | NER strict |" in output.with_suffix(".md").read_text()
    assert report["label"] == "Disease"  # the NER's one label (spacy-bioel.one_label.v1)


def test_the_harness_puts_an_ner_before_a_linker_alone(trained, tmp_path):
    """`bench e2e LINKER DATA --ner NER` reads raw text with NER's components before
    a pipeline that has only a linker (as `add-ner` saves it); `e2e-threshold`
    scores the documents' concepts for each probability bound: a higher bound
    never finds more concepts."""
    from bench.cli._app import main

    output = tmp_path / "e2e.json"
    for args in (["e2e", str(trained / "linker"), str(trained / "dev.spacy"), "--ner",
                  str(trained / "ner_only"), "--output", str(output), "--bootstrap", "0"],
                 ["e2e-threshold", str(trained / "linker"), str(trained / "dev.spacy"), "--ner",
                  str(trained / "ner_only"), "--threshold", "0", "--threshold", "0.99",
                  "--output", str(tmp_path / "threshold.json")]):
        try:
            main(args)
        except SystemExit as stop:
            assert stop.code in (0, None)
    report = json.loads(output.read_text())
    assert report["ner"] == str(trained / "ner_only") and report["documents"] == 12
    assert report["end_to_end"]["ner"]["f"] == 1.0
    rows = json.loads((tmp_path / "threshold.json").read_text())["rows"][str(trained / "ner_only")]
    assert rows["0.0"]["f"] == report["end_to_end"]["documents"]["f"]
    assert rows["0.99"]["r"] <= rows["0.0"]["r"]


def test_the_memory_of_a_streamed_text_pipeline(trained, tmp_path):
    """`bench e2e-memory`: a fresh process streams the raw texts through the
    pipeline and reports what it held and found."""
    from bench.cli._app import main

    try:
        main(["e2e-memory", str(trained / "out" / "model-best"), str(trained / "dev.spacy"),
              "--output", str(tmp_path / "memory.json")])
    except SystemExit as stop:
        assert stop.code in (0, None)
    (row,) = json.loads((tmp_path / "memory.json").read_text())["installs"].values()
    assert row["documents"] == 12 and row["mentions"] == 12  # one disease a dev document
    assert row["peak_rss_mb"] > 50 and row["docs_per_s"] > 0


def _page(pipeline, text):
    from spacy_bioel.visualize.app import main

    main([pipeline, "--text", text])


def test_the_page_links_pasted_plain_text(trained):
    """`visualize` with an NER pipeline: plain text pasted (no brackets) shows its
    mentions linked (streamlit's own test runner; the browser checks of
    tests/visualize drive the same page)."""
    testing = pytest.importorskip("streamlit.testing.v1", reason="streamlit (the viz extra)")
    at = testing.AppTest.from_function(
        _page, args=(str(trained / "out" / "model-best"),
                     "Relatives with heart attack were seen . We report asthma in two siblings ."),
        default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert not at.warning  # no E198: the NER found the mentions
    rendered = "".join(str(getattr(h, "proto", h)) for h in at.get("html"))
    assert sorted(re.findall(r'data-kb-id=\\*"([^"\\]+)', rendered)) == ["D2", "D3"]


@pytest.mark.parametrize("text", ["", "   ", "No disease is named here .", "Пациент с астмой .",
                                  "asthma\x00\x07 colon\u200bcancer\r\n", "热 哮喘 .",
                                  "We report asthma in two siblings . " * 20000])
def test_bad_plain_text_neither_crashes_nor_drops(trained, text):
    """Empty text, text without a disease, other scripts, control characters and
    a document of about 700 KB: every mention the NER finds gets an id or NIL."""
    from spacy_bioel.pipeline.loading import load_pipeline

    nlp = load_pipeline(trained / "out" / "model-best")
    doc = nlp(text)
    assert doc.text == text
    assert all(e.kb_id_ and (e.kb_id_ == "NIL" or e.kb_id_ in {"D1", "D2", "D3"}) for e in doc.ents)
    assert all(e._.kb_ents is not None for e in doc.ents)
    if len(text) > 100000:
        assert len(doc.ents) == 20000  # every repeated 'asthma' found and linked

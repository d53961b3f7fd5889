"""Property tests over random documents, mentions without a letter or digit,
nlp.pipe(n_process=2), the faiss-missing fallback and linear abbreviation detection."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import spacy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError
from tests.utils import needs, tiny_linker_config

ODD = ["\x00", "\u200b", "\u200d", "\ufeff", "😀", "\u0301", "\u202e", "\t", "\n", " ", "…", "-",
       "(", ")", "²", "ß", "İ", "\ud7ff", "ﬁ"]
WORDS = ["colon", "cancer", "heart", "attack", "asthma", "FAP", "(FAP)", "familial",
         "adenomatous", "polyposis"]


def build(tiny_bert_dir, **settings):
    nlp = spacy.blank("en")
    nlp.add_pipe("bioel_linker", config=tiny_linker_config(tiny_bert_dir, top_k=3, **settings))
    kb = KnowledgeBase(name="toy")
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"),
                      ("D3", "asthma"), ("D4", "familial adenomatous polyposis")]:
        kb.add(Concept(cid, name))
    nlp.get_pipe("bioel_linker").set_kb(kb)
    nlp.initialize()
    return nlp


@pytest.fixture(scope="module")
def nlp(tiny_bert_dir):
    return build(tiny_bert_dir)


tokens = st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(ODD),
                            st.text(min_size=1, max_size=6)), min_size=1, max_size=30)


def make(nlp, words, picks):
    doc = nlp.make_doc("".join(w if w.isspace() else w + " " for w in words))
    ents, used = [], set()
    for start, length in picks:
        start = start % len(doc)
        end = min(len(doc), start + 1 + length % 3)
        if used.isdisjoint(range(start, end)):
            used.update(range(start, end))
            ents.append(doc[start:end])
    doc.ents = [spacy.tokens.Span(doc, e.start, e.end, label="Disease") for e in ents]
    return doc


def output(doc):
    return [(e.start_char, e.end_char, e.kb_id_, e._.kb_ents, e._.is_nil, e._.nil_score,
             e._.kb_prob, e._.kb_similarity) for e in doc.ents]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=tokens, picks=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 5)), max_size=8))
def test_random_docs_no_crash_no_dropped_entity_deterministic(nlp, words, picks):
    doc = make(nlp, words, picks)
    n_ents = len(doc.ents)
    first = output(nlp(doc))
    again = output(nlp(make(nlp, words, picks)))
    assert len(first) == n_ents and first == again
    for (start, end, kb_id, kb_ents, is_nil, nil_score, prob, sim), ent in zip(first, doc.ents):
        assert kb_id == "NIL" or kb_id in {"D1", "D2", "D3", "D4"}
        assert is_nil == (kb_id == "NIL") and 0.0 <= nil_score <= 1.0
        assert all(isinstance(pair, tuple) and 0.0 <= pair[1] <= 1.0 for pair in kb_ents)
        if not any(c.isalnum() for c in ent.text):
            assert is_nil and kb_ents == [] and prob == 0.0


def test_mentions_without_letter_or_digit_are_nil_and_counted(nlp):
    linker = nlp.get_pipe("bioel_linker")
    before = linker.counts["nil_without_alnum"]
    doc = nlp.make_doc("asthma \u200b ... \x00 😀 asthma")
    doc.ents = [spacy.tokens.Span(doc, i, i + 1, label="Disease") for i in range(len(doc))]
    out = nlp(doc)
    symbolic = [e for e in out.ents if not any(c.isalnum() for c in e.text)]
    assert symbolic and all(e.kb_id_ == "NIL" and e._.kb_ents == [] for e in symbolic)
    assert out.ents[0].kb_id_ != "NIL" or out.ents[0]._.kb_ents  # a word is still ranked
    assert linker.counts["nil_without_alnum"] - before == len(symbolic)
    linker.set_option("nil_without_alnum", False)
    try:
        again = nlp(nlp.make_doc("..."))
        again.ents = [spacy.tokens.Span(again, 0, 1, label="Disease")]
        assert nlp(again).ents[0]._.kb_ents  # configurable: ranked like any mention
    finally:
        linker.set_option("nil_without_alnum", True)


N_PROCESS_SCRIPT = textwrap.dedent("""
    import sys
    import spacy
    from pathlib import Path
    sys.path[:0] = [sys.argv[2], str(Path(sys.argv[2]).parents[1])]  # test_docs, tests.utils
    import json
    from test_docs import build
    nlp = build(sys.argv[1], **json.loads(sys.argv[3]))
    texts = ["colon cancer and heart attack in asthma " * 8] * 24
    def docs():
        for text in texts:
            doc = nlp.make_doc(text)
            doc.ents = [doc.char_span(0, 12, "Disease"), doc.char_span(17, 29, "Disease")]
            yield doc
    def out(stream):
        return [[(e.kb_id_, e._.kb_ents, e._.nil_score) for e in d.ents] for d in stream]
    single = out(nlp.pipe(docs()))  # the parent runs inference with its default thread pool
    multi = out(nlp.pipe(docs(), n_process=2, batch_size=4))
    assert multi == single, "n_process=2 differs"
    assert type(multi[0][0][1][0]) is tuple
    print("identical", len(multi))
""")


@pytest.mark.parametrize("settings", [
    {}, {"shortcut": {"@misc": "spacy-bioel.ExactShortcut.v1"}},
    pytest.param({"runtime": {"@misc": "spacy-bioel.OnnxRuntime.v1", "quantize": "int8"}},
                 marks=needs("onnxruntime", "onnx")),
    pytest.param({"runtime": {"@misc": "spacy-bioel.OnnxRuntime.v1", "quantize": "int8-all"},
                  "index": {"@misc": "spacy-bioel.NameIndex.v2", "index_type": "int8",
                            "vectors_dtype": "float16"}},
                 marks=needs("onnxruntime", "onnx"))],
    ids=["default", "shortcut", "onnx-int8", "onnx-int8-scan"])
def test_n_process_2_matches_n_process_1_with_default_threads(tiny_bert_dir, tmp_path, settings):
    import json
    import os
    from pathlib import Path

    script = tmp_path / "run.py"
    script.write_text(N_PROCESS_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    result = subprocess.run([sys.executable, str(script), str(tiny_bert_dir),
                             str(Path(__file__).parent), json.dumps(settings)],
                            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "identical 24" in result.stdout


def test_without_faiss_a_saved_pipeline_loads_and_searches_with_numpy(nlp, tmp_path, monkeypatch):
    from spacy_bioel.index import dense

    doc = nlp.make_doc("colon cancer")
    doc.ents = [spacy.tokens.Span(doc, 0, 2, label="Disease")]
    want = output(nlp(doc))
    nlp.to_disk(tmp_path / "p")
    monkeypatch.setattr(dense, "faiss_available", lambda: False)
    monkeypatch.setitem(sys.modules, "faiss", None)  # `import faiss` raises ImportError
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe("bioel_linker").index.store.backend == "numpy"
    doc = loaded.make_doc("colon cancer")
    doc.ents = [spacy.tokens.Span(doc, 0, 2, label="Disease")]
    got = output(loaded(doc))
    assert [g[2] for g in got] == [w[2] for w in want]
    assert np.allclose([p for _, p in got[0][3]], [p for _, p in want[0][3]], atol=1e-5)
    store = dense.DenseCandidateStore(["A"], 4, backend="faiss")  # flat: exact BLAS search
    assert store.backend == "numpy"
    with pytest.raises(BioELError, match="E177"):
        dense.DenseCandidateStore(["A"], 4, index_type="hnsw", backend="faiss")


class CountingStr(str):
    """Counts the characters of every slice taken from it."""
    sliced = 0

    def __getitem__(self, key):
        value = str.__getitem__(self, key)
        CountingStr.sliced += len(value)
        return value


def test_abbreviation_detection_is_linear_on_200k_characters():
    from spacy_bioel.pipeline.abbreviations import find_abbreviations

    parts, expected = [], {}
    i = 0
    while sum(map(len, parts)) < 200_000:
        short = f"Q{i:05d}"
        long_form = f"quite unusual {short.lower()[1:]} syndrome"
        parts.append(f"We saw {long_form} ({short}) here. ")
        expected[short] = None
        i += 1
    text = CountingStr("".join(parts))
    CountingStr.sliced = 0
    found = find_abbreviations(text)
    assert len(text) >= 200_000 and len(expected) > 3500
    assert set(found) == set(expected)
    assert CountingStr.sliced < 20 * len(text)  # quadratic code reads ~ n^2 / 2 characters


def test_tuning_skips_mentions_without_letter_or_digit(tiny_bert_dir):
    from spacy_bioel.pipeline.tuning import tune_linker

    nlp = build(tiny_bert_dir)
    doc = nlp.make_doc("asthma ... colon cancer")
    doc.ents = [spacy.tokens.Span(doc, 0, 1, label="Disease", kb_id="D3"),
                spacy.tokens.Span(doc, 1, 2, label="Disease", kb_id="D3"),
                spacy.tokens.Span(doc, 2, 4, label="Disease", kb_id="D1")]
    result = tune_linker(nlp.get_pipe("bioel_linker"), [doc],
                         grid={"k": [1], "lambda": [0.0], "beta1": [0.05], "beta2": [1.0]})
    assert result["n_without_alnum"] == 1 and result["n"] == 2

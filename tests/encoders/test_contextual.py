"""The contextual mention tower (`spacy-bioel.ContextualBiEncoder.v1`): span pooling over
an upstream component's token vectors. spaCy's own `tok2vec` component and listener
stand in for the transformer in the main environment; the spacy-transformers tests run
where the `trf` extra is installed (`make test` runs them in .venv-trf)."""
import sys

import numpy as np
import pytest
import spacy
from thinc.api import Model

from spacy_bioel.encoders.spans import embed_entities, span_input
from spacy_bioel.research.contextual import build_contextual_biencoder, l2_normalize
from spacy_bioel.errors import BioELError
from tests.utils import gold_examples

ROWS = [("colon cancer and heart attack", [(0, 12, "D1"), (17, 29, "D2")]),
        ("asthma in a child", [(0, 6, "D3")])]


def _kb():
    from spacy_bioel import Concept, KnowledgeBase

    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("colon cancer",)))
    kb.add(Concept("D2", "myocardial infarction", ("heart attack",)))
    kb.add(Concept("D3", "asthma"))
    return kb


def _tok2vec_pipeline(tiny_bert_dir, width: int = 32, use_knn: bool = False):
    """tok2vec (spaCy's CNN, `width` wide) + a bioel_linker whose mentions listen to it."""
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec", config={"model": {
        "@architectures": "spacy.Tok2Vec.v2",
        "embed": {"@architectures": "spacy.MultiHashEmbed.v2", "width": width,
                  "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"], "rows": [500, 100, 100, 50],
                  "include_static_vectors": False},
        "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": width,
                   "depth": 1, "window_size": 1, "maxout_pieces": 2}}})
    nlp.add_pipe("bioel_linker", config={
        "model": {"@architectures": "spacy-bioel.ContextualBiEncoder.v1",
                  "encoder": str(tiny_bert_dir), "max_length": 16,
                  "tok2vec": {"@architectures": "spacy.Tok2VecListener.v1", "width": width,
                              "upstream": "tok2vec"}},
        "ranker": {"@misc": "spacy-bioel.KNNRanker.v1", "use_knn": use_knn},
        # the default runtime (ONNX) encodes mention texts: a contextual linker names PyTorch's
        "runtime": {"@misc": "spacy-bioel.TorchRuntime.v1"},
        "shortcut": None})  # every mention read in its context, exact KB names too
    nlp.get_pipe("bioel_linker").set_kb(_kb())
    return nlp, gold_examples(nlp, ROWS)


def _initialized(tiny_bert_dir, **kwargs):
    nlp, examples = _tok2vec_pipeline(tiny_bert_dir, **kwargs)
    nlp.initialize(lambda: examples)
    return nlp, examples


def test_l2_normalize_gradient_matches_finite_differences():
    layer = l2_normalize()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 5)).astype("float64")
    Y, backprop = layer(X, is_train=True)
    assert np.allclose(np.linalg.norm(Y, axis=1), 1.0)
    dY = rng.normal(size=Y.shape)
    dX = backprop(dY)
    eps, numeric = 1e-6, np.zeros_like(X)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            step = np.zeros_like(X)
            step[i, j] = eps
            up, _ = layer(X + step, is_train=False)
            down, _ = layer(X - step, is_train=False)
            numeric[i, j] = ((up - down) * dY).sum() / (2 * eps)
    assert np.allclose(dX, numeric, atol=1e-6)


def test_span_embedding_is_the_normalised_mean_of_the_mention_tokens(tiny_bert_dir):
    nlp = spacy.blank("en")
    docs = [nlp.make_doc("colon cancer and heart attack"), nlp.make_doc("asthma in a child")]
    table = {id(d): np.arange(len(d) * 32, dtype="float32").reshape(len(d), 32) % 7 + i
             for i, d in enumerate(docs)}

    def forward(model, batch, is_train):
        return [table[id(d)] for d in batch], lambda d_out: []

    model = build_contextual_biencoder(Model("fixed", forward), encoder=str(tiny_bert_dir),
                                       max_length=16)
    model.initialize()
    out = embed_entities(model, [(docs[1], 0, 1), (docs[0], 3, 5), (docs[0], 0, 2)])
    for row, (d, start, end) in zip(out, [(1, 0, 1), (0, 3, 5), (0, 0, 2)]):
        mean = table[id(docs[d])][start:end].mean(axis=0)
        assert np.allclose(row, mean / np.linalg.norm(mean), atol=1e-6)


def test_the_same_text_in_two_contexts_is_read_differently(tiny_bert_dir):
    nlp, _ = _initialized(tiny_bert_dir)
    first = nlp("severe asthma today")
    second = nlp("childhood asthma attacks")
    for doc in (first, second):
        doc.ents = [doc.char_span(doc.text.index("asthma"), doc.text.index("asthma") + 6,
                                  label="Disease")]
    linker = nlp.get_pipe("bioel_linker")
    a, b = (nlp.get_pipe("tok2vec")(d) for d in (first, second))
    one, two = embed_entities(linker.model, [(a, 1, 2), (b, 1, 2)])
    assert not np.allclose(one, two)
    linked = list(nlp.pipe([first.text, second.text]))  # no ents: nothing to read, no error
    assert all(not d.ents for d in linked)
    scores = []
    for doc in (first, second):  # linked through the pipeline: every ent decided on its own
        doc = linker(nlp.get_pipe("tok2vec")(doc))
        scores.append(dict(doc.ents[0]._.kb_ents))
    assert scores[0] != scores[1]


def test_training_steps_the_upstream_tok2vec_and_not_the_concept_tower(tiny_bert_dir):
    from spacy_bioel.encoders.thinc_biencoder import torch_module

    nlp, examples = _initialized(tiny_bert_dir)
    tok2vec = nlp.get_pipe("tok2vec").model
    before = {(node.id, name): node.get_param(name).copy() for node in tok2vec.walk()
              for name in node.param_names if node.has_param(name)}
    module = torch_module(nlp.get_pipe("bioel_linker").model)
    concept = {k: v.clone() for k, v in module.state_dict().items()}
    optimizer = nlp.create_optimizer()
    losses = {}
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert losses["bioel_linker"] > 0
    changed = [key for key, value in before.items()
               if not np.array_equal(value, next(n for n in tok2vec.walk() if n.id == key[0])
                                     .get_param(key[1]))]
    assert changed, "the linker's loss did not reach the upstream tok2vec"
    assert all(np.array_equal(v.numpy(), module.state_dict()[k].numpy()) for k, v in concept.items())


def test_saved_pipeline_links_the_same(tiny_bert_dir, tmp_path):
    nlp, examples = _initialized(tiny_bert_dir)
    nlp.update(examples, sgd=nlp.create_optimizer())
    nlp.get_pipe("bioel_linker").refresh()

    def link(pipeline):
        doc = pipeline.make_doc("colon cancer and heart attack")
        doc.ents = [doc.char_span(0, 12, label="Disease"), doc.char_span(17, 29, label="Disease")]
        for _, proc in pipeline.pipeline:
            doc = proc(doc)
        return [(e.kb_id_, [round(p, 5) for _, p in e._.kb_ents[:3]]) for e in doc.ents]

    expected = link(nlp)
    nlp.to_disk(tmp_path / "pipeline")
    assert link(spacy.load(tmp_path / "pipeline")) == expected


def test_stages_that_encode_mention_texts_are_refused(tiny_bert_dir):
    nlp, examples = _tok2vec_pipeline(tiny_bert_dir, use_knn=True)
    with pytest.raises(BioELError) as err:
        nlp.initialize(lambda: examples)
    assert err.value.code == "E212" and "use_knn = false" in str(err.value)
    nlp, _ = _initialized(tiny_bert_dir)
    with pytest.raises(BioELError, match="E212"):
        nlp.get_pipe("bioel_linker").embed(["asthma"], "mention")


def test_token_vectors_of_another_width_are_refused(tiny_bert_dir):
    nlp, examples = _initialized(tiny_bert_dir, width=16)
    with pytest.raises(BioELError) as err:
        nlp.update(examples, sgd=nlp.create_optimizer())
    assert err.value.code == "E210" and "16 wide" in str(err.value)


def test_tuning_reads_mentions_through_the_upstream_component(tiny_bert_dir):
    """`tune` gives the linker dev docs the upstream component has read (gold ents and
    their ids kept); without that, the listener would read no token vectors."""
    from spacy_bioel.pipeline.loading import upstream_annotated
    from spacy_bioel.pipeline.tuning import tune_linker

    nlp, examples = _initialized(tiny_bert_dir)
    linker = nlp.get_pipe("bioel_linker")
    docs = [eg.reference for eg in examples]
    read = upstream_annotated(nlp, linker, docs)
    assert all(d.tensor.shape == (len(d), 32) for d in read)
    assert [[e.kb_id_ for e in d.ents] for d in read] == [["D1", "D2"], ["D3"]]
    result = tune_linker(linker, read, {"k": [1], "lambda": [0.0], "beta1": [0.05],
                                        "beta2": [1.0]}, [0.0])
    assert result["grid"] and result["grid"][0]["acc@1"] is not None


def test_an_ner_and_the_linker_share_one_upstream_component(tiny_bert_dir):
    """tok2vec -> ner (listener) -> bioel_linker (listener): one update trains both
    heads on the shared token vectors, and linking reads the entities the NER found."""
    from spacy.training import Example

    nlp, _ = _tok2vec_pipeline(tiny_bert_dir)
    nlp.add_pipe("ner", before="bioel_linker", config={"model": {
        "@architectures": "spacy.TransitionBasedParser.v2", "state_type": "ner",
        "extra_state_tokens": False, "hidden_width": 16, "maxout_pieces": 2, "use_upper": True,
        "tok2vec": {"@architectures": "spacy.Tok2VecListener.v1", "width": 32,
                    "upstream": "tok2vec"}}})
    examples = []
    for text, spans in ROWS:
        reference = nlp.make_doc(text)
        reference.ents = [reference.char_span(s, e, label="Disease", kb_id=c) for s, e, c in spans]
        examples.append(Example(nlp.make_doc(text), reference))
    nlp.initialize(lambda: examples)
    assert nlp.get_pipe("tok2vec").listening_components == ["ner", "bioel_linker"]
    from thinc.api import Adam

    optimizer, losses = Adam(0.01), {}  # the linker's only trained weights are upstream
    for _ in range(40):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert losses["ner"] > 0 and losses["bioel_linker"] > 0
    doc = nlp("colon cancer and heart attack")
    assert doc.ents, "the NER learned nothing on its two training docs"
    assert all(e.kb_id_ in {"D1", "D2", "D3", "NIL"} and e._.kb_ents for e in doc.ents)


def test_span_input_keeps_docs_without_mentions(tiny_bert_dir):
    nlp = spacy.blank("en")
    docs = [nlp.make_doc("a b"), nlp.make_doc("c"), nlp.make_doc("d e f")]
    from thinc.api import NumpyOps

    batch, spans = span_input(docs, [[(0, 1)], [], [(1, 3), (0, 1)]], NumpyOps())
    assert batch == docs and spans.lengths.tolist() == [1, 0, 2]
    assert spans.dataXd.tolist() == [[0, 1], [1, 3], [0, 1]]


# --------------------------------------------------------------------- spacy-transformers
def _train_trf(tmp_path, tiny_bert_dir, *extra):
    import subprocess

    from tests.utils import write_toy_linking_data

    write_toy_linking_data(tmp_path, nil=False, repeat=3)
    return subprocess.run(
        [sys.executable, "-m", "spacy", "train", "configs/linker_trf.cfg",
         "--output", str(tmp_path / "out"), "--paths.train", str(tmp_path / "data.spacy"),
         "--paths.dev", str(tmp_path / "data.spacy"), "--paths.kb", str(tmp_path / "kb.bioelkb"),
         "--paths.encoder", str(tiny_bert_dir), "--training.max_epochs", "3",
         "--training.eval_frequency", "2", "--components.bioel_linker.model.max_length", "16",
         "--components.transformer.model.get_spans.window", "32",
         "--components.transformer.model.get_spans.stride", "24", *extra],
        capture_output=True, text=True, cwd=str(REPO_ROOT))


from tests.conftest import REPO_ROOT  # noqa: E402


def test_spacy_train_with_a_transformer_component(tiny_bert_dir, tmp_path):
    pytest.importorskip("spacy_transformers", reason="the trf extra is not installed here "
                        "(make test runs these tests in .venv-trf)")
    result = _train_trf(tmp_path, tiny_bert_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    nlp = spacy.load(tmp_path / "out" / "model-last")
    assert nlp.pipe_names == ["transformer", "bioel_linker"]
    # the linker's loss reached the transformer (its loss column is not zero)
    losses = [line.split()[2] for line in result.stdout.splitlines()
              if line.strip()[:1].isdigit() and len(line.split()) >= 7]
    assert losses and any(float(value) > 0 for value in losses), result.stdout[-2000:]
    doc = nlp.make_doc("colon cancer and heart attack")
    doc.ents = [doc.char_span(0, 12, label="Disease"), doc.char_span(17, 29, label="Disease")]
    doc = nlp(doc)
    assert all(e.kb_id_ in {"D1", "D2", "D3", "NIL"} and e._.kb_ents for e in doc.ents)
    other = nlp.make_doc("a severe colon cancer in a child")
    other.ents = [other.char_span(9, 21, label="Disease")]
    other = nlp(other)
    assert doc.ents[0]._.kb_ents != other.ents[0]._.kb_ents  # the same text, another context
    with nlp.select_pipes(disable=["transformer"]):
        bare = nlp.make_doc("colon cancer")
        bare.ents = [bare.char_span(0, 12, label="Disease")]
        with pytest.raises(BioELError, match="E211"):
            nlp(bare)


def test_transformer_model_resolves_the_embedded_name_only_when_loading():
    pytest.importorskip("spacy_transformers", reason="the trf extra is not installed here")
    from spacy_bioel.research.trf import build_transformer_model

    model = build_transformer_model("embedded:all-MiniLM-L6-v2")
    assert model.attrs["name"] == "embedded:all-MiniLM-L6-v2"  # nothing loaded yet


def test_transformer_model_without_spacy_transformers_says_what_to_install(monkeypatch):
    import builtins

    from spacy_bioel.research.trf import build_transformer_model

    real = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name.startswith("spacy_transformers"):
            raise ImportError(name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)
    with pytest.raises(BioELError) as err:
        build_transformer_model("x")
    assert err.value.code == "E213" and "spacy-bioel[models,trf]" in str(err.value)

"""`spacy-bioel.TransformerTokens.v1`: a transformer reads each document in context;
its word pieces are averaged per spaCy token over overlapping windows."""
import numpy as np
import pytest
import spacy
from thinc.api import Adam

from spacy_bioel.errors import BioELError
from spacy_bioel.ner.pieces import WordPieces, piece_batch, windows
from spacy_bioel.ner.transformer_tokens import build_transformer_tokens
from tests.utils import trained_context_ner

pytest.importorskip("torch", reason="the train extra")


def test_windows_cover_every_piece_and_overlap():
    assert windows(5, 8, 4) == [(0, 5)]
    spans = windows(20, 8, 5)
    assert spans[0] == (0, 8) and spans[-1] == (12, 20)
    covered = set()
    for start, end in spans:
        assert end - start == 8
        covered.update(range(start, end))
    assert covered == set(range(20))


def test_pieces_know_their_tokens(tiny_bert_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_dir))
    nlp = spacy.blank("en")
    docs = [nlp("colon cancer"), nlp("asthma")]
    ids, mask, index = piece_batch(WordPieces.from_hf(tokenizer), docs, 64, 32)
    assert ids.shape[0] == 2 and mask.sum() == ids.shape[0] * 2 + (index >= 0).sum()
    assert set(index[0][index[0] >= 0]) == {0, 1} and set(index[1][index[1] >= 0]) == {2}


def test_long_documents_read_in_windows_give_a_vector_per_token(tiny_bert_dir):
    nlp = spacy.blank("en")
    model = build_transformer_tokens(str(tiny_bert_dir), window=12, stride=6)
    model.initialize()
    text = " ".join(["colon cancer and asthma ."] * 10) + "\n\n"
    short, long = nlp("colon cancer"), nlp(text)
    out = model.predict([short, long])
    assert [o.shape for o in out] == [(2, 32), (len(long), 32)]
    assert np.abs(out[1][-1]).sum() == 0.0  # the white-space token has no piece
    assert np.isfinite(out[1]).all()
    alone = build_transformer_tokens(str(tiny_bert_dir), window=60, stride=60).predict([short])
    assert np.allclose(alone[0], out[0], atol=1e-5)  # a short doc is one window either way


def test_frozen_trains_only_the_mix(tiny_bert_dir):
    from spacy_bioel.encoders.thinc_biencoder import torch_module  # noqa: F401

    model = build_transformer_tokens(str(tiny_bert_dir), window=12, stride=6, frozen=True)
    module = model.layers[0].shims[0]._model
    trainable = {n for n, p in module.named_parameters() if p.requires_grad}
    assert trainable == {"mix", "scale"}
    nlp = spacy.blank("en")
    docs = [nlp("colon cancer and asthma")]
    out, backprop = model.begin_update(docs)
    before = module.mix.detach().clone()
    backprop([model.ops.alloc2f(*o.shape) + 1.0 for o in out])
    model.finish_update(Adam(0.1))
    assert not np.allclose(before.numpy(), module.mix.detach().numpy())


def test_an_ner_trains_on_it_and_its_pipeline_saves_and_loads(tiny_bert_dir, tmp_path):
    nlp = trained_context_ner(tiny_bert_dir)
    assert [(e.text, e.label_) for e in nlp("Patients with colon cancer .").ents] == \
        [("colon cancer", "Disease")]
    nlp.to_disk(tmp_path / "ner")
    loaded = spacy.load(tmp_path / "ner")
    assert [e.text for e in loaded("Patients with colon cancer .").ents] == ["colon cancer"]


def test_the_encoder_trains_at_its_own_warmed_up_rate(tiny_bert_dir):
    """Not frozen: the encoder's parameters move at `encoder_lr_scale` times the
    optimizer's rate (0: not at all), warmed up linearly; the mix at the full rate."""
    nlp = spacy.blank("en")
    docs = [nlp("colon cancer and asthma")]

    def step(scale, warmup=0):
        model = build_transformer_tokens(str(tiny_bert_dir), window=12, stride=6, frozen=False,
                                         encoder_lr_scale=scale, warmup_steps=warmup)
        shim = model.layers[0].shims[0]
        module = shim._model
        before = {n: p.detach().clone() for n, p in module.named_parameters()}
        out, backprop = model.begin_update(docs)
        backprop([model.ops.alloc2f(*o.shape) + 1.0 for o in out])
        model.finish_update(Adam(0.01))
        moved = {n: not np.allclose(before[n].numpy(), p.detach().numpy())
                 for n, p in module.named_parameters()}
        return shim, moved

    _, moved = step(0.0)
    assert moved["mix"] and not any(v for n, v in moved.items() if n.startswith("transformer."))
    shim, moved = step(0.5, warmup=4)
    assert any(v for n, v in moved.items() if n.startswith("transformer."))
    assert shim.updates == 1 and shim.encoder_scale() == pytest.approx(0.5 * 2 / 4)


def test_word_pieces_are_the_fast_tokenizers_split_words(tiny_bert_dir):
    """The pieces come from the Rust tokenizer alone, as transformers' own call
    with is_split_into_words gives them (ids and each piece's word)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_dir))
    words = ["Colon", "cancer", "(", "CRC-2", ")", "\n\n", "x's", "Ménière", ""]
    expected = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
    ids, owners = WordPieces.from_hf(tokenizer)(words)
    assert ids == expected["input_ids"]
    assert owners == [w if w is not None else -1 for w in expected.word_ids()]
    assert 5 not in owners  # the white-space token has no piece


def test_first_layers_only(tiny_bert_dir):
    model = build_transformer_tokens(str(tiny_bert_dir), window=12, stride=6, layers=1)
    module = model.layers[0].shims[0]._model
    assert len(module.transformer.encoder.layer) == 1 and module.mix.shape[0] == 2
    assert model.predict([spacy.blank("en")("colon cancer")])[0].shape == (2, 32)
    with pytest.raises(BioELError, match="E175"):
        build_transformer_tokens(str(tiny_bert_dir), layers=3)

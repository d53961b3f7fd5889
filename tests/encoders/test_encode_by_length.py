"""BiEncoder.encode_by_length: sub-batches sorted by length give the embeddings
and gradients of the padded batch, rows in the input order."""
import pytest
import torch

from spacy_bioel.encoders.torch_biencoder import BiEncoder, load_transformer

NAMES = ["mi", "colorectal carcinoma of the sigmoid colon with liver metastases", "asthma",
         "type 2 diabetes mellitus", "crc", "adult onset diabetes", "kidney failure", "t2dm",
         "reactive airway disease in children", "hepatoblastoma"]


def batch(tiny_bert_dir, texts=NAMES, padding_side="right"):
    tokenizer, transformer = load_transformer(str(tiny_bert_dir))
    tokenizer.padding_side = padding_side
    torch.manual_seed(0)
    model = BiEncoder(transformer, pooling="mean", similarity="cosine").eval()
    encoded = tokenizer(list(texts), padding=True, truncation=True, max_length=32,
                        return_tensors="pt")
    return model, encoded["input_ids"], encoded["attention_mask"]


@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 10, 50])
def test_sorted_sub_batches_give_the_padded_batch_embeddings(tiny_bert_dir, chunks):
    model, ids, mask = batch(tiny_bert_dir)
    with torch.no_grad():
        whole = model.encode("mention", ids, mask)
        by_length = model.encode_by_length("mention", ids, mask, chunks)
    assert by_length.shape == whole.shape
    torch.testing.assert_close(by_length, whole, atol=1e-5, rtol=1e-4)


def test_sorted_sub_batches_compute_less_padding(tiny_bert_dir, monkeypatch):
    model, ids, mask = batch(tiny_bert_dir)
    widths = []
    encode = model.encode

    def spy(tower, input_ids, attention_mask, inputs_embeds=None):
        widths.append(tuple(input_ids.shape))
        return encode(tower, input_ids, attention_mask, inputs_embeds)

    monkeypatch.setattr(model, "encode", spy)
    with torch.no_grad():
        model.encode_by_length("mention", ids, mask, 2)
    assert sum(rows for rows, _ in widths) == len(NAMES)
    assert widths[0][1] < ids.shape[1] == widths[1][1]  # the short half is cut


def test_gradients_match_the_padded_batch(tiny_bert_dir):
    model, ids, mask = batch(tiny_bert_dir)
    target = torch.linspace(-1, 1, model.dim)

    def grads(embed):
        model.zero_grad()
        (embed() @ target).pow(2).sum().backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    whole = grads(lambda: model.encode("mention", ids, mask))
    by_length = grads(lambda: model.encode_by_length("mention", ids, mask, 3))
    assert len(whole) == len(by_length)
    for a, b in zip(whole, by_length):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-3)


def test_left_padding_keeps_every_column(tiny_bert_dir):
    model, ids, mask = batch(tiny_bert_dir, padding_side="left")
    with torch.no_grad():
        whole = model.encode("mention", ids, mask)
        by_length = model.encode_by_length("mention", ids, mask, 3)
    torch.testing.assert_close(by_length, whole, atol=1e-5, rtol=1e-4)


def test_forward_encodes_a_cpu_batch_by_length_and_keeps_the_order(tiny_bert_dir, monkeypatch):
    model, ids, mask = batch(tiny_bert_dir)
    with torch.no_grad():
        whole = model.encode("mention", ids, mask)
    calls = []
    by_length = model.encode_by_length

    def spy(tower, input_ids, attention_mask, chunks):
        calls.append(chunks)
        return by_length(tower, input_ids, attention_mask, chunks)

    monkeypatch.setattr(model, "encode_by_length", spy)
    with torch.no_grad():
        single = model(ids, mask, "mention")
        both = model(None, segments=[("mention", ids, mask, None), ("concept", ids[:3], mask[:3], None)])
    assert calls == [4, 4, 4]  # the default on a CPU, for a batch and for each segment
    torch.testing.assert_close(single, whole, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(both[:len(NAMES)], whole, atol=1e-5, rtol=1e-4)
    model.cpu_length_chunks = 1
    with torch.no_grad():
        torch.testing.assert_close(model(ids, mask, "mention"), whole, atol=1e-5, rtol=1e-4)

"""`load_transformer` gives float32 weights whatever dtype a checkpoint was saved in
(transformers 5 keeps the saved dtype; half-precision training on a CPU gives NaN)."""
import shutil

import pytest
import torch

from spacy_bioel.encoders.torch_biencoder import BiEncoder, encode_texts, load_transformer


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_checkpoint_loads_in_float32(tiny_bert_dir, tmp_path, dtype):
    from transformers import AutoModel

    folder = tmp_path / "half"
    shutil.copytree(tiny_bert_dir, folder)
    AutoModel.from_pretrained(str(tiny_bert_dir)).to(dtype).save_pretrained(folder)
    tokenizer, model = load_transformer(str(folder))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    embeddings = encode_texts(BiEncoder(model), tokenizer, ["colon cancer", "asthma"])
    assert torch.isfinite(embeddings).all()
    _, shell = load_transformer(str(folder), config_only=True)
    assert {p.dtype for p in shell.parameters()} == {torch.float32}

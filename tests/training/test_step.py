"""One backward pass per update: the single-pass step gives the gradients of the
old two-pass step, and with gradient scaling on, only the single pass is right."""
import string
import numpy as np
import pytest
import spacy
import torch
from thinc.api import torch2xp, xp2torch

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.encoders.thinc_biencoder import torch_module
from spacy_bioel.training.negatives import NegativeSampler
from spacy_bioel.training.step import MentionBatch, train_step
from tests.utils import torch_linker

MENTIONS = ["colon cancer", "heart attack", "asthma"]


@pytest.fixture(scope="module")
def no_dropout_bert(tmp_path_factory):
    """A tiny BERT without dropout: train-mode and eval-mode passes agree, so both
    steps sample the same negatives and see the same activations."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = tmp_path_factory.mktemp("bert_no_dropout")
    chars = list(string.ascii_lowercase + string.digits) + list("[]/-'(),.")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast.from_pretrained(str(path), do_lower_case=True)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build(path, mixed_precision=False):
    kb = KnowledgeBase()
    for cid, name in [("D1", "colorectal carcinoma"), ("D2", "myocardial infarction"),
                      ("D3", "asthma"), ("D4", "gout"), ("D5", "rickets")]:
        kb.add(Concept(cid, name))
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("bioel_linker", config=torch_linker({"model": {
        "@architectures": "spacy-bioel.BiEncoder.v1", "encoder": str(path), "max_length": 16,
        "mixed_precision": mixed_precision}}))
    linker.set_kb(kb)
    torch.manual_seed(0)
    nlp.initialize(lambda: [])
    return linker


def grads(linker):
    return {k: p.grad.detach().clone() for k, p in torch_module(linker.model).named_parameters()
            if p.grad is not None}


def zero(linker):
    for p in torch_module(linker.model).parameters():
        p.grad = None


def two_pass(linker, batch, sampler, rng):
    """The step as it was: two begin_update calls, two backprops through the shim."""
    model = linker.model
    out_m, backprop_m = model.begin_update((batch.texts, "mention"))
    queries = model.ops.to_numpy(out_m)
    positives, negatives, p = sampler(queries, batch.gold, linker.index, rng)
    names = [linker.index.names.names[i] for i in positives + negatives]
    out_n, backprop_n = model.begin_update((names, "concept"))
    m = xp2torch(out_m, requires_grad=True)
    n = xp2torch(out_n, requires_grad=True)
    size = len(batch.texts)
    loss = linker.loss(m, n[:size], n[size:].reshape(size, p, -1), torch.tensor(batch.gold),
                       torch.tensor(batch.groups))
    loss.backward()
    backprop_m(torch2xp(m.grad))
    backprop_n(torch2xp(n.grad))
    return float(loss.detach())


def compare(linker, scale_shim=None):
    batch = MentionBatch(MENTIONS, [0, 1, 2], [0, 0, 1])
    sampler = NegativeSampler(2)
    zero(linker)
    single_loss = train_step(linker.model, linker.loss, batch, linker.index, sampler, None,
                             np.random.default_rng(0))
    single = grads(linker)
    zero(linker)
    double_loss = two_pass(linker, batch, sampler, np.random.default_rng(0))
    double = grads(linker)
    zero(linker)
    assert single_loss == pytest.approx(double_loss, rel=1e-5)
    return single, double


def test_one_backward_equals_two_passes_without_scaling(no_dropout_bert):
    linker = build(no_dropout_bert)
    single, double = compare(linker)
    assert single.keys() == double.keys() and single
    for key in single:
        assert torch.allclose(single[key], double[key], atol=1e-6, rtol=1e-4), key


class CPUScaler:
    """thinc's PyTorchGradScaler protocol (scale the output gradient, unscale every
    gradient after backward) on CPU tensors, which thinc's own scaler refuses."""

    found_inf = False

    def __init__(self, scale: float) -> None:
        self.factor = scale

    def scale(self, tensors, inplace=False):
        if isinstance(tensors, torch.Tensor):
            return tensors * self.factor
        return type(tensors)(t * self.factor for t in tensors)

    def unscale(self, tensors):
        for tensor in tensors:
            tensor.mul_(1.0 / self.factor)
        return False

    def update(self):
        pass


def test_with_gradient_scaling_only_one_backward_is_right(no_dropout_bert):
    """thinc's shim unscales every gradient after each backward: with loss scaling
    on, the two-pass step divides the first pass's gradients by the scale once
    more. The one-pass step matches the unscaled gradients."""
    reference, _ = compare(build(no_dropout_bert))
    linker = build(no_dropout_bert)
    linker.model.layers[0].shims[0]._grad_scaler = CPUScaler(2.0 ** 8)
    single, double = compare(linker)
    for key in reference:
        assert torch.allclose(single[key], reference[key], atol=1e-5, rtol=1e-3), key
    assert any(not torch.allclose(double[k], reference[k], atol=1e-5, rtol=1e-3) for k in reference)


@pytest.mark.gpu
def test_mixed_precision_gradients_match_full_precision_on_cuda(no_dropout_bert):
    """On a GPU, the one-pass step with mixed precision (autocast + loss scaling)
    gives the full-precision gradients up to fp16 rounding."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from thinc.api import require_gpu

    require_gpu(0)
    full = compare(build(no_dropout_bert, mixed_precision=False))[0]
    mixed = compare(build(no_dropout_bert, mixed_precision=True))[0]
    for key in full:
        scale = full[key].abs().max().clamp(min=1e-6)
        assert ((mixed[key] - full[key]).abs().max() / scale) < 5e-2, key

import math

import pytest
import torch

from spacy_bioel.losses import InfoNCELoss


def loop_loss(m, e, hard, ids, tau, in_batch=True):
    """kNN-BioEL eq. 3 written as a plain loop."""
    total = 0.0
    batch = m.shape[0]
    for i in range(batch):
        delta = lambda x: math.exp(float(m[i] @ x) / tau)  # noqa: E731
        positive = delta(e[i])
        denominator = positive
        if in_batch:
            for j in range(batch):
                if j != i and ids[j] != ids[i]:
                    denominator += delta(e[j])
        if hard is not None:
            for q in range(hard.shape[1]):
                denominator += delta(hard[i, q])
        total += -math.log(positive / denominator)
    return total / batch


@pytest.fixture
def inputs():
    torch.manual_seed(0)
    norm = torch.nn.functional.normalize
    m = norm(torch.randn(5, 8, dtype=torch.float64), dim=-1)
    e = norm(torch.randn(5, 8, dtype=torch.float64), dim=-1)
    hard = norm(torch.randn(5, 3, 8, dtype=torch.float64), dim=-1)
    ids = torch.tensor([0, 1, 2, 1, 4])  # mentions 1 and 3 share a concept
    return m, e, hard, ids


@pytest.mark.parametrize("tau", [0.05, 0.5, 1.0])
@pytest.mark.parametrize("use_hard", [True, False])
@pytest.mark.parametrize("in_batch", [True, False])
def test_info_nce_matches_loop(inputs, tau, use_hard, in_batch):
    m, e, hard, ids = inputs
    hard = hard if use_hard else None
    loss = InfoNCELoss(temperature=tau, in_batch=in_batch)(m, e, hard, ids)
    assert float(loss) == pytest.approx(loop_loss(m, e, hard, ids, tau, in_batch), rel=1e-9)


def test_info_nce_gradcheck(inputs):
    m, e, hard, ids = inputs
    m = m.clone().requires_grad_(True)
    e = e.clone().requires_grad_(True)
    hard = hard.clone().requires_grad_(True)
    loss_fn = InfoNCELoss(temperature=0.3)
    assert torch.autograd.gradcheck(lambda a, b, c: loss_fn(a, b, c, ids), (m, e, hard))


def test_info_nce_prefers_aligned_pairs(inputs):
    m, _, hard, ids = inputs
    loss_fn = InfoNCELoss(temperature=0.1)
    assert loss_fn(m, m.clone(), hard, ids) < loss_fn(m, -m, hard, ids)

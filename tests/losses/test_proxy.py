import math

import pytest
import torch

from spacy_bioel.losses import InfoNCELoss, ProxyLoss


def loop_proxy(m, e, neg, ids, alpha, delta, in_batch):
    """Wiatrak et al. eq. 3 as a plain loop."""
    total = 0.0
    batch = m.shape[0]
    for i in range(batch):
        s_pos = float(m[i] @ e[i])
        negatives = [neg[i, q] for q in range(neg.shape[1])] if neg is not None else []
        if in_batch:
            negatives += [e[j] for j in range(batch) if ids[j] != ids[i]]
        pos = math.log(1 + math.exp(-alpha * (s_pos - delta)))
        neg_sum = sum(math.exp(alpha * (float(m[i] @ x) + delta)) for x in negatives)
        total += pos + math.log(1 + neg_sum)
    return total / batch


@pytest.fixture
def inputs():
    torch.manual_seed(0)
    norm = torch.nn.functional.normalize
    m = norm(torch.randn(5, 8, dtype=torch.float64), dim=-1)
    e = norm(torch.randn(5, 8, dtype=torch.float64), dim=-1)
    neg = norm(torch.randn(5, 3, 8, dtype=torch.float64), dim=-1)
    ids = torch.tensor([0, 1, 2, 1, 4])
    return m, e, neg, ids


@pytest.mark.parametrize("alpha", [1.0, 32.0])
@pytest.mark.parametrize("delta", [0.0, 0.1])
@pytest.mark.parametrize("use_neg", [True, False])
@pytest.mark.parametrize("in_batch", [True, False])
def test_proxy_matches_loop(inputs, alpha, delta, use_neg, in_batch):
    m, e, neg, ids = inputs
    neg = neg if use_neg else None
    loss = ProxyLoss(alpha=alpha, margin=delta, in_batch=in_batch)(m, e, neg, ids)
    assert float(loss) == pytest.approx(loop_proxy(m, e, neg, ids, alpha, delta, in_batch),
                                        rel=1e-9)


def test_proxy_gradcheck(inputs):
    m, e, neg, ids = inputs
    args = tuple(x.clone().requires_grad_(True) for x in (m, e, neg))
    loss_fn = ProxyLoss(alpha=4.0, margin=0.05)
    assert torch.autograd.gradcheck(lambda a, b, c: loss_fn(a, b, c, ids), args)


def test_proxy_pushes_negatives_to_low_absolute_similarity(inputs):
    """The decoupled negative term keeps a cost for a negative at similarity 0.9
    even when the positive is at 1.0; a softmax (InfoNCE) nearly ignores it."""
    m, _, _, _ = inputs
    ids = torch.arange(5)
    far = torch.nn.functional.normalize(m + 0.5 * torch.randn_like(m), dim=-1)
    hard = far.unsqueeze(1)  # (batch, 1, dim)
    proxy = ProxyLoss(alpha=32.0, in_batch=False)
    info = InfoNCELoss(temperature=1 / 32.0, in_batch=False)
    gap_proxy = float(proxy(m, m, hard, ids) - proxy(m, m, -hard, ids))
    gap_info = float(info(m, m, hard, ids) - info(m, m, -hard, ids))
    assert gap_proxy > 1.0 and gap_proxy > gap_info

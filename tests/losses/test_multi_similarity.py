import math

import pytest
import torch

from spacy_bioel.losses import MultiSimilarityLoss, mine_hard_pairs


def loop_loss(x, labels, alpha, beta, base, epsilon):
    """SapBERT eq. 1 with Wang et al.'s miner (eqs. 10-11), written as plain loops."""
    n = x.shape[0]
    s = [[float(x[i] @ x[j]) for j in range(n)] for i in range(n)]
    total = 0.0
    for i in range(n):
        pos = [j for j in range(n) if j != i and labels[j] == labels[i]]
        neg = [j for j in range(n) if labels[j] != labels[i]]
        if epsilon is not None:
            min_pos = min((s[i][j] for j in pos), default=math.inf)
            max_neg = max((s[i][j] for j in neg), default=-math.inf)
            neg = [j for j in neg if s[i][j] + epsilon > min_pos]
            pos = [j for j in pos if s[i][j] - epsilon < max_neg]
        total += math.log(1 + sum(math.exp(alpha * (s[i][j] - base)) for j in neg)) / alpha
        total += math.log(1 + sum(math.exp(-beta * (s[i][j] - base)) for j in pos)) / beta
    return total / n


@pytest.fixture
def batch():
    torch.manual_seed(0)
    x = torch.nn.functional.normalize(torch.randn(10, 6, dtype=torch.float64), dim=-1)
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 2, 3, 4, 4])  # concept 3 has one name
    return x, labels


@pytest.mark.parametrize("alpha,beta,base", [(2.0, 50.0, 0.5), (1.0, 10.0, 0.0), (4.0, 20.0, 0.3)])
@pytest.mark.parametrize("epsilon", [0.2, 0.0, 1.0, None])
def test_multi_similarity_matches_loop(batch, alpha, beta, base, epsilon):
    x, labels = batch
    loss = MultiSimilarityLoss(alpha, beta, base, epsilon)(x, labels)
    assert float(loss) == pytest.approx(loop_loss(x, labels, alpha, beta, base, epsilon), rel=1e-9)


def test_miner_keeps_only_margin_violations():
    # anchor 0: positive 1 at 0.9, negatives at 0.8 (kept: 0.8 + 0.2 > 0.9) and 0.1 (dropped)
    s = torch.tensor([[1.0, 0.9, 0.8, 0.1],
                      [0.9, 1.0, 0.0, 0.0],
                      [0.8, 0.0, 1.0, 0.0],
                      [0.1, 0.0, 0.0, 1.0]])
    labels = torch.tensor([0, 0, 1, 2])
    positive, negative = mine_hard_pairs(s, labels, epsilon=0.2)
    assert negative[0].tolist() == [False, False, True, False]
    assert positive[0].tolist() == [False, True, False, False]  # 0.9 - 0.2 < 0.8
    # anchor 1's hardest negative is 0.0: its positive 0.9 is no violation, nor its negatives
    assert not positive[1].any()
    assert negative[1].tolist() == [False, False, False, False]
    # anchors 2 and 3 have no positive: nothing is mined for them
    assert not positive[2:].any() and not negative[2:].any()


def test_multi_similarity_gradcheck(batch):
    x, labels = batch
    x = x.clone().requires_grad_(True)
    loss_fn = MultiSimilarityLoss(2.0, 5.0, 0.5, epsilon=None)
    assert torch.autograd.gradcheck(lambda a: loss_fn(a, labels), (x,))


def test_multi_similarity_rewards_aligned_synonyms():
    labels = torch.tensor([0, 0, 1, 1])
    aligned = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    crossed = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    loss_fn = MultiSimilarityLoss(epsilon=None)
    assert float(loss_fn(aligned, labels)) < float(loss_fn(crossed, labels))
    # with mining, a perfectly separated batch has no violating pair: loss 0
    assert float(MultiSimilarityLoss()(aligned, labels)) == 0.0

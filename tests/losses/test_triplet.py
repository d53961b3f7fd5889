import math

import pytest
import torch

from spacy_bioel.losses import PrototypeTripletLoss, TripletLoss


def dist(a, b):
    return math.sqrt(float(((a - b) ** 2).sum()))


def candidates(i, e, neg, ids, in_batch):
    out = [neg[i, q] for q in range(neg.shape[1])] if neg is not None else []
    if in_batch:
        out += [e[j] for j in range(len(ids)) if ids[j] != ids[i]]
    return out


def loop_triplet(m, e, neg, ids, alpha, in_batch):
    """Eq. 2 with the hardest negative (nearest to the mention), as a loop."""
    terms = []
    for i in range(m.shape[0]):
        hardest = min(candidates(i, e, neg, ids, in_batch), key=lambda x: dist(m[i], x))
        terms.append(max(dist(m[i], e[i]) - dist(m[i], hardest) + alpha, 0.0))
    return sum(terms) / len(terms)


def loop_prototype(m, e, neg, ids, groups, alpha, radius, in_batch):
    """Eq. 3 as a loop: the anchor's cluster = same concept, same document and
    (with a radius) closer than it; every (document, concept) class weighs the same."""
    by_class = {}
    for i in range(m.shape[0]):
        cluster = [j for j in range(m.shape[0]) if ids[j] == ids[i] and groups[j] == groups[i]
                   and (radius is None or j == i or dist(m[i], m[j]) < radius)]
        proto = sum(m[j] for j in cluster) / len(cluster)
        hardest = min(candidates(i, e, neg, ids, in_batch), key=lambda x: dist(m[i], x))
        term = max(dist(proto, e[i]) - dist(proto, hardest) + alpha, 0.0)
        by_class.setdefault((int(groups[i]), int(ids[i])), []).append(term)
    return sum(sum(v) / len(v) for v in by_class.values()) / len(by_class)


@pytest.fixture
def inputs():
    torch.manual_seed(1)
    norm = torch.nn.functional.normalize
    m = norm(torch.randn(7, 6, dtype=torch.float64), dim=-1)
    e = norm(torch.randn(7, 6, dtype=torch.float64), dim=-1)
    e[3] = e[1]  # mentions 1, 3 and 5 share concept 1: the same gold name
    e[5] = e[1]
    neg = norm(torch.randn(7, 2, 6, dtype=torch.float64), dim=-1)
    ids = torch.tensor([0, 1, 2, 1, 4, 1, 6])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1])  # mention 5 is concept 1 in another document
    return m, e, neg, ids, groups


@pytest.mark.parametrize("alpha", [0.2, 1.5])
@pytest.mark.parametrize("in_batch", [True, False])
def test_triplet_matches_loop(inputs, alpha, in_batch):
    m, e, neg, ids, _ = inputs
    loss = TripletLoss(margin=alpha, in_batch=in_batch)(m, e, neg, ids)
    assert float(loss) == pytest.approx(loop_triplet(m, e, neg, ids, alpha, in_batch), rel=1e-9)


@pytest.mark.parametrize("alpha", [0.2, 1.5])
@pytest.mark.parametrize("in_batch", [True, False])
def test_prototype_without_radius_matches_loop(inputs, alpha, in_batch):
    m, e, neg, ids, groups = inputs
    loss = PrototypeTripletLoss(margin=alpha, soft_radius=False, in_batch=in_batch)
    expected = loop_prototype(m, e, neg, ids, groups, alpha, None, in_batch)
    assert float(loss(m, e, neg, ids, groups)) == pytest.approx(expected, rel=1e-9)


def test_prototype_with_radius_matches_loop(inputs):
    m, e, neg, ids, groups = inputs
    gap = dist(m[1], m[3])
    for radius, epsilon in [(gap - 0.05, 0.1), (gap - 0.2, 0.1)]:  # m[3] inside, then outside
        loss = PrototypeTripletLoss(margin=1.0, radius=radius, epsilon=epsilon, radius_lr=0.0)
        expected = loop_prototype(m, e, neg, ids, groups, 1.0, radius + epsilon, True)
        assert float(loss(m, e, neg, ids, groups)) == pytest.approx(expected, rel=1e-9)


def test_prototype_class_counts_once(inputs):
    """Duplicating a mention inside its (document, concept) class leaves the
    prototype loss unchanged (imbalance-proof), but changes the plain triplet loss."""
    m, e, neg, ids, groups = inputs
    dup = lambda x: torch.cat([x, x[:1]])  # noqa: E731  (mention 0 again, same doc and concept)
    proto = PrototypeTripletLoss(margin=1.0, soft_radius=False)
    plain = TripletLoss(margin=1.0)
    assert float(proto(dup(m), dup(e), dup(neg), dup(ids), dup(groups))) == \
        pytest.approx(float(proto(m, e, neg, ids, groups)))
    assert float(plain(dup(m), dup(e), dup(neg), dup(ids))) != \
        pytest.approx(float(plain(m, e, neg, ids)))


def test_radius_moves_towards_mean_cluster_radius(inputs):
    m, e, neg, ids, groups = inputs
    loss = PrototypeTripletLoss(margin=1.0, radius=5.0, epsilon=0.0, radius_lr=0.5)
    loss(m, e, neg, ids, groups)  # radius 5 covers {1, 3}: mean radius = |m1 - m3| / 2
    assert float(loss.radius) == pytest.approx(5.0 - 0.5 * (5.0 - dist(m[1], m[3]) / 2), rel=1e-6)
    loss.eval()
    before = float(loss.radius)
    loss(m, e, neg, ids, groups)
    assert float(loss.radius) == before  # no update outside training


def test_downsample_keeps_one_mention_per_class(inputs):
    m, e, neg, ids, groups = inputs
    loss = TripletLoss(margin=1.0, downsample=True, in_batch=False)
    terms = [loop_triplet(m[i:i + 1], e[i:i + 1], neg[i:i + 1], ids[i:i + 1], 1.0, False)
             for i in range(7)]
    # classes (doc, concept): (0,0) (0,1)={1,3} (0,2) (1,4) (1,1) (1,6): one of 1 and 3 is kept
    allowed = {round(sum(t for i, t in enumerate(terms) if i != drop) / 6, 9) for drop in (1, 3)}
    seen = set()
    for seed in range(20):
        torch.manual_seed(seed)
        value = round(float(loss(m, e, neg, ids, groups)), 9)
        assert value in allowed
        seen.add(value)
    assert len(seen) == len(allowed)  # both choices occur: the pick is random


def test_triplet_losses_gradcheck(inputs):
    m, e, neg, ids, groups = inputs
    args = tuple(x.clone().requires_grad_(True) for x in (m, e, neg))
    for loss_fn in (TripletLoss(margin=1.5), PrototypeTripletLoss(margin=1.5, soft_radius=False)):
        assert torch.autograd.gradcheck(lambda a, b, c: loss_fn(a, b, c, ids, groups), args)

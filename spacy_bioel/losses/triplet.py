"""Triplet losses for imbalanced corpora: the plain triplet loss and the
prototype-based triplet loss with soft-radius neighbour (SRN) clustering.

References:
    Prototype-based triplet loss with soft-radius neighbour clustering for
    imbalanced biomedical entity linking:
    Sec. 3.2.2, eq. 2 (triplet loss for entity linking):

        L = max(||f_m(m_i) - f_e(e+_i)|| - ||f_m(m_i) - f_e(e-_i)|| + alpha, 0),

    eq. 3 (prototype-based): the anchor mention is replaced by the prototype
    p = mean of the embeddings of the mentions of the same concept in the same
    document (its cluster), so every (document, concept) class counts once,
    however many mentions it has; Sec. 3.2.3 and Algorithm 1 (SRN): the
    cluster of an anchor m keeps only the same-concept mentions of its
    document closer to m than a learnable radius lambda plus a fixed epsilon;
    lambda follows the mean radius of the clusters. The negative e- is the
    hardest (nearest to the anchor mention) of the candidates, as in the
    paper's online hardest-negative sampling. Distances are Euclidean.

    Baselines of the paper's Table 3: the triplet loss on all samples, and
    with document-level down-sampling (one random mention per concept and
    document).

Inputs:
    mentions: (batch, dim) mention embeddings.
    positives: (batch, dim) gold-concept name embeddings.
    negatives: (batch, p, dim) or None: sampled negative names.
    concept_ids: (batch,) gold concept ids.
    groups: (batch,) document index of each mention (None: one document per mention).
Output: scalar loss.

Example:
    >>> loss = PrototypeTripletLoss(margin=0.2, soft_radius=True)(m, e, neg, ids, groups)
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import nn

from .negatives import gather_negatives


def hardest_negative_distance(anchors: torch.Tensor, reference: torch.Tensor,
                              positives: torch.Tensor, negatives: Optional[torch.Tensor],
                              concept_ids: torch.Tensor, in_batch: bool) -> torch.Tensor:
    """Distance from each anchor to the negative nearest to `reference` (the
    anchor mention: online hardest negative). RETURNS (batch,); +inf where a
    mention has no negative."""
    stacked, valid = gather_negatives(positives, negatives, concept_ids, in_batch)  # (b, K, d)
    if stacked.shape[1] == 0:
        return anchors.new_full((anchors.shape[0],), float("inf"))
    to_reference = torch.cdist(reference.unsqueeze(1), stacked).squeeze(1)  # (batch, K)
    to_reference = to_reference.masked_fill(~valid, float("inf"))
    hardest = to_reference.argmin(dim=1)  # (batch,)
    chosen = stacked[torch.arange(stacked.shape[0]), hardest]  # (batch, dim)
    distance = (anchors - chosen).norm(dim=-1)  # (batch,)
    return distance.masked_fill(~valid.any(dim=1), float("inf"))


def class_keys(concept_ids: torch.Tensor, groups: Optional[torch.Tensor]) -> torch.Tensor:
    """(batch,) an integer per (document, concept) class."""
    if groups is None:
        groups = torch.arange(concept_ids.shape[0], device=concept_ids.device)
    _, keys = torch.unique(torch.stack([groups, concept_ids], dim=1), dim=0, return_inverse=True)
    return keys


def class_balanced_mean(values: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Mean over classes of the mean over each class's members."""
    n_classes = int(keys.max()) + 1
    sums = values.new_zeros(n_classes).index_add(0, keys, values)
    counts = values.new_zeros(n_classes).index_add(0, keys, torch.ones_like(values))
    return (sums / counts).mean()


class TripletLoss(nn.Module):
    """Eq. 2 with the hardest negative; optionally document-level down-sampling.

    margin (float): alpha (the paper: 1.2-1.6 on unnormalised SapBERT
        embeddings; distances between L2-normalised embeddings lie in [0, 2],
        so our default is smaller).
    downsample (bool): Keep one random mention per (document, concept).
    in_batch (bool): Also use the other mentions' positives as negatives.
    """

    def __init__(self, margin: float = 0.2, downsample: bool = False, in_batch: bool = True) -> None:
        super().__init__()
        self.margin = margin
        self.downsample = downsample
        self.in_batch = in_batch

    def forward(self, mentions: torch.Tensor, positives: torch.Tensor,
                negatives: Optional[torch.Tensor] = None,
                concept_ids: Optional[torch.Tensor] = None,
                groups: Optional[torch.Tensor] = None) -> torch.Tensor:
        if concept_ids is None:
            concept_ids = torch.arange(mentions.shape[0], device=mentions.device)
        d_pos = (mentions - positives).norm(dim=-1)  # (batch,)
        d_neg = hardest_negative_distance(mentions, mentions, positives, negatives, concept_ids,
                                          self.in_batch)  # (batch,)
        terms = torch.relu(d_pos - d_neg + self.margin)  # (batch,)
        if self.downsample:
            keys = class_keys(concept_ids, groups)
            priority = torch.rand(len(keys), device=keys.device)  # one random member per class
            lowest = torch.full((int(keys.max()) + 1,), 2.0, device=keys.device)
            lowest = lowest.scatter_reduce(0, keys, priority, reduce="amin")
            return terms[priority == lowest[keys]].mean()
        return terms.mean()


class PrototypeTripletLoss(nn.Module):
    """Eq. 3 (prototype anchors), with SRN clustering (Sec. 3.2.3) when `soft_radius`.

    margin (float): alpha.
    soft_radius (bool): Cluster with the learnable radius; False: the whole
        (document, concept) class is one cluster.
    radius (float): Initial lambda (the paper: 11.0 on unnormalised SapBERT
        embeddings; ours are L2-normalised).
    epsilon (float): Fixed slack added to lambda when forming clusters.
    radius_lr (float): Step size of lambda towards the clusters' mean radius
        (a gradient step on (lambda - mean radius)^2 / 2; the paper: 0.005-0.01).
    in_batch (bool): Also use the other mentions' positives as negatives.
    """

    def __init__(self, margin: float = 0.2, soft_radius: bool = True, radius: float = 0.5,
                 epsilon: float = 0.1, radius_lr: float = 0.01, in_batch: bool = True) -> None:
        super().__init__()
        self.margin = margin
        self.soft_radius = soft_radius
        self.epsilon = epsilon
        self.radius_lr = radius_lr
        self.in_batch = in_batch
        self.register_buffer("radius", torch.tensor(float(radius)))

    def clusters(self, mentions: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """(batch, batch) membership: row i = the cluster of anchor i (itself included)."""
        same = keys.unsqueeze(0) == keys.unsqueeze(1)  # (batch, batch)
        if not self.soft_radius:
            return same
        distances = torch.cdist(mentions.detach(), mentions.detach())  # (batch, batch)
        near = distances < (self.radius + self.epsilon)
        return same & (near | torch.eye(len(keys), dtype=torch.bool, device=keys.device))

    def prototypes(self, mentions: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        """(batch, dim): the mean of each anchor's cluster (gradients reach every member)."""
        weights = members.to(mentions.dtype)
        return (weights @ mentions) / weights.sum(dim=1, keepdim=True)

    def update_radius(self, mentions: torch.Tensor, members: torch.Tensor,
                      prototypes: torch.Tensor) -> None:
        """Move lambda towards the mean radius of the multi-member clusters."""
        sizes = members.sum(dim=1)
        multi = sizes > 1
        if not bool(multi.any()):
            return
        with torch.no_grad():
            distances = torch.cdist(prototypes[multi], mentions)  # (clusters, batch)
            member = members[multi].to(distances.dtype)
            radii = (distances * member).sum(1) / member.sum(1)  # mean member distance
            self.radius -= self.radius_lr * (self.radius - radii.mean())

    def forward(self, mentions: torch.Tensor, positives: torch.Tensor,
                negatives: Optional[torch.Tensor] = None,
                concept_ids: Optional[torch.Tensor] = None,
                groups: Optional[torch.Tensor] = None) -> torch.Tensor:
        if concept_ids is None:
            concept_ids = torch.arange(mentions.shape[0], device=mentions.device)
        keys = class_keys(concept_ids, groups)
        members = self.clusters(mentions, keys)  # (batch, batch)
        protos = self.prototypes(mentions, members)  # (batch, dim)
        d_pos = (protos - positives).norm(dim=-1)  # (batch,)
        d_neg = hardest_negative_distance(protos, mentions, positives, negatives, concept_ids,
                                          self.in_batch)
        terms = torch.relu(d_pos - d_neg + self.margin)  # (batch,)
        if self.training and self.soft_radius:
            self.update_radius(mentions, members, protos)
        return class_balanced_mean(terms, keys)


__all__ = ["TripletLoss", "PrototypeTripletLoss", "hardest_negative_distance",
           "class_keys", "class_balanced_mean"]

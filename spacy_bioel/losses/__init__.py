"""Training losses, one per module, each with its paper and equation.

Every loss is called as `loss(mentions, positives, negatives, concept_ids, groups)`:
(batch, dim) mention and gold-name embeddings, (batch, p, dim) sampled negative
names or None, (batch,) gold concept ids and (batch,) document indices.
"""
from .info_nce import InfoNCELoss
from .proxy import ProxyLoss
from .triplet import PrototypeTripletLoss, TripletLoss

__all__ = ["InfoNCELoss", "ProxyLoss", "TripletLoss", "PrototypeTripletLoss"]

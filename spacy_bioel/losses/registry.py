"""Registered losses (entry points in `spacy_misc`)."""
from __future__ import annotations

from spacy.util import registry


@registry.misc("spacy-bioel.InfoNCELoss.v1")
def create_info_nce_loss(temperature: float = 0.05, in_batch: bool = True):
    """kNN-BioEL eq. 3 (see `spacy_bioel.losses.info_nce`)."""
    from .info_nce import InfoNCELoss
    return InfoNCELoss(temperature=temperature, in_batch=in_batch)

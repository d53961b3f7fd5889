"""Registered training stages (entry points in `spacy_misc`)."""
from __future__ import annotations

from spacy.util import registry

from ..validation import as_int


@registry.misc("spacy-bioel.HardNegatives.v1")
def create_hard_negatives(n: int = 4):
    """p negatives per mention retrieved from the whole KB with the model being
    trained (kNN-BioEL eq. 3)."""
    from .negatives import NegativeSampler
    return NegativeSampler(as_int("negatives.n", n, 0), 1.0, "hard")

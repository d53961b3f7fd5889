"""Registered training stages (entry points in `spacy_misc`)."""
from __future__ import annotations

from spacy.util import registry


@registry.misc("spacy-bioel.HardNegatives.v1")
def create_hard_negatives(n: int = 4):
    """p negatives per mention retrieved from the whole KB with the model being
    trained (kNN-BioEL eq. 3)."""
    from .negatives import NegativeSampler
    return NegativeSampler(n, 1.0, "hard")


@registry.misc("spacy-bioel.RandomNegatives.v1")
def create_random_negatives(n: int = 4):
    """p negatives per mention drawn uniformly from the other concepts."""
    from .negatives import NegativeSampler
    return NegativeSampler(n, 0.0, "random")


@registry.misc("spacy-bioel.MixedNegatives.v1")
def create_mixed_negatives(n: int = 4, hard_fraction: float = 0.5):
    """round(n * hard_fraction) hard negatives, the rest random (Wiatrak et al. Sec. 4)."""
    from .negatives import NegativeSampler
    return NegativeSampler(n, hard_fraction, "mixed")


@registry.misc("spacy-bioel.FGSM.v1")
def create_fgsm(epsilon: float = 0.01, weight: float = 1.0, chunk: int = 32):
    """FGSM on the concept tower's input embeddings (Wiatrak et al. eqs. 6-8)."""
    from .fgsm import FGSM
    return FGSM(epsilon, weight, chunk)

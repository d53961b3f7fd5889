"""Registered training stages (entry points in `spacy_misc`)."""
from __future__ import annotations

from spacy.util import registry

from ..validation import as_float, as_int


@registry.misc("spacy-bioel.HardNegatives.v1")
def create_hard_negatives(n: int = 4):
    """p negatives per mention retrieved from the whole KB with the model being
    trained (kNN-BioEL eq. 3)."""
    from .negatives import NegativeSampler
    return NegativeSampler(as_int("negatives.n", n, 0), 1.0, "hard")


@registry.misc("spacy-bioel.RandomNegatives.v1")
def create_random_negatives(n: int = 4):
    """p negatives per mention drawn uniformly from the other concepts."""
    from .negatives import NegativeSampler
    return NegativeSampler(as_int("negatives.n", n, 0), 0.0, "random")


@registry.misc("spacy-bioel.MixedNegatives.v1")
def create_mixed_negatives(n: int = 4, hard_fraction: float = 0.5):
    """round(n * hard_fraction) hard negatives, the rest random (Wiatrak et al. Sec. 4)."""
    from .negatives import NegativeSampler
    return NegativeSampler(as_int("negatives.n", n, 0),
                           as_float("negatives.hard_fraction", hard_fraction, 0, 1), "mixed")


@registry.misc("spacy-bioel.FGSM.v1")
def create_fgsm(epsilon: float = 0.01, weight: float = 1.0, chunk: int = 32):
    """FGSM on the concept tower's input embeddings (Wiatrak et al. eqs. 6-8)."""
    from .fgsm import FGSM
    return FGSM(as_float("fgsm.epsilon", epsilon, 0), as_float("fgsm.weight", weight, 0),
                as_int("fgsm.chunk", chunk, 1))

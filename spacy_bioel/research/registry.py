"""Registered research stages (entry points in `spacy_misc`, as the core's): the
seed papers' methods that lost here, each reached through a training hook or a
stage block of the linker's config; the core packages import none of them.
Their measurements: docs/results/ (biofeg.md, graphprompt.md, accuracy.md)."""
from __future__ import annotations

from typing import Optional

from spacy.util import registry

from ..losses.registry import DeferredLoss
from ..validation import as_bool, as_float, as_int


@registry.misc("spacy-bioel.RandomNegatives.v1")
def create_random_negatives(n: int = 4):
    """p negatives per mention drawn uniformly from the other concepts."""
    from ..training.negatives import NegativeSampler
    return NegativeSampler(as_int("negatives.n", n, 0), 0.0, "random")


@registry.misc("spacy-bioel.MixedNegatives.v1")
def create_mixed_negatives(n: int = 4, hard_fraction: float = 0.5):
    """round(n * hard_fraction) hard negatives, the rest random (Wiatrak et al. Sec. 4)."""
    from ..training.negatives import NegativeSampler
    return NegativeSampler(as_int("negatives.n", n, 0),
                           as_float("negatives.hard_fraction", hard_fraction, 0, 1), "mixed")


@registry.misc("spacy-bioel.FGSM.v1")
def create_fgsm(epsilon: float = 0.01, weight: float = 1.0, chunk: int = 32):
    """FGSM on the concept tower's input embeddings (Wiatrak et al. eqs. 6-8)."""
    from .fgsm import FGSM
    return FGSM(as_float("fgsm.epsilon", epsilon, 0), as_float("fgsm.weight", weight, 0),
                as_int("fgsm.chunk", chunk, 1))


@registry.misc("spacy-bioel.BioFEG.v1")
def create_biofeg(iterations: int = 3, description_encoder: str = "embedded:all-MiniLM-L6-v2",
                  gan_epochs: int = 80, critic_steps: int = 5, penalty: float = 10.0,
                  gan_learning_rate: float = 5e-5, hidden: int = 768, noise_dim: int = 0,
                  gan_batch_size: int = 64, features_per_concept: int = 1, max_unseen: int = 0,
                  finetune_epochs: int = 1, finetune_learning_rate: float = 2e-5,
                  finetune_batch_size: int = 64, description_chars: int = 400,
                  report: Optional[str] = None, normalize_features: bool = True,
                  heldout_seen: float = 0.0, residual_generator: bool = False,
                  finetune_real_share: float = 0.0):
    """BioFEG steps 2-3 after each of the first `iterations` epochs (Sui et al.,
    Secs. 3.2-3.5): a WGAN-GP (eq. 5; `gan_*`, `critic_steps`, `penalty`, `hidden`,
    `noise_dim`, Sec. 4.2's values by default) conditioned on description
    embeddings from the frozen `description_encoder`, then the concept tower
    fine-tuned on `features_per_concept` generated features per unseen concept
    (at most `max_unseen` concepts per iteration; 0: all). `report`: a JSON file
    rewritten with each iteration's record (GAN, fine-tuning, realism, seconds).
    `normalize_features`: G's output on the unit sphere, where a cosine model's
    mention features lie. `heldout_seen`: share of seen concepts kept out of
    the GAN to measure the realism of its features on them (dev).
    `residual_generator`: G adds y_d to its output (not in the paper; needs the
    description encoder's width to equal the linker's). `finetune_real_share`:
    share of each fine-tuning batch made of real training-mention pairs (not in
    the paper; keeps the seen concepts in place)."""
    from .biofeg import BioFEG
    from .feature_gan import GANSettings

    gan = GANSettings(epochs=as_int("biofeg.gan_epochs", gan_epochs, 1),
                      critic_steps=as_int("biofeg.critic_steps", critic_steps, 1),
                      penalty=as_float("biofeg.penalty", penalty, 0),
                      learning_rate=as_float("biofeg.gan_learning_rate", gan_learning_rate, 0),
                      hidden=as_int("biofeg.hidden", hidden, 1),
                      noise_dim=as_int("biofeg.noise_dim", noise_dim, 0),
                      batch_size=as_int("biofeg.gan_batch_size", gan_batch_size, 1),
                      normalize=as_bool("biofeg.normalize_features", normalize_features),
                      residual=as_bool("biofeg.residual_generator", residual_generator))
    return BioFEG(as_int("biofeg.iterations", iterations, 0), description_encoder, gan,
                  as_int("biofeg.features_per_concept", features_per_concept, 1),
                  as_int("biofeg.max_unseen", max_unseen, 0),
                  as_int("biofeg.finetune_epochs", finetune_epochs, 1),
                  as_float("biofeg.finetune_learning_rate", finetune_learning_rate, 0),
                  as_int("biofeg.finetune_batch_size", finetune_batch_size, 1),
                  as_int("biofeg.description_chars", description_chars, 1), report or None,
                  as_float("biofeg.heldout_seen", heldout_seen, 0, 0.9),
                  as_float("biofeg.finetune_real_share", finetune_real_share, 0, 0.9))


@registry.misc("spacy-bioel.GraphPromptLoss.v1")
def create_graph_prompt_loss(lambda_p: float = 1.0, lambda_c: float = 1.0, lambda_1: float = 1.0,
                             lambda_2: float = 1.0, score_norm: bool = True,
                             temperature: float = 0.05, norm_lr: float = 0.01,
                             first_order: int = 32, second_order: int = 16,
                             synonym_rate: float = 0.5, max_words: int = 8):
    """GraphPrompt eq. 10 (see `spacy_bioel.research.graphprompt_loss`): trains the
    linker on its mentions in the encoder's T0 prompt plus T1 / T2 templates
    of the KB graph. Use with a bi-encoder whose prompt is
    "{mask} is identical with {text}" and pooling 'mask' (configs/graphprompt.cfg).
    lambda_1 = 0 drops T1, lambda_2 = 0 drops T2; max_words cuts the names in
    a template (its [MASK] tokens must survive the encoder's max_length)."""
    weights = {f"lambda_{k}": as_float(f"loss.lambda_{k}", v, 0)
               for k, v in (("p", lambda_p), ("c", lambda_c), ("1", lambda_1), ("2", lambda_2))}
    settings = {**weights, "score_norm": as_bool("loss.score_norm", score_norm),
                "temperature": as_float("loss.temperature", temperature, 0, exclusive_minimum=True),
                "norm_lr": as_float("loss.norm_lr", norm_lr, 0),
                "first_order": as_int("loss.first_order", first_order, 0),
                "second_order": as_int("loss.second_order", second_order, 0),
                "synonym_rate": as_float("loss.synonym_rate", synonym_rate, 0, 1),
                "max_words": as_int("loss.max_words", max_words, 1)}

    def build():
        from .graphprompt_loss import GraphPromptLoss
        return GraphPromptLoss(**settings)

    def hook():
        from .graphprompt_step import GraphPromptHook
        return GraphPromptHook()
    return DeferredLoss(build, hook=hook, uses_graph=True)

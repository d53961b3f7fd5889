"""A conditional WGAN-GP that generates mention features from concept descriptions.

References:
    Sui et al., BioFEG (paper 001), Sec. 3.4 and eq. 5: a generator G(y_d, z)
    maps a concept's domain-knowledge representation y_d and Gaussian noise z
    to a fake mention feature y~_m; a critic D(y_m, y_d) scores a (feature,
    description) pair; real features y_m are the retriever's mention-tower
    outputs for training mentions. Sec. 4.2: one hidden layer of 768 for both
    networks, lambda = 10, 5 critic iterations per generator iteration, 80
    epochs, learning rate 5e-5.
    Gulrajani et al. 2017, "Improved Training of Wasserstein GANs", Algorithm 1:
    the critic minimises D(x~) - D(x) + lambda (||grad_x^ D(x^)||_2 - 1)^2 with
    x^ = eps x + (1 - eps) x~, eps ~ U(0, 1); the generator minimises -D(x~);
    Adam with beta1 = 0, beta2 = 0.9. BioFEG's eq. 5 writes the same objective
    with the opposite sign convention (max over D) and names the penalty's
    point x~ while defining it as the interpolate x^; we follow Algorithm 1.

Pure PyTorch: no spaCy import, so the toy-problem tests and a GPU machine
without spaCy can run it.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
from torch import nn

logger = logging.getLogger(__name__)


def _mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    """One hidden layer with LeakyReLU (BioFEG Sec. 4.2: 'single-layer fully-connected')."""
    return nn.Sequential(nn.Linear(n_in, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, n_out))


class FeatureGenerator(nn.Module):
    """G(y_d, z) -> y~_m (BioFEG eq. 5).

    description_dim (int): width of y_d. feature_dim (int): width of y_m.
    noise_dim (int): width of z (0: the width of y_d, as conditional feature
        generators usually do). hidden (int): the hidden layer (768).
    normalize (bool): L2-normalise the output. A cosine bi-encoder's mention
        features lie on the unit sphere; without this the generator must learn
        the norm first, and the critic separates real from fake by norm alone.
    residual (bool): add y_d to the network's output (y~_m = y_d + MLP(y_d, z)),
        so G starts at the description and learns the shift to mentions; needs
        description_dim == feature_dim. Not in the paper.
    """

    def __init__(self, description_dim: int, feature_dim: int, noise_dim: int = 0,
                 hidden: int = 768, normalize: bool = False, residual: bool = False) -> None:
        super().__init__()
        if residual and description_dim != feature_dim:
            raise ValueError(f"A residual generator needs descriptions as wide as the features "
                             f"({description_dim} != {feature_dim}).")
        self.noise_dim = int(noise_dim) or int(description_dim)
        self.normalize = bool(normalize)
        self.residual = bool(residual)
        self.net = _mlp(description_dim + self.noise_dim, hidden, feature_dim)

    def forward(self, descriptions: torch.Tensor, noise: Optional[torch.Tensor] = None
                ) -> torch.Tensor:
        if noise is None:
            noise = torch.randn(descriptions.shape[0], self.noise_dim, device=descriptions.device)
        out = self.net(torch.cat([descriptions, noise], dim=1))
        if self.residual:
            out = out + descriptions
        return nn.functional.normalize(out, dim=1) if self.normalize else out


class FeatureCritic(nn.Module):
    """D(y_m, y_d) -> a real score (BioFEG eq. 5); no sigmoid (Wasserstein critic)."""

    def __init__(self, feature_dim: int, description_dim: int, hidden: int = 768) -> None:
        super().__init__()
        self.net = _mlp(feature_dim + description_dim, hidden, 1)

    def forward(self, features: torch.Tensor, descriptions: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([features, descriptions], dim=1)).squeeze(1)


def gradient_penalty(critic: FeatureCritic, real: torch.Tensor, fake: torch.Tensor,
                     descriptions: torch.Tensor, epsilon: Optional[torch.Tensor] = None
                     ) -> torch.Tensor:
    """E[(||grad_{y^} D(y^, y_d)||_2 - 1)^2] at y^ = eps y_m + (1 - eps) y~_m
    (Gulrajani et al. 2017, Algorithm 1, line 7; BioFEG eq. 5's third term).
    The gradient is taken with respect to the feature part of the critic's
    input; y_d is the same on both sides of the interpolation.

    epsilon (Optional[Tensor]): (batch, 1) interpolation weights (None: U(0, 1)).
    RETURNS (Tensor): a scalar with a graph (create_graph), for the critic's step.
    """
    if epsilon is None:
        epsilon = torch.rand(real.shape[0], 1, device=real.device)
    mixed = (epsilon * real + (1 - epsilon) * fake).requires_grad_(True)
    scores = critic(mixed, descriptions)
    (grads,) = torch.autograd.grad(scores.sum(), mixed, create_graph=True)
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


@dataclass
class GANSettings:
    """BioFEG Sec. 4.2's settings (the config's `biofeg` block passes them)."""
    epochs: int = 80
    critic_steps: int = 5
    penalty: float = 10.0
    learning_rate: float = 5e-5
    hidden: int = 768
    noise_dim: int = 0
    batch_size: int = 64
    normalize: bool = False
    residual: bool = False


@dataclass
class GANHistory:
    """Per epoch: the critic's Wasserstein estimate E[D(real)] - E[D(fake)] and the penalty."""
    wasserstein: List[float] = field(default_factory=list)
    penalty: List[float] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> Dict[str, float]:
        last = slice(-max(1, len(self.wasserstein) // 10), None)  # the last tenth of epochs
        mean = (lambda xs: float(sum(xs) / len(xs)) if xs else math.nan)
        return {"epochs": len(self.wasserstein),
                "wasserstein_first": self.wasserstein[0] if self.wasserstein else math.nan,
                "wasserstein_last": mean(self.wasserstein[last]),
                "penalty_last": mean(self.penalty[last]), "seconds": round(self.seconds, 1)}


def train_feature_gan(features: torch.Tensor, descriptions: torch.Tensor,
                      settings: GANSettings, generator: Optional[torch.Generator] = None,
                      progress: bool = False) -> tuple:
    """Train G and D on (real mention feature, its concept's y_d) pairs.

    features (Tensor): (n, feature_dim) real mention features y_m.
    descriptions (Tensor): (n, description_dim) y_d of each feature's concept
        (rows repeat for a concept with several mentions).
    generator (torch.Generator): seeds the shuffles (the networks' weights and
        the noise follow torch's global seed, which spaCy's [training] seed sets).
    progress (bool): a progress bar over the epochs.
    RETURNS (Tuple[FeatureGenerator, FeatureCritic, GANHistory]).
    """
    import time

    from ..progress import progress_bar

    start = time.perf_counter()
    device = features.device
    gen = FeatureGenerator(descriptions.shape[1], features.shape[1], settings.noise_dim,
                           settings.hidden, settings.normalize, settings.residual).to(device)
    critic = FeatureCritic(features.shape[1], descriptions.shape[1], settings.hidden).to(device)
    betas = (0.0, 0.9)  # Gulrajani et al. 2017, Algorithm 1
    opt_g = torch.optim.Adam(gen.parameters(), lr=settings.learning_rate, betas=betas)
    opt_d = torch.optim.Adam(critic.parameters(), lr=settings.learning_rate, betas=betas)
    history = GANHistory()
    n = features.shape[0]
    size = max(1, min(settings.batch_size, n))
    for _ in progress_bar(range(settings.epochs), desc="Training the feature GAN", unit=" epochs",
                          disable=not progress):
        order = torch.randperm(n, generator=generator).to(device)
        batches = [order[i:i + size] for i in range(0, n, size)]
        distances, penalties = [], []
        for step, rows in enumerate(batches):
            real, cond = features[rows], descriptions[rows]
            fake = gen(cond).detach()
            real_score, fake_score = critic(real, cond).mean(), critic(fake, cond).mean()
            penalty = gradient_penalty(critic, real, fake, cond)
            opt_d.zero_grad()
            (fake_score - real_score + settings.penalty * penalty).backward()
            opt_d.step()
            distances.append(float((real_score - fake_score).detach()))
            penalties.append(float(penalty.detach()))
            if (step + 1) % settings.critic_steps == 0 or step == len(batches) - 1:
                opt_g.zero_grad()
                (-critic(gen(cond), cond).mean()).backward()
                opt_g.step()
        history.wasserstein.append(sum(distances) / len(distances))
        history.penalty.append(sum(penalties) / len(penalties))
    history.seconds = time.perf_counter() - start
    gen.eval()
    critic.eval()
    return gen, critic, history


@torch.no_grad()
def generate_features(gen: FeatureGenerator, descriptions: torch.Tensor, per_concept: int = 1
                      ) -> torch.Tensor:
    """RETURNS (Tensor): (len(descriptions) * per_concept, feature_dim) fake
    features, concept-major (rows i * per_concept ... belong to description i)."""
    repeated = descriptions.repeat_interleave(per_concept, dim=0)
    return gen(repeated)


__all__ = ["FeatureGenerator", "FeatureCritic", "gradient_penalty", "GANSettings", "GANHistory",
           "train_feature_gan", "generate_features"]

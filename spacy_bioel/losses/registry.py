"""Registered losses (entry points in `spacy_misc`). Each returns a
`DeferredLoss`: the settings are checked at once, the torch module is built on
the first training step (a pipeline that only predicts never imports torch)."""
from __future__ import annotations

from typing import Any, Callable

from spacy.util import registry

from ..validation import as_bool, as_float, as_int


class DeferredLoss:
    """A loss module built on first use from `build()`; calls and attributes go
    to the module (`.module` builds it). `uses_graph` is known without building
    it: a loss that trains on KB graph templates brings GraphPrompt's training
    hook (`training.hooks`), and building the component must not import torch."""

    def __init__(self, build: Callable[[], Any], uses_graph: bool = False) -> None:
        self._build = build
        self._module = None
        self.uses_graph = uses_graph

    @property
    def module(self):
        if self._module is None:
            self._module = self._build()
        return self._module

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.module, name)


@registry.misc("spacy-bioel.InfoNCELoss.v1")
def create_info_nce_loss(temperature: float = 0.05, in_batch: bool = True):
    """kNN-BioEL eq. 3 (see `spacy_bioel.losses.info_nce`)."""
    settings = {"temperature": as_float("loss.temperature", temperature, 0, exclusive_minimum=True),
                "in_batch": as_bool("loss.in_batch", in_batch)}

    def build():
        from .info_nce import InfoNCELoss
        return InfoNCELoss(**settings)
    return DeferredLoss(build)


@registry.misc("spacy-bioel.ProxyLoss.v1")
def create_proxy_loss(alpha: float = 32.0, margin: float = 0.0, in_batch: bool = True):
    """Wiatrak et al. eq. 3 (see `spacy_bioel.losses.proxy`)."""
    settings = {"alpha": as_float("loss.alpha", alpha, 0, exclusive_minimum=True),
                "margin": as_float("loss.margin", margin), "in_batch": as_bool("loss.in_batch", in_batch)}

    def build():
        from .proxy import ProxyLoss
        return ProxyLoss(**settings)
    return DeferredLoss(build)


@registry.misc("spacy-bioel.TripletLoss.v1")
def create_triplet_loss(margin: float = 0.2, downsample: bool = False, in_batch: bool = True):
    """The triplet loss for entity linking, optionally down-sampled per document
    (see `spacy_bioel.losses.triplet`)."""
    settings = {"margin": as_float("loss.margin", margin, 0),
                "downsample": as_bool("loss.downsample", downsample),
                "in_batch": as_bool("loss.in_batch", in_batch)}

    def build():
        from .triplet import TripletLoss
        return TripletLoss(**settings)
    return DeferredLoss(build)


@registry.misc("spacy-bioel.PrototypeTripletLoss.v1")
def create_prototype_triplet_loss(margin: float = 0.2, soft_radius: bool = True,
                                  radius: float = 0.5, epsilon: float = 0.1,
                                  radius_lr: float = 0.01, in_batch: bool = True):
    """The prototype-based triplet loss with soft-radius neighbour clustering
    (see `spacy_bioel.losses.triplet`)."""
    settings = {"margin": as_float("loss.margin", margin, 0),
                "soft_radius": as_bool("loss.soft_radius", soft_radius),
                "radius": as_float("loss.radius", radius, 0),
                "epsilon": as_float("loss.epsilon", epsilon, 0),
                "radius_lr": as_float("loss.radius_lr", radius_lr, 0),
                "in_batch": as_bool("loss.in_batch", in_batch)}

    def build():
        from .triplet import PrototypeTripletLoss
        return PrototypeTripletLoss(**settings)
    return DeferredLoss(build)


@registry.misc("spacy-bioel.GraphPromptLoss.v1")
def create_graph_prompt_loss(lambda_p: float = 1.0, lambda_c: float = 1.0, lambda_1: float = 1.0,
                             lambda_2: float = 1.0, score_norm: bool = True,
                             temperature: float = 0.05, norm_lr: float = 0.01,
                             first_order: int = 32, second_order: int = 16,
                             synonym_rate: float = 0.5, max_words: int = 8):
    """GraphPrompt eq. 10 (see `spacy_bioel.losses.graphprompt`): trains the
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
        from .graphprompt import GraphPromptLoss
        return GraphPromptLoss(**settings)
    return DeferredLoss(build, uses_graph=True)

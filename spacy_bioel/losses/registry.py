"""Registered losses (entry points in `spacy_misc`). Each returns a
`DeferredLoss`: the settings are checked at once, the torch module is built on
the first training step (a pipeline that only predicts never imports torch)."""
from __future__ import annotations

from typing import Any, Callable, Optional

from spacy.util import registry

from ..validation import as_bool, as_float, as_int


class DeferredLoss:
    """A loss module built on first use from `build()`; calls and attributes go
    to the module (`.module` builds it). `hook` is known without building it: a
    loss that brings its own training step (GraphPrompt's, `spacy_bioel.research`)
    makes it with `hook()` (`training.hooks`), and building the component must not
    import torch; `uses_graph` says that step trains on KB graph templates."""

    def __init__(self, build: Callable[[], Any], hook: Optional[Callable[[], Any]] = None,
                 uses_graph: bool = False) -> None:
        self._build = build
        self._module = None
        self.hook = hook
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

"""The training methods a linker's config brings, as hooks (`hooks.TrainingHook`):
the step a loss brings (GraphPrompt's), BioFEG's epoch ends (both in
`spacy_bioel.research`, which this package never imports)."""
from __future__ import annotations

from typing import Any, List, Optional

from .hooks import TrainingHook


def training_hooks(loss: Any, biofeg: Optional[TrainingHook]) -> List[TrainingHook]:
    """The hooks a linker's config brings: the step its loss brings (`hook`,
    e.g. GraphPrompt's), then BioFEG's epoch ends."""
    hooks: List[TrainingHook] = []
    make_hook = getattr(loss, "hook", None)
    if callable(make_hook):
        hooks.append(make_hook())
    if biofeg is not None:
        hooks.append(biofeg)
    return hooks


__all__ = ["training_hooks"]

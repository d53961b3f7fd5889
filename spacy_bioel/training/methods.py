"""The training methods a linker's config brings, as hooks (`hooks.TrainingHook`):
GraphPrompt's step for a loss that uses the KB graph, BioFEG's epoch ends."""
from __future__ import annotations

from typing import Any, List, Optional

from .hooks import TrainingHook


def training_hooks(loss: Any, biofeg: Optional[TrainingHook]) -> List[TrainingHook]:
    """The hooks a linker's config brings: GraphPrompt's step for a loss that
    uses the KB graph, then BioFEG's epoch ends."""
    hooks: List[TrainingHook] = []
    if getattr(loss, "uses_graph", False):
        from .graph_step import GraphPromptHook

        hooks.append(GraphPromptHook())
    if biofeg is not None:
        hooks.append(biofeg)
    return hooks


__all__ = ["training_hooks"]

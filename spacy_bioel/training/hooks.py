"""How a training method joins the linker's training loop: as a hook, not a
branch of `update`.

A hook may take over the loss step of a batch (`step`: GraphPrompt's one
forward and backward pass over mentions, names and graph templates) and may
act at the end of an epoch (`epoch_end`: BioFEG's feature generation and
concept-tower fine-tuning). The linker asks its hooks in order; the first
whose `step` returns a value has taken the step, otherwise the plain step runs
(`training.step.train_step`). A hook reads and changes the linker only through
its public attributes and methods (`kb`, `index`, `model`, `train_mentions`,
`refresh`, ...).

The linker's hooks come from its config: the loss (a loss with `uses_graph`
brings GraphPrompt's step) and the `biofeg` block.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

StepResult = Tuple[float, Dict[str, float]]  # the loss value and its named terms


class TrainingHook:
    """A method's part in training; both calls do nothing by default."""

    def step(self, linker: Any, batch: Any) -> Optional[StepResult]:
        """Take the training step of `batch` (a `training.step.MentionBatch`):
        forward, loss and backward, gradients left for the optimizer. RETURNS
        (Optional[StepResult]): the loss and its terms, or None to leave the step
        to the next hook or the plain one."""
        return None

    def epoch_end(self, linker: Any, epoch: int, steps: int) -> None:
        """After epoch `epoch` (1-based) ended at optimizer step `steps`."""


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


__all__ = ["StepResult", "TrainingHook", "training_hooks"]

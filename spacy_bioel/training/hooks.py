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

The linker's hooks come from its config (`methods.training_hooks`): the loss
(a loss with a `hook` brings its own step, as GraphPrompt's does) and the
`biofeg` block. Both methods live in `spacy_bioel.research`.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol, Tuple

StepResult = Tuple[float, Dict[str, float]]  # the loss value and its named terms


class Trainee(Protocol):
    """The linker as training sees it: its public attributes and methods
    (`pipeline.linker.BioELLinker` has them; training never imports it)."""

    name: str
    cfg: Dict[str, Any]
    model: Any  # the thinc bi-encoder
    loss: Any
    negatives: Any
    fgsm: Any
    biofeg: Any
    runtime: Any
    nil: Any  # nil.stages.ThresholdNIL
    rng: Any  # numpy Generator of the negatives
    hooks: List["TrainingHook"]
    steps: Any  # updates.TrainingState
    epoch_seconds: List[float]
    kb: Any
    index: Any  # index.name_index.NameIndex
    concept_index: Dict[str, int]
    train_mentions: List[Tuple[str, str]]
    datastore_stale: bool

    def resolve(self, concept_id: str) -> Optional[int]: ...

    def require_model(self, why: str) -> None: ...

    def refresh(self, force: bool = False, datastore: bool = True) -> None: ...

    def model_changed(self) -> None: ...

    def finish_update(self, sgd: Any) -> None: ...


class TrainingHook:
    """A method's part in training; both calls do nothing by default."""

    def step(self, linker: Trainee, batch: Any) -> Optional[StepResult]:
        """Take the training step of `batch` (a `training.step.MentionBatch`):
        forward, loss and backward, gradients left for the optimizer. RETURNS
        (Optional[StepResult]): the loss and its terms, or None to leave the step
        to the next hook or the plain one."""
        return None

    def epoch_end(self, linker: Trainee, epoch: int, steps: int) -> None:
        """After epoch `epoch` (1-based) ended at optimizer step `steps`."""


__all__ = ["StepResult", "Trainee", "TrainingHook"]

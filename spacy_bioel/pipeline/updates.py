"""One training update of the linker and what follows each optimizer step (the
bodies of `BioELLinker.update` and `finish_update`): the batch's gold mentions
go to a hook's step or the plain one (`training.step.train_step`). The linker
is read through `training.hooks.Trainee`; this module does not import it.

After a step the embeddings are stale. The name index is re-encoded at the end
of an epoch when the concept tower trains (fresh hard negatives, kNN-BioEL
Sec. 2.2), unless spaCy evaluates after the next step, and everything stale at
spaCy's evaluation steps (step % [training] eval_frequency == 0): an
eval_frequency of one epoch's steps re-encodes the names once per epoch. Each
step also forgets the prediction path's cached embeddings and decisions and
marks an exported ONNX encoder stale.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional

from spacy.training import Example, validate_examples
from thinc.api import Optimizer

from ..encoders.thinc_biencoder import concept_tower_trained, is_contextual
from ..errors import BioELError, Errors
from ..training.step import MentionBatch, train_step
from .mentions import gold_mentions, training_spans

if TYPE_CHECKING:
    from ..training.hooks import Trainee

logger = logging.getLogger(__name__)


@dataclass
class TrainingState:
    """Where training is: optimizer steps, mentions seen in the current epoch,
    when it started, spaCy's evaluation frequency (refresh steps), and the loss
    summed over the updates since the progress logger last read it."""
    steps: int = 0
    seen_in_epoch: int = 0
    epoch_start: float = 0.0
    eval_frequency: int = 0
    loss_sum: float = 0.0
    loss_steps: int = 0

    def record(self, loss: float, mentions: int) -> None:
        """One update's loss and gold mentions (an epoch's clock starts at its first)."""
        if self.seen_in_epoch == 0:
            self.epoch_start = time.perf_counter()
        self.loss_sum += loss
        self.loss_steps += 1
        self.seen_in_epoch += mentions

    def epoch_complete(self, size: int) -> bool:
        """Whether the epoch's `size` mentions are all seen; if so the count starts again."""
        if not size or self.seen_in_epoch < size:
            return False
        self.seen_in_epoch = 0
        return True

    def epoch_elapsed(self) -> float:
        """Seconds since the epoch's first update, to 0.1 s."""
        return round(time.perf_counter() - self.epoch_start, 1)


def update(linker: "Trainee", examples: List[Example], sgd: Optional[Optimizer],
           losses: Dict[str, float]) -> Dict[str, float]:
    """One training step over the batch's linkable gold mentions: a hook's own
    step (GraphPrompt) or the plain one (`step.train_step`)."""
    losses.setdefault(linker.name, 0.0)
    validate_examples(examples, "BioELLinker.update")
    mentions = gold_mentions(examples, linker.state.resolve, linker.cfg["context_window"],
                             linker.cfg["spans_key"])
    if not mentions:
        return losses
    if not linker.index.ready:
        raise BioELError(Errors.E168)
    linker.require_model("training")
    if linker.nil.forget_calibration():
        logger.warning("%s: the NIL stage's calibration was fitted for the encoder before training: "
                       "no probability, and NIL only for mentions without candidates, until "
                       "`python -m spacy_bioel tune PIPELINE DEV.spacy` fits it on dev", linker.name)
    batch = MentionBatch(*(list(column) for column in zip(*mentions)))
    if is_contextual(linker.model):
        batch.spans = training_spans(examples, linker.state.resolve, linker.cfg["spans_key"])
    taken = next((r for r in (hook.step(linker, batch) for hook in linker.hooks) if r is not None),
                 None)  # a method's own step (GraphPrompt), else the plain one
    value, terms = taken if taken is not None else (
        train_step(linker.model, linker.loss, batch, linker.index, linker.negatives, linker.fgsm,
                   linker.rng), {})
    losses[linker.name] += value
    for term, term_value in terms.items():
        losses[f"{linker.name}_L{term}"] = losses.get(f"{linker.name}_L{term}", 0.0) + term_value
    linker.steps.record(value, len(mentions))
    if sgd not in (None, False):
        linker.finish_update(sgd)
    return losses


def after_step(linker: "Trainee") -> None:
    """After the optimizer step: embeddings are stale; re-encode the index at
    the end of an epoch and everything stale at spaCy's evaluation steps."""
    state = linker.steps
    state.steps += 1
    linker.datastore_stale = not is_contextual(linker.model)  # a contextual one's stays empty
    linker.runtime.invalidate()
    linker.model_changed()
    linker.index.stale = linker.index.stale or concept_tower_trained(linker.model)
    if state.epoch_complete(len(linker.train_mentions)):
        # hard negatives need it; the datastore waits for evaluation. Not when spaCy evaluates
        # after the next step (eval_frequency = an epoch's steps): that refresh is the epoch's
        if linker.index.stale and not evaluates_next(state):
            linker.refresh(datastore=False)
        linker.epoch_seconds.append(state.epoch_elapsed())
        logger.info("%s: epoch %d took %.1fs (index refresh included)", linker.name,
                    len(linker.epoch_seconds), linker.epoch_seconds[-1])
        for hook in linker.hooks:  # e.g. BioFEG's steps 2-3 after its epochs
            hook.epoch_end(linker, len(linker.epoch_seconds), state.steps)
    if state.eval_frequency and (state.steps - 1) % state.eval_frequency == 0:
        linker.refresh()


def evaluates_next(state: TrainingState) -> bool:
    """Whether the step after this one is an evaluation step (everything refreshed)."""
    return bool(state.eval_frequency) and state.steps % state.eval_frequency == 0


__all__ = ["TrainingState", "update", "after_step", "evaluates_next"]

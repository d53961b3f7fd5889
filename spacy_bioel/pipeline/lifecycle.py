"""When the linker encodes and learns: refreshing the name index and the kNN
datastore, and one training update (the bodies of `BioELLinker.refresh`,
`build_datastore`, `update` and `finish_update`).

Refresh happens only at defined moments: `initialize`, the end of an epoch (the
name index, for fresh hard negatives, when the concept tower trains), spaCy's
evaluation steps (step % [training] eval_frequency == 0), the
`spacy-bioel.RefreshLinkers.v1` before_to_disk callback and `refresh()`.
Each of them, and every optimizer step, forgets the cached embeddings and
decisions of the prediction path and marks an exported ONNX encoder stale.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from thinc.api import Optimizer

from ..datastore.knn import DatastoreKNN, document_key
from ..encoders.thinc_biencoder import concept_tower_trained, embed_texts, is_contextual
from ..errors import BioELError, Errors
from . import serialize
from .mentions import gold_mentions, training_spans

if TYPE_CHECKING:
    from .linker import BioELLinker

logger = logging.getLogger(__name__)


@dataclass
class TrainingState:
    """Where training is: optimizer steps, mentions seen in the current epoch,
    when it started, and spaCy's evaluation frequency (refresh steps)."""
    steps: int = 0
    seen_in_epoch: int = 0
    epoch_start: float = 0.0
    eval_frequency: int = 0


def refresh(linker: "BioELLinker", force: bool, datastore: bool) -> None:
    """Re-encode what is stale (or everything with `force`): the concept-name
    index, then (unless `datastore` is False) the kNN datastore, with PyTorch."""
    if linker.kb is None:
        raise BioELError(Errors.E160.format(name=linker.name))
    linker.require_model("refreshing the name index or the datastore")
    linker.index.use_device(linker.model_device())
    if force or linker.index.stale:
        key = None if concept_tower_trained(linker.model) else serialize.name_cache_key(linker)
        linker.index.refresh(lambda texts: linker.embed(texts, "concept", progress=True), key)
    if datastore and (force or linker.datastore_stale or linker.datastore is None):
        linker.datastore = DatastoreKNN(linker.model.get_dim("nO"))
        if linker.train_mentions and not is_contextual(linker.model):  # no text tower: empty
            texts = [text for text, _ in linker.train_mentions]
            linker.datastore.add(embed_texts(linker.model, texts, "mention",
                                             linker.cfg["encode_batch_size"]),
                                 [cid for _, cid in linker.train_mentions],
                                 linker.train_docs or None)
        linker.datastore_stale = False
    linker.model_changed()


def check_contextual(linker: "BioELLinker") -> None:
    """E212 for the stages that encode mention texts, with a model that reads
    mentions in context: the kNN datastore (its keys are training mentions
    without their documents), BioFEG (real mention features from texts) and
    an ONNX runtime."""
    if not is_contextual(linker.model):
        return
    if getattr(linker.ranker, "use_knn", False):
        raise BioELError(Errors.E212.format(what="The kNN datastore", fix=(
            "Set [components.bioel_linker.ranker] use_knn = false.")))
    for stage, name in ((linker.biofeg, "BioFEG"),
                        (linker.runtime.has_files and linker.runtime, "The ONNX runtime")):
        if stage:
            raise BioELError(Errors.E212.format(what=name, fix=(
                f"Remove {name} from [components.bioel_linker], or use spacy-bioel.BiEncoder.v1.")))


def datastore_mentions(linker: "BioELLinker", examples: Sequence[Example]
                       ) -> List[Tuple[str, str, int]]:
    """(mention input, gold concept id, document key) of every linkable gold
    mention of `examples` (the key lets a held-out document skip its own)."""
    keys = [document_key(eg.reference.text) for eg in examples]
    ids = linker.index.names.concept_ids
    return [(text, ids[c], keys[i])
            for text, c, i in gold_mentions(examples, linker.resolve, linker.cfg["context_window"])]


def build_datastore(linker: "BioELLinker", docs: Iterable[Doc]) -> int:
    """Replace the datastore with the gold mentions of `docs`; RETURNS its size."""
    linker.train_mentions = datastore_mentions(linker, [Example(d, d) for d in docs])
    linker.datastore_stale = True
    linker.refresh()
    return len(linker.datastore)


def update(linker: "BioELLinker", examples: List[Example], sgd: Optional[Optimizer],
           losses: Dict[str, float]) -> Dict[str, float]:
    """One training step (see `BioELLinker.update`)."""
    from ..training.step import MentionBatch, train_step

    losses.setdefault(linker.name, 0.0)
    validate_examples(examples, "BioELLinker.update")
    mentions = gold_mentions(examples, linker.resolve, linker.cfg["context_window"])
    if not mentions:
        return losses
    if not linker.index.ready:
        raise BioELError(Errors.E168)
    linker.require_model("training")
    batch = MentionBatch(*(list(column) for column in zip(*mentions)))
    if is_contextual(linker.model):
        batch.spans = training_spans(examples, linker.resolve)
    taken = next((r for r in (hook.step(linker, batch) for hook in linker.hooks) if r is not None),
                 None)  # a method's own step (GraphPrompt), else the plain one
    value, terms = taken if taken is not None else (
        train_step(linker.model, linker.loss, batch, linker.index, linker.negatives, linker.fgsm,
                   linker.rng), {})
    losses[linker.name] += value
    for term, term_value in terms.items():
        losses[f"{linker.name}_L{term}"] = losses.get(f"{linker.name}_L{term}", 0.0) + term_value
    state = linker.steps
    if state.seen_in_epoch == 0:
        state.epoch_start = time.perf_counter()
    state.seen_in_epoch += len(mentions)
    if sgd not in (None, False):
        linker.finish_update(sgd)
    return losses


def after_step(linker: "BioELLinker") -> None:
    """After the optimizer step: embeddings are stale; re-encode the index at
    the end of an epoch and everything stale at spaCy's evaluation steps."""
    state = linker.steps
    state.steps += 1
    linker.datastore_stale = not is_contextual(linker.model)  # a contextual one's stays empty
    linker.runtime.invalidate()
    linker.model_changed()
    linker.index.stale = linker.index.stale or concept_tower_trained(linker.model)
    if linker.train_mentions and state.seen_in_epoch >= len(linker.train_mentions):
        state.seen_in_epoch = 0
        if linker.index.stale:  # hard negatives need it; the datastore waits for evaluation
            linker.refresh(datastore=False)
        linker.epoch_seconds.append(round(time.perf_counter() - state.epoch_start, 1))
        logger.info("%s: epoch %d took %.1fs (index refresh included)", linker.name,
                    len(linker.epoch_seconds), linker.epoch_seconds[-1])
        for hook in linker.hooks:  # e.g. BioFEG's steps 2-3 after its epochs
            hook.epoch_end(linker, len(linker.epoch_seconds), state.steps)
    if state.eval_frequency and (state.steps - 1) % state.eval_frequency == 0:
        linker.refresh()


__all__ = ["TrainingState", "refresh", "datastore_mentions", "build_datastore", "update",
           "after_step"]

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
from ..errors import BioELError, Errors, Warnings, warn
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
    if getattr(linker.loss, "uses_graph", False):
        from ..training.graph_step import graph_step

        if batch.spans is not None:
            raise BioELError(Errors.E212.format(what="GraphPrompt's templates", fix=(
                "Use spacy-bioel.BiEncoder.v1 with GraphPrompt.")))
        value, terms = graph_step(linker.model, graph_loss(linker), batch, linker.index, linker.rng)
        losses[linker.name] += value
        for term, term_value in terms.items():
            losses[f"{linker.name}_L{term}"] = losses.get(f"{linker.name}_L{term}", 0.0) + term_value
    else:
        losses[linker.name] += train_step(linker.model, linker.loss, batch, linker.index,
                                          linker.negatives, linker.fgsm, linker.rng)
    state = linker.steps
    if state.seen_in_epoch == 0:
        state.epoch_start = time.perf_counter()
    state.seen_in_epoch += len(mentions)
    if sgd not in (None, False):
        linker.finish_update(sgd)
    return losses


def graph_loss(linker: "BioELLinker"):
    """The GraphPrompt loss module, its templates built from the KB graph and
    the datastore's training mentions (never from other data), again whenever
    the KB or those mentions change."""
    from ..graphprompt.templates import GraphTemplates
    from .mentions import span_of_input

    loss = linker.loss.module
    if linker.fgsm is not None and linker.fgsm.epsilon > 0:
        raise BioELError(Errors.E192.format(
            what="FGSM", why="its perturbed names have no [MASK] token to pool",
            fix="Set [components.bioel_linker.fgsm] to null."))
    key = (id(linker.kb), id(linker.index.names), len(linker.train_mentions))
    if loss.templates is None or loss.templates_key != key:
        pairs = [(span_of_input(text), cid) for text, cid in linker.train_mentions]
        loss.prepare(GraphTemplates(linker.kb, linker.index.names.concept_ids, pairs,
                                    linker.model.attrs["tokenizer"].mask_token,
                                    loss.synonym_rate, loss.max_words), key)
    return loss


def check_biofeg_schedule(linker: "BioELLinker", steps_per_epoch: int) -> None:
    """After epoch 1: warn (W010) when spaCy evaluates dev less often than once
    an epoch while BioFEG changes the linker at epoch ends."""
    every = linker.steps.eval_frequency
    if linker.biofeg.iterations and every > steps_per_epoch:
        warn(Warnings.W010.format(name=linker.name, iterations=linker.biofeg.iterations,
                                  eval_frequency=every, steps=steps_per_epoch))


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
        if linker.biofeg is not None:
            if len(linker.epoch_seconds) == 1:
                check_biofeg_schedule(linker, state.steps)
            if linker.biofeg.due(len(linker.epoch_seconds)):
                linker.biofeg.run(linker)  # BioFEG steps 2-3, then the KB re-encoded once
    if state.eval_frequency and (state.steps - 1) % state.eval_frequency == 0:
        linker.refresh()


__all__ = ["TrainingState", "refresh", "datastore_mentions", "build_datastore", "update",
           "graph_loss", "check_biofeg_schedule", "after_step"]

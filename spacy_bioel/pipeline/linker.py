"""The `bioel_linker` component: a thin `TrainablePipe` that wires registered
stages (docs/component.md, "Stages") and writes annotations. What it knows:
`state.LinkerState`; how a batch is decided, caches included: `linking.Decider`;
a training update: `updates`; its settings: `settings.LinkerSettings`. None of
them imports this module.
"""

import logging
from collections import Counter
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer

from ..datastore.ranker import KNNRanker
from ..encoders.thinc_biencoder import embed_texts, is_built, is_contextual
from ..errors import BioELError, Errors
from ..index.name_index import NameIndex
from ..index.names import NameTable
from ..kb.knowledge_base import KnowledgeBase
from ..nil.stages import ThresholdNIL
from ..training.methods import training_hooks
from . import serialize, served, updates
from .cache import LinkCache, call_cache
from .decisions import Decision, Retrieved
from .extensions import install_extensions
from .linking import Decider, check_contextual
from .mentions import mention_batches, mention_spans, write_spans
from .settings import LinkerSettings
from .state import LinkerState

logger = logging.getLogger(__name__)


class BioELLinker(TrainablePipe):
    """Link every mention (`doc.ents`, or `doc.spans[spans_key]`) to a KB concept or
    NIL: `kb_id_` and the extensions the cfg names (`set_annotations`)."""

    def __init__(self, vocab: Vocab, model: Model, name: str = "bioel_linker", *,
                 loss: Callable, index: NameIndex, candidates, ranker: KNNRanker,
                 nil: ThresholdNIL, negatives, runtime, fgsm=None, biofeg=None, type_filter=None,
                 shortcut=None, settings: Optional[LinkerSettings] = None,
                 scorer: Optional[Callable] = None) -> None:
        self.vocab, self.model, self.name, self.loss, self.scorer = vocab, model, name, loss, scorer
        self.state = LinkerState(index)  # KB, index, datastore, training mentions
        self.candidates, self.ranker, self.nil, self.shortcut = candidates, ranker, nil, shortcut
        self.negatives, self.fgsm, self.type_filter = negatives, fgsm, type_filter
        self.runtime, self.biofeg = runtime, biofeg  # biofeg: training only (BioFEG steps 2-3)
        self.hooks = training_hooks(loss, biofeg)  # how research methods join training
        self.cfg = settings if settings is not None else LinkerSettings()
        self.counts: Counter = Counter()  # mentions decided without the encoder, by reason
        install_extensions(self.cfg)
        self.epoch_seconds: List[float] = []
        self.deferred_model = None  # weights of an ONNX-served pipeline, loaded on demand
        self.call: Optional[LinkCache] = None  # the cache of the current call
        self.rng = np.random.default_rng()
        self.steps = updates.TrainingState()
        self.timings: Optional[Counter] = None  # seconds per stage once the lab sets a Counter
        self.decider = Decider(self)  # the prediction path, reading the linker's current parts

    # what the linker knows lives in `state`; these read and write it
    index = property(lambda self: self.state.index, lambda self, v: setattr(self.state, "index", v))
    kb = property(lambda self: self.state.kb, doc="The KB (None before initialize).")
    datastore = property(lambda self: self.state.datastore,
                         lambda self, v: setattr(self.state, "datastore", v))
    datastore_stale = property(lambda self: self.state.datastore_stale,
                               lambda self, v: setattr(self.state, "datastore_stale", v))
    concept_index = property(lambda self: self.state.concept_index)
    train_docs = property(lambda self: self.state.train_docs)
    epoch_size = property(lambda self: len(self.state.train_mentions),
                          doc="The training mentions of one epoch (the progress line's unit).")

    # ------------------------------------------------------------------ setup
    def set_kb(self, kb: KnowledgeBase, names: Optional[NameTable] = None) -> None:
        """Use `kb`: its names are indexed by the next `refresh`, and the
        candidate generator, shortcut and type filter are built for it.
        `names`: its name table as a saved pipeline keeps it (loading)."""
        self.state.set_kb(kb, names)
        for stage in ("candidates", "type_filter", "shortcut"):
            self.set_stage(stage, getattr(self, stage))

    def set_stage(self, stage: str, value: Any) -> None:
        """Replace a stage (e.g. hybrid candidates on a trained linker); one that
        builds per KB (candidates, shortcut, type filter) is built for the current
        KB, one that reads the training mentions (the shortcut) reads them."""
        if value is not None and self.kb is not None and hasattr(value, "initialize"):
            value.initialize(self.kb, self.index)
        if hasattr(value, "learn"):
            value.learn(self.train_mentions)
        if stage == "runtime" and value is not None and value.needs_model():
            self.require_model("exporting the new runtime's graph")  # keeps: deferred => a graph
        setattr(self, stage, value)
        self.model_changed()

    @property
    def train_mentions(self) -> List[Tuple[str, str]]:
        """(mention input, gold concept id) of the datastore's training mentions."""
        return self.state.train_mentions

    @train_mentions.setter
    def train_mentions(self, mentions: Iterable[Tuple]) -> None:
        """(mention input, gold concept id) pairs, or triples that also set `train_docs`."""
        self.state.set_train_mentions(mentions)
        if hasattr(self.shortcut, "learn"):  # the names it defers (its KB lookup stays)
            self.shortcut.learn(self.train_mentions)
        self.model_changed()

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *,
                   nlp: Optional[Language] = None,
                   kb_loader: Optional[Callable[[], KnowledgeBase]] = None) -> None:
        """Load the KB and the encoder, encode every concept name into the index,
        and build the datastore from the training mentions (none: KB only).

        get_examples (Callable[[], Iterable[Example]]): Training examples (gold kb ids).
        nlp (Language): The pipeline ([training] eval_frequency sets the refresh steps).
        kb_loader (Callable[[], KnowledgeBase]): e.g. `spacy-bioel.KBFromFile.v1`.
        """
        if not callable(get_examples):
            raise BioELError(Errors.E164.format(name=self.name, value=type(get_examples).__name__))
        if kb_loader is None and self.kb is None:
            raise BioELError(Errors.E160.format(name=self.name))
        if kb_loader is not None:
            self.set_kb(kb_loader())
        rows = self.state.gold_rows(list(get_examples()), self.cfg["context_window"],
                                    self.cfg["spans_key"])
        if served.serve_untrained(self, rows):  # nothing to train on: the shipped tower
            return
        training = (nlp.config.get("training") or {}) if nlp is not None else {}
        # negatives are sampled reproducibly: spaCy's [training] seed fixes numpy's global state
        self.rng = np.random.default_rng(np.random.randint(2 ** 31))
        self.steps = updates.TrainingState(eval_frequency=int(training.get("eval_frequency") or 0))
        if self.deferred_model is not None:
            self.require_model("initialize")
        check_contextual(self.model, self.ranker, self.biofeg, self.runtime)
        self.model.initialize(X=([" "], "mention"))
        self.runtime.invalidate()
        self.train_mentions = rows
        self.refresh(force=True)

    # ------------------------------------------------------- module, caches
    def defer_model(self, deferred) -> None:
        """Predict without the PyTorch module until something needs it (see `weights`)."""
        self.deferred_model = deferred
        if deferred.dim is not None:
            self.model.set_dim("nO", deferred.dim)
        self.model_changed()

    def require_model(self, why: str) -> None:
        """Build the PyTorch module of a deferred pipeline (E180 when it cannot)."""
        if self.deferred_model is not None and not is_built(self.model):
            self.deferred_model.build(self.model, why)
            self.deferred_model = None
            self.index.use_device(self.model_device())

    def model_device(self) -> str:
        """The PyTorch module's device ('cpu' when it is not built)."""
        return str(self.model.layers[0].shims[0].device) if is_built(self.model) else "cpu"

    def model_changed(self) -> None:
        """Forget the current call's cached decisions (weights, KB, index,
        datastore or a setting changed)."""
        if self.call is not None:
            self.call.clear()

    def __call__(self, doc: Doc) -> Doc:
        with call_cache(self):
            return super().__call__(doc)

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Link `stream` in batches of at least `batch_size` docs and PIPE_MENTIONS
        mentions (`mentions.mention_batches`: each pays one pass over the name index)."""
        handler = self.get_error_handler()
        with call_cache(self):
            for docs in mention_batches(stream, batch_size, self.cfg["spans_key"]):
                try:
                    with self.decider.timed("linker"):
                        self.set_annotations(docs, self.predict(docs))
                    yield from docs
                except Exception as err:  # spaCy's contract: the pipeline's error handler decides
                    handler(self.name, self, docs, err)

    # -------------------------------------------------------------- encoding
    def embed(self, texts: Sequence[str], tower: str, progress: bool = False) -> np.ndarray:
        """RETURNS (np.ndarray): (len(texts), dim) embeddings, no gradients; mentions
        through the `runtime` stage, concept names through PyTorch."""
        if tower == "mention":
            return self.runtime.encode(self.model, texts, self.cfg["encode_batch_size"])
        self.require_model("encoding concept names")
        return embed_texts(self.model, texts, tower, self.cfg["encode_batch_size"], progress)

    def refresh(self, force: bool = False, datastore: bool = True) -> None:
        """Re-encode what is stale (everything with `force`): the name index, then
        (unless `datastore` is False) the kNN datastore. Called only at defined
        moments (initialize, an epoch's end, evaluation steps, explicit calls)."""
        if self.kb is None:
            raise BioELError(Errors.E160.format(name=self.name))
        self.require_model("refreshing the name index or the datastore")
        self.index.use_device(self.model_device())
        if force or self.index.stale:
            self.index.refresh(lambda texts: self.embed(texts, "concept", progress=True),
                               serialize.refresh_cache_key(self))
        if datastore and (force or self.datastore_stale or self.datastore is None):
            mentions = None if is_contextual(self.model) else (  # no text tower: empty
                lambda texts: embed_texts(self.model, texts, "mention", self.cfg["encode_batch_size"]))
            self.state.refresh_datastore(self.model.get_dim("nO"), mentions)
        self.model_changed()

    def build_datastore(self, docs: Iterable[Doc], add: bool = False) -> int:
        """Replace the datastore with the gold mentions of `docs` (e.g. train + dev),
        or with `add` add them to it (dev after `tune`). RETURNS (int): its size."""
        rows = self.state.gold_rows([Example(d, d) for d in docs], self.cfg["context_window"],
                                    self.cfg["spans_key"])
        self.train_mentions = (self.state.mention_rows() + rows) if add else rows
        self.datastore_stale = True
        self.refresh()
        return len(self.datastore)

    # ------------------------------------------------------------------ train
    def update(self, examples: Iterable[Example], *, drop: float = 0.0,
               sgd: Optional[Optimizer] = None, losses: Optional[Dict[str, float]] = None
               ) -> Dict[str, float]:
        """One step of the loss over the batch's linkable gold mentions (`updates.update`)."""
        return updates.update(self, list(examples), sgd, {} if losses is None else losses)

    def finish_update(self, sgd: Optimizer) -> None:
        """Apply the optimizer; then what follows a step (`updates.after_step`)."""
        super().finish_update(sgd)
        updates.after_step(self)

    def get_loss(self, examples: Iterable[Example], scores: Any) -> Tuple[float, Any]:
        """The loss is computed inside `update` (it needs retrieval); not used."""
        raise NotImplementedError(Errors.E161.format(name=self.name))

    # -------------------------------------------------------------- predict
    def retrieve(self, docs: Sequence[Doc], knn_k: Optional[int] = None) -> List[Retrieved]:
        """Per mention (docs in order), what `predict` ranks, uncached (`Decider.retrieve`)."""
        return self.decider.retrieve(docs, knn_k)

    def decide(self, retrieved: List[Retrieved]) -> List[Decision]:
        """Per mention, the decision from its retrieved alternatives (`Decider.decide`)."""
        return list(map(self.decider.decide, retrieved))

    def predict(self, docs: Iterable[Doc]) -> List[List[Decision]]:
        """RETURNS (List[List[Decision]]): per doc, per mention, the decision."""
        return self.decider.predict(list(docs), self.call)

    def set_annotations(self, docs: Iterable[Doc], predictions: List[List[Decision]]) -> None:
        """Write each decision on its mention (`Decision.annotate`: `kb_id_` and the
        extensions the cfg names); count the mentions decided without the encoder by
        reason and those `id_space` has no id for. E162: a doc's mentions and
        decisions differ in number."""
        key = self.cfg["spans_key"]
        for doc, decisions in zip(docs, predictions):
            spans = mention_spans(doc, key)
            if len(spans) != len(decisions):
                raise BioELError(Errors.E162.format(n_ents=len(spans), n_pred=len(decisions)))
            for ent, decision in zip(spans, decisions):
                unmapped = decision.annotate(ent, self.kb, self.cfg)
                self.counts.update(["id_space_unmapped"] * unmapped +
                                   [decision.reason] * (decision.reason is not None))
            write_spans(doc, key, spans)

    def score(self, examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
        """The scorer over the spans this linker links and the extension it writes."""
        if self.scorer is None:
            return {}
        return self.scorer(examples, kb_ents_attr=self.cfg["kb_ents_attr"],
                           spans_key=self.cfg["spans_key"], **kwargs)

    def set_option(self, key: str, value: Any) -> None:
        """Set a stage parameter ('nil.threshold', ...) or a setting ('top_k', ...): E172, E175."""
        serialize.set_option(self, key, value)
        self.model_changed()

    # ------------------------------------------------------------- serialise
    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return serialize.to_bytes(self, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "BioELLinker":
        return serialize.from_bytes(self, bytes_data, exclude)

    def to_disk(self, path, *, exclude: Iterable[str] = tuple()) -> None:
        """Save every part (`serialize.to_disk`); nothing is encoded here."""
        serialize.to_disk(self, path, exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "BioELLinker":
        """Restore what `to_disk` wrote (`serialize.from_disk`: E154, E156, E157, E173)."""
        serialize.from_disk(self, path, exclude)
        self.index.use_device(self.model_device())
        self.model_changed()
        return self


__all__ = ["BioELLinker"]

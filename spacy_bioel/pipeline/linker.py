"""The `bioel_linker` component: a thin `TrainablePipe` that wires registered
stages and writes annotations.

Stages (config blocks): `index`, `candidates`, `type_filter`, `ranker` (kNN-BioEL
eqs. 4-6), `nil`; training only: `negatives`, `fgsm` (see the README, "Stages").

Refresh: embeddings are computed only in `initialize`, at the end of each epoch
(the name index, for fresh hard negatives), at spaCy's evaluation steps
(step % [training] eval_frequency == 0), by the `spacy-bioel.RefreshLinkers.v1`
before_to_disk callback and by `refresh()`; `predict` and `to_disk` never encode
(they warn W006 when what they use is stale).
"""

import logging
import time
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer

from ..datastore.knn import DatastoreKNN
from ..datastore.ranker import KNNRanker
from ..encoders.thinc_biencoder import concept_tower_trained, embed_texts
from ..errors import BioELError, Errors, Warnings, warn
from ..index.name_index import NameIndex
from ..index.names import NameTable
from ..kb.knowledge_base import KnowledgeBase
from ..nil.stages import ThresholdNIL
from ..training.step import MentionBatch, train_step
from . import serialize
from .decisions import Retrieved, decide_entity
from .extensions import install_extensions, write_entity
from .mentions import gold_mentions, long_forms, mention_alternatives
from .shortcuts import Shortcuts

logger = logging.getLogger(__name__)


class BioELLinker(TrainablePipe):
    """Link every `doc.ents` entry to a KB concept, or flag it NIL. Writes
    `ent.kb_id_` (a concept id or 'NIL') and the extensions the cfg names
    (`extensions.write_entity`): [(concept_id, p), ...] best first (scispaCy's
    format; p the ranker's probability, eq. 6 or 4), the cosine to the linked
    concept's best name, the calibrated probability, the NIL flag and score."""

    def __init__(self, vocab: Vocab, model: Model, name: str = "bioel_linker", *,
                 loss: Callable, index: NameIndex, candidates, ranker: KNNRanker,
                 nil: ThresholdNIL, negatives, fgsm=None, type_filter=None, top_k: int = 64,
                 context_window: int = 0, abbreviations: bool = True,
                 nil_without_alnum: bool = True, exact_shortcut: bool = False,
                 encode_batch_size: int = 256, attrs: Optional[Dict[str, str]] = None,
                 scorer: Optional[Callable] = None) -> None:
        self.vocab, self.model, self.name, self.loss, self.scorer = vocab, model, name, loss, scorer
        self.index, self.candidates, self.ranker, self.nil = index, candidates, ranker, nil
        self.negatives, self.fgsm, self.type_filter = negatives, fgsm, type_filter
        self.cfg: Dict[str, Any] = {**(attrs or {})}
        for key, value in (("top_k", top_k), ("context_window", context_window),
                           ("abbreviations", abbreviations), ("nil_without_alnum", nil_without_alnum),
                           ("exact_shortcut", exact_shortcut), ("encode_batch_size", encode_batch_size)):
            serialize.set_option(self, key, value)
        self.counts: Counter = Counter()  # mentions decided without the encoder, by reason
        install_extensions(self.cfg)
        self.kb: Optional[KnowledgeBase] = None
        self.datastore: Optional[DatastoreKNN] = None
        self.train_mentions: List[Tuple[str, str]] = []  # (mention input, gold concept id)
        self.datastore_stale = True
        self.epoch_seconds: List[float] = []
        self._rng = np.random.default_rng()
        self._concept_index: Dict[str, int] = {}
        self._shortcuts = Shortcuts()
        self._seen_in_epoch, self._steps, self._eval_frequency, self._epoch_start = 0, 0, 0, 0.0

    # ------------------------------------------------------------------ setup
    def set_kb(self, kb: KnowledgeBase) -> None:
        """Use `kb`: its names are indexed by the next `refresh`, and the
        candidate generator and type filter are built for it."""
        names = NameTable(kb)
        if not names.concept_ids:
            raise BioELError(Errors.E105)
        self.kb = kb
        self._shortcuts.reset()
        self._concept_index = {cid: i for i, cid in enumerate(names.concept_ids)}
        self.index.set_names(names)
        for stage in ("candidates", "type_filter"):
            self.set_stage(stage, getattr(self, stage))
        self.datastore_stale = True

    def set_stage(self, stage: str, value: Any) -> None:
        """Replace a stage (e.g. hybrid candidates on a trained linker); one that
        builds per KB (candidates, type filter) is built for the current KB."""
        if value is not None and self.kb is not None and hasattr(value, "initialize"):
            value.initialize(self.kb, self.index)
        setattr(self, stage, value)

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
        examples = list(get_examples())
        # negatives are sampled reproducibly: spaCy's [training] seed fixes numpy's global state
        self._rng = np.random.default_rng(np.random.randint(2 ** 31))
        training = (nlp.config.get("training") or {}) if nlp is not None else {}
        self._eval_frequency = int(training.get("eval_frequency") or 0)
        self._steps = self._seen_in_epoch = 0
        self.model.initialize(X=([" "], "mention"))
        mentions = gold_mentions(examples, self._resolve, self.cfg["context_window"])
        self.train_mentions = [(text, self.index.names.concept_ids[c]) for text, c, _ in mentions]
        self.refresh(force=True)

    def _resolve(self, concept_id: str) -> Optional[int]:
        primary = self.kb.resolve(concept_id) if self.kb is not None else None
        return self._concept_index.get(primary) if primary is not None else None

    def embed(self, texts: Sequence[str], tower: str, progress: bool = False) -> np.ndarray:
        """RETURNS (np.ndarray): (len(texts), dim) embeddings, no gradients."""
        return embed_texts(self.model, texts, tower, self.cfg["encode_batch_size"], progress)

    def refresh(self, force: bool = False, datastore: bool = True) -> None:
        """Re-encode what is stale (or everything with `force`): the concept-name
        index, then (unless `datastore` is False) the kNN datastore."""
        if self.kb is None:
            raise BioELError(Errors.E160.format(name=self.name))
        if force or self.index.stale:
            key = None if concept_tower_trained(self.model) else serialize.name_cache_key(self)
            self.index.refresh(lambda texts: self.embed(texts, "concept", progress=True), key)
        if datastore and (force or self.datastore_stale or self.datastore is None):
            self.datastore = DatastoreKNN(self.model.get_dim("nO"))
            if self.train_mentions:
                self.datastore.add(self.embed([t for t, _ in self.train_mentions], "mention"),
                                   [cid for _, cid in self.train_mentions])
            self.datastore_stale = False

    def build_datastore(self, docs: Iterable[Doc]) -> int:
        """Replace the datastore with the gold mentions of `docs` (e.g. train + dev).
        RETURNS (int): the number of keys."""
        mentions = gold_mentions((Example(d, d) for d in docs), self._resolve,
                                 self.cfg["context_window"])
        self.train_mentions = [(text, self.index.names.concept_ids[c]) for text, c, _ in mentions]
        self.datastore_stale = True
        self.refresh()
        return len(self.datastore)

    # ------------------------------------------------------------------ train
    def update(self, examples: Iterable[Example], *, drop: float = 0.0,
               sgd: Optional[Optimizer] = None, losses: Optional[Dict[str, float]] = None
               ) -> Dict[str, float]:
        """One step of the configured loss over the batch's linkable gold mentions
        against their gold names, the sampled negatives (`negatives`) and, per
        the loss, in-batch negatives; plus the FGSM term when `fgsm` is set."""
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        validate_examples(examples, "BioELLinker.update")
        mentions = gold_mentions(list(examples), self._resolve, self.cfg["context_window"])
        if not mentions:
            return losses
        if not self.index.ready:
            raise BioELError(Errors.E168)
        batch = MentionBatch(*(list(column) for column in zip(*mentions)))
        losses[self.name] += train_step(self.model, self.loss, batch, self.index, self.negatives,
                                        self.fgsm, self._rng)
        if self._seen_in_epoch == 0:
            self._epoch_start = time.perf_counter()
        self._seen_in_epoch += len(mentions)
        if sgd not in (None, False):
            self.finish_update(sgd)
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        """Apply the optimizer and mark the embeddings stale; re-encode the index
        at the end of an epoch (fresh hard negatives) and everything stale at
        spaCy's evaluation steps."""
        super().finish_update(sgd)
        self._steps += 1
        self.datastore_stale = True
        self.index.stale = self.index.stale or concept_tower_trained(self.model)
        if self.train_mentions and self._seen_in_epoch >= len(self.train_mentions):
            self._seen_in_epoch = 0
            if self.index.stale:  # hard negatives need it; the datastore waits for evaluation
                self.refresh(datastore=False)
            self.epoch_seconds.append(round(time.perf_counter() - self._epoch_start, 1))
            logger.info("%s: epoch %d took %.1fs (index refresh included)", self.name,
                        len(self.epoch_seconds), self.epoch_seconds[-1])
        if self._eval_frequency and (self._steps - 1) % self._eval_frequency == 0:
            self.refresh()

    def get_loss(self, examples: Iterable[Example], scores: Any) -> Tuple[float, Any]:
        """The loss is computed inside `update` (it needs retrieval); not used."""
        raise NotImplementedError(Errors.E161.format(name=self.name))

    # -------------------------------------------------------------- predict
    def retrieve(self, docs: Sequence[Doc], knn_k: Optional[int] = None) -> List[Retrieved]:
        """Candidates (and datastore neighbours) of every entity, and of its long
        form when it is a defined abbreviation: everything `predict` ranks.

        RETURNS (List[Retrieved]): per entity (docs in order), its alternatives.
        """
        docs = list(docs)
        every = [(i, ent) for i, doc in enumerate(docs) for ent in doc.ents]
        forms = long_forms(docs) if self.cfg["abbreviations"] else {}
        keep, out = self._shortcuts.split(every, forms, self.cfg, self.kb, self.index,
                                          self.type_filter)
        spans = [every[k] for k in keep]
        if not spans:
            return out
        if not self.index.ready:
            raise BioELError(Errors.E168)
        if self.index.stale or self.datastore_stale:
            warn(Warnings.W006.format(name=self.name))
        texts, labels, owner = mention_alternatives(spans, self.cfg["context_window"], forms)
        queries = self.embed(texts, "mention")
        masks = self.type_filter.masks(labels) if self.type_filter is not None else None
        k = min(self.cfg["top_k"], len(self.index.names.concept_ids))
        found = self.candidates(texts, queries, self.index, k, masks)
        knn_k = knn_k or (self.ranker.knn_k if self.ranker.use_knn else 0)  # kNN off: no search
        use_knn = self.datastore is not None and len(self.datastore) and knn_k
        neighbours = self.datastore.search(queries, knn_k) if use_knn else [[] for _ in texts]
        ids = self.index.names.concept_ids
        for j, (rows, near) in enumerate(zip(found, neighbours)):
            mask = masks[j] if masks is not None else None
            allowed = [(cid, s) for cid, s in near if cid in self._concept_index and
                       (mask is None or mask[self._concept_index[cid]])]
            out[keep[owner[j]]].append({"candidates": [(ids[c], score, sim)
                                                       for c, score, sim in rows],
                                        "neighbours": allowed})
        return out

    def decide(self, retrieved: List[Retrieved]) -> List[Dict[str, Any]]:
        """Rank each alternative, keep the better-supported one (a long form over
        its abbreviation, ties included: `prefers_later`), then apply the NIL
        stage. RETURNS: per entity, a dict."""
        return [decide_entity(alternatives, self.ranker, self.nil, self.cfg["top_k"])
                for alternatives in retrieved]

    def predict(self, docs: Iterable[Doc]) -> List[List[Dict[str, Any]]]:
        """RETURNS (List[List[Dict[str, Any]]]): per doc, per ent, the decision."""
        docs = list(docs)
        decided = iter(self.decide(self.retrieve(docs)))
        return [[next(decided) for _ in doc.ents] for doc in docs]

    def set_annotations(self, docs: Iterable[Doc], predictions: List[List[Dict[str, Any]]]) -> None:
        """Write kb_id_, the scored candidates, similarity, probability and NIL flags."""
        for doc, doc_predictions in zip(docs, predictions):
            ents = list(doc.ents)
            if len(ents) != len(doc_predictions):
                raise BioELError(Errors.E162.format(n_ents=len(ents), n_pred=len(doc_predictions)))
            for ent, result in zip(ents, doc_predictions):
                if "reason" in result:
                    self.counts[result["reason"]] += 1
                write_entity(ent, result, self.cfg)
            doc.ents = ents

    def canonical_name(self, concept_id: str) -> Optional[str]:
        """RETURNS (Optional[str]): the KB's canonical name of a concept."""
        concept = self.kb.get(concept_id) if self.kb is not None else None
        return concept.canonical_name if concept is not None else None

    def set_option(self, key: str, value: Any) -> None:
        """Set a stage parameter ('ranker.knn_k', 'nil.threshold', ...) or a prediction
        setting (top_k, ...), checked (E172 unknown key, E175 bad value; see serialize)."""
        serialize.set_option(self, key, value)

    # ------------------------------------------------------------- serialise
    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return serialize.to_bytes(self, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "BioELLinker":
        return serialize.from_bytes(self, bytes_data, exclude)

    def to_disk(self, path, *, exclude: Iterable[str] = tuple()) -> None:
        """Save cfg (settings and tuned stage parameters), kb, index, datastore,
        encoder config and weights; nothing is encoded here."""
        serialize.to_disk(self, path, exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "BioELLinker":
        """Restore what `to_disk` wrote (E156 missing file, E157 config mismatch,
        E154 corrupted index, E173 a format this version cannot read)."""
        return serialize.from_disk(self, path, exclude)


__all__ = ["BioELLinker"]

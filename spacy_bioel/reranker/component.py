"""The `bioel_reranker` component: a cross-encoder over (mention in context,
candidate) pairs that rescores the top-k candidates an upstream linker wrote in
`Span._.kb_ents` (a `bioel_linker`, scispaCy's linker, any component that
writes that list) and rewrites `ent.kb_id_`, the scored candidates and the NIL
flag and score.

Training (`spacy train configs/reranker.cfg`): the trained linker is sourced,
frozen and listed in `annotating_components`, so each batch carries its
candidates; the loss is listwise softmax cross-entropy over them with the gold
inserted when retrieval missed it (`losses.listwise`), plus a learned "no
concept" option when the training data has NIL mentions.
"""

import logging
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer

from ..encoders.thinc_cross_encoder import score_pairs
from ..errors import BioELError, Errors
from ..kb.knowledge_base import NIL, KnowledgeBase
from ..losses.listwise import listwise_softmax_loss
from ..pipeline.extensions import install_extensions
from ..pipeline.updates import TrainingState
from . import serialize
from .decisions import decide, gated, no_candidates
from .inputs import CandidateTexts, query_text
from .training_lists import (NIL_MARKERS, Pair, TrainingLists, build_training_lists,
                             seen_concepts)

logger = logging.getLogger(__name__)


class BioELReranker(TrainablePipe):
    """Rerank each entity's upstream candidates with a cross-encoder.

    Settings (cfg): top_k candidates read, train_top_k of them trained on
    (each training pair costs a forward and backward pass), train_linker_weight
    (w in the training loss on s + w log p_upstream), train_candidates ("all",
    or "seen": only concepts with a training mention), context_window tokens each side of
    the mention (within its sentence), n_synonyms and definition_chars of the
    candidate text, learn_nil (a "no concept" option, used when the training
    data has NIL mentions), use_nil_option (whether that option decides NIL at
    prediction; tuned on dev), nil_text (that option's candidate text),
    nil_threshold, gate, linker_weight (see `decisions`), kb_from (the
    component whose KB names the candidates), batch_size (pairs per forward
    pass at prediction) and the Span extensions read and written.
    """

    def __init__(self, vocab: Vocab, model: Model, name: str = "bioel_reranker", *,
                 top_k: int = 16, train_top_k: Optional[int] = 8,
                 train_linker_weight: float = 0.0, train_candidates: str = "all",
                 context_window: int = 16, n_synonyms: int = 3,
                 definition_chars: int = 120, learn_nil: bool = True, use_nil_option: bool = True,
                 nil_text: str = "none of these concepts", nil_threshold: Optional[float] = None,
                 gate: Optional[float] = None, linker_weight: float = 0.0,
                 kb_from: str = "bioel_linker", batch_size: int = 64,
                 attrs: Optional[Dict[str, str]] = None, scorer: Optional[Callable] = None) -> None:
        self.vocab, self.model, self.name, self.scorer = vocab, model, name, scorer
        self.cfg: Dict[str, Any] = {**(attrs or {}), "kb_from": kb_from, "nil_option": False}
        for key, value in (("top_k", top_k), ("train_top_k", train_top_k),
                           ("train_linker_weight", train_linker_weight),
                           ("train_candidates", train_candidates),
                           ("context_window", context_window),
                           ("n_synonyms", n_synonyms), ("definition_chars", definition_chars),
                           ("learn_nil", learn_nil), ("use_nil_option", use_nil_option),
                           ("nil_text", nil_text),
                           ("nil_threshold", nil_threshold), ("gate", gate),
                           ("linker_weight", linker_weight), ("batch_size", batch_size)):
            serialize.set_option(self, key, value)
        install_extensions(self.cfg)
        self.kb: Optional[KnowledgeBase] = None
        self.texts: Optional[CandidateTexts] = None
        self.counts: Counter = Counter()  # entities by what happened to them
        self.seen: Optional[Set[str]] = None  # concepts with a training mention (initialize)
        # where training is, for the progress line (`spacy-bioel.ProgressLogger.v1`)
        self.steps = TrainingState()
        self.epoch_size = 0  # gold mentions of the training examples (initialize)
        self.epoch_seconds: List[float] = []

    # ------------------------------------------------------------------ setup
    def set_kb(self, kb: KnowledgeBase) -> None:
        """Read candidate names, synonyms and definitions from `kb`."""
        self.kb = kb
        self.texts = CandidateTexts(kb, self.cfg["n_synonyms"], self.cfg["definition_chars"])

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *,
                   nlp: Optional[Language] = None,
                   kb_loader: Optional[Callable[[], KnowledgeBase]] = None) -> None:
        """Take the KB (`kb_loader`, else the KB of the `kb_from` component),
        load the cross-encoder, and turn the "no concept" option on when
        `learn_nil` is set and the training examples have NIL mentions.

        get_examples (Callable[[], Iterable[Example]]): Training examples.
        nlp (Language): The pipeline (its `kb_from` component lends its KB).
        kb_loader (Callable[[], KnowledgeBase]): e.g. `spacy-bioel.KBFromFile.v1`.
        """
        if not callable(get_examples):
            raise BioELError(Errors.E164.format(name=self.name, value=type(get_examples).__name__))
        if kb_loader is not None:
            self.set_kb(kb_loader())
        elif nlp is not None and self.cfg["kb_from"] in nlp.component_names and \
                getattr(nlp.get_pipe(self.cfg["kb_from"]), "kb", None) is not None:
            self.set_kb(nlp.get_pipe(self.cfg["kb_from"]).kb)
        if self.kb is None:
            raise BioELError(Errors.E186.format(name=self.name))
        self.model.initialize(X=[("mention", "concept")])
        gold = [ent.kb_id_ for eg in get_examples() for ent in eg.reference.ents]
        n_nil = sum(kb_id in NIL_MARKERS for kb_id in gold)
        self.steps, self.epoch_size, self.epoch_seconds = TrainingState(), len(gold), []
        self.seen = seen_concepts(self.kb, get_examples())
        self.cfg["nil_option"] = bool(self.cfg["learn_nil"] and n_nil)
        logger.info("%s: %d NIL training mention(s); learned 'no concept' option %s; %d seen "
                    "concept(s)", self.name, n_nil, "on" if self.cfg["nil_option"] else "off",
                    len(self.seen))

    # ------------------------------------------------------------------ pairs
    def pairs_for(self, ent: Span, candidates: Sequence[Tuple[str, float]]) -> List[Pair]:
        """The (query, candidate text) pairs of one entity: its candidates, then
        the "no concept" option when it is on."""
        query = query_text(ent, self.cfg["context_window"])
        pairs = [(query, self.texts(cid)) for cid, _ in candidates]
        if self.cfg["nil_option"]:
            pairs.append((query, self.cfg["nil_text"]))
        return pairs

    def read_candidates(self, ent: Span) -> Optional[List[Tuple[str, float]]]:
        """The upstream candidates (top_k of them), None when nothing wrote any."""
        value = ent._.get(self.cfg["kb_ents_attr"])
        if value is None:
            return None
        return [(str(cid), float(score)) for cid, score in list(value)[:self.cfg["top_k"]]]

    # ------------------------------------------------------------------ train
    def training_lists(self, examples: Sequence[Example]) -> TrainingLists:
        """The batch's training pairs, groups and linker priors (`training_lists`)."""
        return build_training_lists(self, examples)

    @property
    def train_k(self) -> int:
        """Candidates per training mention: train_top_k, at most top_k."""
        train_top_k = self.cfg["train_top_k"]
        return self.cfg["top_k"] if train_top_k is None else min(train_top_k, self.cfg["top_k"])

    def update(self, examples: Iterable[Example], *, drop: float = 0.0,
               sgd: Optional[Optimizer] = None, losses: Optional[Dict[str, float]] = None
               ) -> Dict[str, float]:
        """One step of listwise softmax cross-entropy over the batch's gold
        mentions and their upstream candidates (E185 when none has any). With
        train_linker_weight w the loss is on s + w * log p_upstream, so the
        cross-encoder learns a correction of the linker's ranking."""
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        if self.kb is None:
            raise BioELError(Errors.E186.format(name=self.name))
        lists = self.training_lists(examples)
        if not lists.groups:
            if lists.unannotated:
                raise BioELError(Errors.E185.format(name=self.name, n=lists.unannotated,
                                                    attr=self.cfg["kb_ents_attr"]))
            return losses
        scores, backprop = self.model.begin_update(lists.pairs)
        logits = self.model.ops.to_numpy(scores)[:, 0] + \
            self.cfg["train_linker_weight"] * lists.priors
        loss, d_scores = listwise_softmax_loss(logits, lists.groups)
        backprop(self.model.ops.asarray2f(d_scores.reshape(-1, 1)))
        if sgd is not None:
            self.finish_update(sgd)
        losses[self.name] += loss
        self.count_step(loss, sum(len(eg.reference.ents) for eg in examples))
        return losses

    def count_step(self, loss: float, mentions: int) -> None:
        """Where training is (steps, the epoch's gold mentions seen, the loss
        since the progress logger last read it); an epoch ends after
        `epoch_size` gold mentions."""
        self.steps.record(loss, mentions)
        self.steps.steps += 1
        if self.steps.epoch_complete(self.epoch_size):
            self.epoch_seconds.append(self.steps.epoch_elapsed())

    def get_loss(self, examples: Iterable[Example], scores: Any) -> Tuple[float, Any]:
        """The loss is computed inside `update` (it needs the candidate lists)."""
        raise NotImplementedError(Errors.E161.format(name=self.name))

    # -------------------------------------------------------------- predict
    def predict(self, docs: Iterable[Doc]) -> List[List[Optional[Dict[str, Any]]]]:
        """RETURNS: per doc, per ent, the decision, or None to leave the entity
        as the linker wrote it (the gate found the linker sure)."""
        docs = list(docs)
        if self.kb is None:
            raise BioELError(Errors.E186.format(name=self.name))
        out: List[List[Optional[Dict[str, Any]]]] = []
        todo: List[Tuple[int, int, Span, List[Tuple[str, float]]]] = []
        for d, doc in enumerate(docs):
            row: List[Optional[Dict[str, Any]]] = []
            for e, ent in enumerate(doc.ents):
                candidates = self.read_candidates(ent)
                row.append(None if candidates else no_candidates())
                if candidates and not gated(candidates, self.cfg["gate"]):
                    todo.append((d, e, ent, candidates))
            out.append(row)
        scored = self.score_entities([(ent, candidates) for _, _, ent, candidates in todo])
        for (d, e, ent, candidates), (scores, nil_logit) in zip(todo, scored):
            out[d][e] = decide(candidates, scores,
                               nil_logit if self.cfg["use_nil_option"] else None,
                               self.cfg["linker_weight"], self.cfg["nil_threshold"],
                               self.linker_nil(ent))
        return out

    def score_entities(self, items: Sequence[Tuple[Span, List[Tuple[str, float]]]]
                       ) -> List[Tuple[np.ndarray, Optional[float]]]:
        """Score every (entity, candidates) item's pairs in one batched pass.
        RETURNS: per item, (its candidates' logits, the "no concept" logit or None)."""
        pairs: List[Pair] = []
        for ent, candidates in items:
            pairs.extend(self.pairs_for(ent, candidates))
        scores = score_pairs(self.model, pairs, self.cfg["batch_size"]) if pairs else np.zeros(0)
        out: List[Tuple[np.ndarray, Optional[float]]] = []
        offset, extra = 0, int(self.cfg["nil_option"])
        for _, candidates in items:
            n = len(candidates)
            out.append((scores[offset:offset + n], float(scores[offset + n]) if extra else None))
            offset += n + extra
        return out

    def linker_nil(self, ent: Span) -> Optional[Tuple[bool, Optional[float]]]:
        """The upstream (is_nil, nil_score) of an entity, None when not written."""
        flag = ent._.get(self.cfg["is_nil_attr"])
        return None if flag is None else (flag, ent._.get(self.cfg["nil_score_attr"]))

    def set_annotations(self, docs: Iterable[Doc],
                        predictions: List[List[Optional[Dict[str, Any]]]]) -> None:
        """Write kb_id_, the reranked candidates, the probability and the NIL
        flag and score of every decided entity; gated ones stay as they were."""
        for doc, decisions in zip(docs, predictions):
            ents = list(doc.ents)
            if len(ents) != len(decisions):
                raise BioELError(Errors.E162.format(n_ents=len(ents), n_pred=len(decisions)))
            for ent, result in zip(ents, decisions):
                if result is None:
                    self.counts["gated"] += 1
                    continue
                self.counts["no_candidates" if not result["candidates"] else "reranked"] += 1
                before = ent.kb_id_
                ent.kb_id_ = NIL if result["is_nil"] else result["candidates"][0][0]
                for attr, key in (("kb_ents_attr", "candidates"), ("is_nil_attr", "is_nil"),
                                  ("nil_score_attr", "nil_score"),
                                  ("probability_attr", "probability")):
                    ent._.set(self.cfg[attr], result[key])
                if ent.kb_id_ != before and self.cfg.get("similarity_attr"):
                    ent._.set(self.cfg["similarity_attr"], None)  # the linker's, for its choice
            doc.ents = ents

    def set_option(self, key: str, value: Any) -> None:
        """Set a setting (gate, nil_threshold, linker_weight, top_k, ...), checked (E175)."""
        serialize.set_option(self, key, value)
        if key in ("n_synonyms", "definition_chars") and self.kb is not None:
            self.set_kb(self.kb)

    # ------------------------------------------------------------- serialise
    def to_disk(self, path, *, exclude: Iterable[str] = tuple()) -> None:
        """Save cfg, the KB, the encoder config (tokenizer + transformer config) and weights."""
        serialize.to_disk(self, path, exclude)

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "BioELReranker":
        """Restore what `to_disk` wrote (E156 missing file, E176 damaged file)."""
        serialize.from_disk(self, path, exclude)
        return self

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return serialize.to_bytes(self, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "BioELReranker":
        serialize.from_bytes(self, bytes_data, exclude)
        return self


__all__ = ["BioELReranker"]

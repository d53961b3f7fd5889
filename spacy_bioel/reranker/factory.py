"""The `bioel_reranker` factory (entry point in `spacy_factories`)."""
from __future__ import annotations

from typing import Callable, Optional

from spacy.language import Language
from thinc.api import Config, Model

from ..encoders.threads import install_fork_handler
from ..pipeline.extensions import DEFAULT_ATTRS, SCORE_WEIGHTS
from .component import BioELReranker

DEFAULT_MODEL = """
[model]
@architectures = "spacy-bioel.CrossEncoder.v1"
encoder = "embedded:all-MiniLM-L6-v2"
pooling = "mean"
max_length = 64
frozen_layers = 0
dropout = 0.1
mixed_precision = false
"""

DEFAULT_CONFIG = {
    "model": Config().from_str(DEFAULT_MODEL)["model"],
    "top_k": 16,
    "train_top_k": 8,
    "train_linker_weight": 0.0,
    "train_candidates": "all",
    "context_window": 16,
    "n_synonyms": 3,
    "definition_chars": 120,
    "learn_nil": True,
    "use_nil_option": True,
    "nil_text": "none of these concepts",
    "nil_threshold": None,
    "gate": None,
    "linker_weight": 0.0,
    "kb_from": "bioel_linker",
    "batch_size": 64,
    **DEFAULT_ATTRS,
}


@Language.factory("bioel_reranker", default_config=DEFAULT_CONFIG, requires=["doc.ents"],
                  assigns=["token.ent_kb_id"],
                  default_score_weights=SCORE_WEIGHTS)
def make_bioel_reranker(nlp: Language, name: str, model: Model, top_k: int,
                        train_top_k: Optional[int], train_linker_weight: float,
                        train_candidates: str, context_window: int,
                        n_synonyms: int, definition_chars: int, learn_nil: bool,
                        use_nil_option: bool, nil_text: str,
                        nil_threshold: Optional[float], gate: Optional[float],
                        linker_weight: float, kb_from: str, batch_size: int, kb_ents_attr: str,
                        is_nil_attr: str, nil_score_attr: str, similarity_attr: str,
                        probability_attr: str, scorer: Optional[Callable]) -> BioELReranker:
    """Create a `bioel_reranker` (see `BioELReranker`); place it after the linker.

    model: the cross-encoder (`spacy-bioel.CrossEncoder.v1`).
    top_k: upstream candidates rescored per entity (Wiatrak et al. use 16).
    train_top_k: of those, the candidates each training mention is trained on
        (the gold inserted when missing; null: top_k). Training cost grows
        linearly with it.
    train_linker_weight: w in the training loss on s + w * log p_upstream: with
        w > 0 the cross-encoder learns a correction of the linker's ranking
        (then predict with linker_weight = w, or tune it on dev).
    train_candidates: "all" trains on the upstream top candidates; "seen" on
        those whose concept has a training mention (the gold always does), so
        that having been seen in training cannot tell the gold from a negative.
    context_window: tokens of the sentence each side of the marked mention.
    n_synonyms, definition_chars: what the candidate text holds beside its
        canonical name (0 leaves them out).
    learn_nil: learn a "no concept" option (`nil_text`) when the training data
        has NIL mentions.
    use_nil_option: let the learned option decide NIL at prediction (false:
        the threshold, else the linker's NIL decision, decides; tuned on dev).
    nil_threshold: NIL when 1 - P(best concept) exceeds it (tuned on dev; null: none).
    gate: rerank only entities whose upstream top-2 score margin is below it
        (tuned on dev; null: every entity).
    linker_weight: w in s + w * log p_linker (tuned on dev; 0: the cross-encoder alone).
    kb_from: the component whose KB names the candidates when initialize gets
        no kb_loader.
    batch_size: pairs per cross-encoder forward pass at prediction.
    *_attr: the Span extensions read (kb_ents_attr, is_nil_attr, nil_score_attr)
        and written.
    """
    install_fork_handler()
    return BioELReranker(nlp.vocab, model, name, top_k=top_k, train_top_k=train_top_k,
                         train_linker_weight=train_linker_weight,
                         train_candidates=train_candidates, context_window=context_window,
                         n_synonyms=n_synonyms, definition_chars=definition_chars,
                         learn_nil=learn_nil, use_nil_option=use_nil_option, nil_text=nil_text,
                         nil_threshold=nil_threshold,
                         gate=gate, linker_weight=linker_weight, kb_from=kb_from,
                         batch_size=batch_size,
                         attrs={"kb_ents_attr": kb_ents_attr, "is_nil_attr": is_nil_attr,
                                "nil_score_attr": nil_score_attr,
                                "similarity_attr": similarity_attr,
                                "probability_attr": probability_attr},
                         scorer=scorer)

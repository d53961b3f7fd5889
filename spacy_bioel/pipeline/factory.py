"""The `bioel_linker` factory (entry point in `spacy_factories`)."""
from __future__ import annotations

from typing import Callable, Optional

from spacy.language import Language
from thinc.api import Config, Model

from .linker import DEFAULT_MODEL, BioELLinker

DEFAULT_CONFIG = {
    "model": Config().from_str(DEFAULT_MODEL)["model"],
    "loss": {"@misc": "spacy-bioel.InfoNCELoss.v1", "temperature": 0.05, "in_batch": True},
    "n_hard_negatives": 4,
    "negative_sampling": "hard",
    "hard_fraction": 0.5,
    "fgsm_epsilon": 0.0,
    "fgsm_weight": 1.0,
    "top_k": 64,
    "index_type": "flat",
    "index_backend": "auto",
    "use_knn": True,
    "knn_k": 4,
    "knn_lambda": 0.1,
    "knn_beta1": 0.05,
    "knn_beta2": 1.0,
    "nil_threshold": None,
    "context_window": 0,
    "abbreviations": True,
    "encode_batch_size": 256,
    "embedding_cache": None,
    "kb_ents_attr": "kb_ents",
    "is_nil_attr": "is_nil",
    "nil_score_attr": "nil_score",
    "scorer": {"@scorers": "spacy-bioel.linker_scorer.v1"},
}


@Language.factory("bioel_linker", default_config=DEFAULT_CONFIG,
                  assigns=["token.ent_kb_id"],
                  default_score_weights={"bioel_acc@1": 1.0, "bioel_acc@5": 0.0,
                                         "nel_micro_f": 0.0, "nel_micro_p": None,
                                         "nel_micro_r": None})
def make_bioel_linker(nlp: Language, name: str, model: Model, loss: Callable,
                      n_hard_negatives: int, negative_sampling: str, hard_fraction: float,
                      fgsm_epsilon: float, fgsm_weight: float, top_k: int, index_type: str, index_backend: str,
                      use_knn: bool, knn_k: int, knn_lambda: float, knn_beta1: float,
                      knn_beta2: float, nil_threshold: Optional[float], context_window: int,
                      abbreviations: bool, encode_batch_size: int,
                      embedding_cache: Optional[str], kb_ents_attr: str,
                      is_nil_attr: str, nil_score_attr: str,
                      scorer: Optional[Callable]) -> BioELLinker:
    """Create a `bioel_linker` (see `BioELLinker`; options in `DEFAULT_CONFIG`).

    loss: a registered loss (`spacy-bioel.InfoNCELoss.v1`, `.ProxyLoss.v1`,
        `.TripletLoss.v1`, `.PrototypeTripletLoss.v1`).
    n_hard_negatives: p, the negatives sampled per mention (kNN-BioEL eq. 3;
        0: in-batch negatives only).
    negative_sampling: how they are sampled: 'hard' (retrieved from the whole KB
        with the model being trained), 'random' (uniform over concepts) or
        'mixed' (`hard_fraction` of them hard, the rest random).
    fgsm_epsilon, fgsm_weight: FGSM regularisation of the concept tower's
        inputs (Wiatrak et al. eqs. 6-8); 0 turns it off.
    top_k: candidates written to `Span._.<kb_ents_attr>`.
    use_knn, knn_k, knn_lambda, knn_beta1, knn_beta2: kNN-BioEL eqs. 4-6.
    nil_threshold: NIL when nil_score >= threshold (None: only when no candidate).
    abbreviations: score a short-form mention with its long form too.
    embedding_cache: a folder caching a frozen concept tower's name embeddings
        across runs on the same KB (None: always encode).
    """
    return BioELLinker(nlp.vocab, model, name, loss=loss, n_hard_negatives=n_hard_negatives,
                       negative_sampling=negative_sampling, hard_fraction=hard_fraction,
                       fgsm_epsilon=fgsm_epsilon, fgsm_weight=fgsm_weight,
                       top_k=top_k, index_type=index_type, index_backend=index_backend,
                       use_knn=use_knn, knn_k=knn_k, knn_lambda=knn_lambda,
                       knn_beta1=knn_beta1, knn_beta2=knn_beta2, nil_threshold=nil_threshold,
                       context_window=context_window, abbreviations=abbreviations,
                       encode_batch_size=encode_batch_size, embedding_cache=embedding_cache,
                       kb_ents_attr=kb_ents_attr,
                       is_nil_attr=is_nil_attr, nil_score_attr=nil_score_attr, scorer=scorer)

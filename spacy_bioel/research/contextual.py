"""A mention tower that reads mentions in context: `spacy-bioel.ContextualBiEncoder.v1`.

The mention embedding is the mean of the token vectors that an upstream
component of the pipeline computed for the mention's tokens (span pooling, as
spaCy's span categorizer does), L2-normalised: with a `transformer` component
(spacy-transformers) and its `TransformerListener.v1` with `reduce_mean`
pooling, that is the mean over the mention's wordpieces of a transformer that
read the whole document, shared with an upstream NER and fine-tuned through the
listener by the linker's loss. Concept names are encoded by the frozen string
encoder (`encoder`), so the candidate index is built once.

The mention in context is the idea of Zhang et al., KRISSBERT (2021) and of
ELQ (Li et al. 2020), a bi-encoder whose mention side reads the document; the
span pooling over a shared transformer is spaCy's (`spacy.ml.extract_spans`).
"""
from __future__ import annotations

from typing import List

from spacy.ml.extract_spans import extract_spans
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain, list2ragged, reduce_mean, with_getitem
from thinc.types import Floats2d

from ..encoders.common import DEFAULT_ENCODER
from ..encoders.thinc_biencoder import build_biencoder


@registry.architectures("spacy-bioel.ContextualBiEncoder.v1")
def build_contextual_biencoder(tok2vec: Model[List[Doc], List[Floats2d]],
                               encoder: str = DEFAULT_ENCODER, pooling: str = "mean",
                               similarity: str = "cosine", max_length: int = 25
                               ) -> Model:
    """A bi-encoder whose mention tower pools an upstream component's token vectors.

    tok2vec (Model[List[Doc], List[Floats2d]]): Token vectors of each doc, e.g.
        `spacy-transformers.TransformerListener.v1` (pooling `reduce_mean.v1`,
        upstream "transformer") or `spacy.Tok2VecListener.v1`. Their width must be
        the concept encoder's (E210): use the same base model for both.
    encoder (str): The concept-name encoder (frozen): a local model directory, a
        hub name (needs internet) or 'embedded:all-MiniLM-L6-v2'.
    pooling, similarity, max_length: As `spacy-bioel.BiEncoder.v1`, for concept names.
    """
    model = build_biencoder(encoder=encoder, pooling=pooling, similarity=similarity,
                            shared_towers=True, train_concept_tower=False,
                            max_length=max_length)
    spans = chain(with_getitem(0, chain(tok2vec, list2ragged())), extract_spans(), reduce_mean())
    if similarity == "cosine":  # as the string encoder's mention tower
        spans = chain(spans, l2_normalize())
    model._layers.append(spans)
    model.attrs["contextual"] = True
    return model


def l2_normalize() -> Model[Floats2d, Floats2d]:
    """Rows scaled to unit length (identity for a zero row), with its gradient."""
    return Model("l2_normalize", _normalize_forward)


def _normalize_forward(model: Model, X: Floats2d, is_train: bool):
    xp = model.ops.xp
    norms = xp.sqrt((X * X).sum(axis=1, keepdims=True))
    norms = xp.maximum(norms, 1e-12)
    Y = X / norms

    def backprop(dY: Floats2d) -> Floats2d:
        # d(x/|x|) = (dY - y (y . dY)) / |x|
        return (dY - Y * (Y * dY).sum(axis=1, keepdims=True)) / norms

    return Y, backprop


__all__ = ["build_contextual_biencoder", "l2_normalize"]

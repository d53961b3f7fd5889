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

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.ml.extract_spans import extract_spans
from spacy.tokens import Doc, Span
from spacy.util import registry
from thinc.api import Model, chain, list2ragged, reduce_mean, with_getitem
from thinc.types import Floats2d, Ints1d, Ragged

from ..errors import BioELError, Errors
from .common import DEFAULT_ENCODER
from .thinc_biencoder import build_biencoder

SpanInput = Tuple[List[Doc], Ragged]  # docs, (start, end) token offsets per doc


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


def span_input(docs: Sequence[Doc], spans: Sequence[Sequence[Tuple[int, int]]],
               ops) -> SpanInput:
    """The model's input: `docs` and, per doc, its mentions' (start, end) token offsets."""
    lengths = ops.asarray1i([len(rows) for rows in spans])
    flat = [pair for rows in spans for pair in rows]
    indices = ops.asarray2i(np.asarray(flat, dtype="int32").reshape(-1, 2))
    return list(docs), Ragged(indices, lengths)


def check_width(model: Model, output: Floats2d) -> None:
    """E210 when the token vectors are not as wide as the concept embeddings."""
    if output.shape[0] and output.shape[1] != model.get_dim("nO"):
        raise BioELError(Errors.E210.format(width=output.shape[1], dim=model.get_dim("nO"),
                                            encoder=model.attrs["encoder"]))


def check_annotated(docs: Sequence[Doc]) -> None:
    """E211 when a doc has no transformer output to read (the `transformer`
    component missing, disabled or after the linker); token vectors of a tok2vec
    listener are not checked here (spaCy's own listener raises)."""
    for doc in docs:
        if Doc.has_extension("trf_data") and doc._.trf_data is None:
            raise BioELError(Errors.E211.format(text=doc.text[:60]))


def embed_entities(model: Model, entities: Sequence[Tuple[Doc, int, int]]) -> np.ndarray:
    """(len(entities), dim) embeddings of (doc, start token, end token) mentions,
    no gradients; docs are read once each, in order of first appearance."""
    if not entities:
        return np.zeros((0, model.get_dim("nO")), dtype=np.float32)
    order: Dict[int, int] = {}
    docs: List[Doc] = []
    rows: List[List[Tuple[int, int]]] = []
    where: List[Tuple[int, int]] = []
    for doc, start, end in entities:
        k = order.setdefault(id(doc), len(docs))
        if k == len(docs):
            docs.append(doc)
            rows.append([])
        where.append((k, len(rows[k])))
        rows[k].append((start, end))
    check_annotated(docs)
    output = model.ops.to_numpy(model.predict((span_input(docs, rows, model.ops), "spans")))
    check_width(model, output)
    offsets = np.cumsum([0] + [len(r) for r in rows])
    return output[[offsets[k] + j for k, j in where]].astype(np.float32)


def locate(doc: Doc, text: str, near: Span) -> Optional[Tuple[int, int]]:
    """(start, end) tokens of the occurrence of `text` in `doc` nearest before
    `near` (a defined abbreviation's long form), else any occurrence; None when
    the text does not occur."""
    found, position = None, doc.text.find(text)
    while position >= 0:
        span = doc.char_span(position, position + len(text), alignment_mode="expand")
        if span is not None and len(span):
            found = (span.start, span.end)
            if position >= near.start_char:
                break
        position = doc.text.find(text, position + 1)
    return found


__all__ = ["build_contextual_biencoder", "l2_normalize", "span_input", "embed_entities",
           "check_width", "check_annotated", "locate"]

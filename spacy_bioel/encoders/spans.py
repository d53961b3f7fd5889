"""Reading mentions where they occur in their documents: the input of a bi-encoder
whose mention tower pools token vectors (the `spans` input of `thinc_biencoder`),
and its checks. The architecture that has such a tower,
`spacy-bioel.ContextualBiEncoder.v1`, is research (`spacy_bioel.research.contextual`);
the linker reads any model that sets `attrs["contextual"]` through these functions."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc, Span
from thinc.api import Model
from thinc.types import Floats2d, Ragged

from ..errors import BioELError, Errors

SpanInput = Tuple[List[Doc], Ragged]  # docs, (start, end) token offsets per doc


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


__all__ = ["SpanInput", "span_input", "embed_entities", "check_width", "check_annotated", "locate"]

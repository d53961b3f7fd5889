"""Training callbacks of the linker (entry points in `spacy_callbacks`)."""
from __future__ import annotations

from typing import Callable

from spacy.util import registry

from ..encoders.thinc_biencoder import is_built
from .linker import BioELLinker


@registry.callbacks("spacy-bioel.RefreshLinkers.v1")
def create_refresh_linkers() -> Callable:
    """A `[training] before_to_disk` callback: re-encode whatever is stale in every
    bioel_linker before spaCy saves model-best / model-last (saving never encodes)."""
    def refresh_linkers(nlp):
        for _, pipe in nlp.pipeline:
            if isinstance(pipe, BioELLinker) and pipe.kb is not None and is_built(pipe.model):
                pipe.refresh()
        return nlp
    return refresh_linkers


__all__ = ["create_refresh_linkers"]

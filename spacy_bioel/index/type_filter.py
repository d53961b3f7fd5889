"""The semantic-type filter: an entity label allows only concepts of some types.

The KB keeps each concept's types (an OBO namespace such as 'human_phenotype'
or 'disease_ontology', UMLS TUIs, scispaCy `types`, CTD SlimMappings). A map
from entity label to allowed types removes every other concept before
candidates are ranked (the dense search grows its pool until it has k allowed
concepts, so the filter never leaves a mention with fewer candidates than an
unfiltered search would give). Labels not in the map are not filtered.

Example:
    >>> type_filter = TypeFilter({"Phenotype": ["human_phenotype"]})
    >>> type_filter.initialize(kb, index)
    >>> type_filter.masks(["Phenotype", "Disease"])  # [mask, None]
"""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..errors import BioELError, Errors
from ..kb.knowledge_base import KnowledgeBase
from .name_index import NameIndex

logger = logging.getLogger(__name__)


class TypeFilter:
    """allowed (Dict[str, List[str]]): entity label -> allowed concept types."""

    def __init__(self, allowed: Dict[str, Sequence[str]]) -> None:
        if not isinstance(allowed, dict) or not all(
                isinstance(types, (list, tuple)) and types for types in allowed.values()):
            raise BioELError(Errors.E170.format(value=allowed))
        self.allowed = {label: tuple(types) for label, types in allowed.items()}
        self._masks: Dict[str, np.ndarray] = {}
        self.concept_ids: List[str] = []

    def initialize(self, kb: KnowledgeBase, index: NameIndex) -> None:
        """Precompute one (n_concepts,) mask per label over the index's concepts (the
        same call as a candidate generator's). E171 when a label allows no concept of
        this KB (a misspelt type would silently empty every list)."""
        names = index.names
        self.concept_ids = list(names.concept_ids)
        types = [set(t) for t in kb.field_values("types", names.concept_ids)]
        self._masks = {}
        for label, allowed in self.allowed.items():
            mask = np.array([bool(t.intersection(allowed)) for t in types], dtype=bool)
            if not mask.any():
                known = sorted({t for ts in types for t in ts})[:20]
                raise BioELError(Errors.E171.format(label=label, types=list(allowed), known=known))
            self._masks[label] = mask
            logger.info("Type filter: label %s allows %d of %d concepts", label, int(mask.sum()),
                        len(mask))

    def masks(self, labels: Sequence[str]) -> List[Optional[np.ndarray]]:
        """RETURNS: per label, its concept mask, or None (not filtered)."""
        return [self._masks.get(label) for label in labels]


__all__ = ["TypeFilter"]

"""The immutable concept record of a knowledge base."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional, Tuple


@dataclass(frozen=True, slots=True)  # slots: no dict per concept (about 150 bytes each)
class Concept:
    """One concept of a knowledge base (a MeSH descriptor, an ontology term, a CUI).

    concept_id (str): The primary id (e.g. 'D009203', 'OMIM:215600', 'HP:0000118').
    canonical_name (str): The preferred name.
    synonyms (Tuple[str, ...]): Other names, without the canonical name.
    synonym_scopes (Tuple[str, ...]): OBO scope per synonym (EXACT, RELATED, BROAD,
        NARROW), aligned with `synonyms`; empty when the source has no scopes.
    types (Tuple[str, ...]): Semantic types or categories (UMLS TUIs, OBO namespaces).
    definition (Optional[str]): A textual definition, if the source gives one.
    alt_ids (Tuple[str, ...]): Alternate ids that resolve to `concept_id`.
    relations (Tuple[Tuple[str, str], ...]): Typed edges (relation, target id),
        e.g. ('is_a', 'D003920'), ('part_of', 'UBERON:0000955').
    xrefs (Tuple[str, ...]): Cross-references to other vocabularies as
        'PREFIX:ID', in the source's order (e.g. 'UMLS_CUI:C0009402',
        'MESH:D003110', 'OMIM:114500'); `kb.xrefs.id_in_space` reads them.
    """

    concept_id: str
    canonical_name: str
    synonyms: Tuple[str, ...] = ()
    synonym_scopes: Tuple[str, ...] = ()
    types: Tuple[str, ...] = ()
    definition: Optional[str] = None
    alt_ids: Tuple[str, ...] = ()
    relations: Tuple[Tuple[str, str], ...] = field(default=())
    xrefs: Tuple[str, ...] = ()

    def names(self) -> Iterator[str]:
        """Yield the canonical name, then each synonym."""
        yield self.canonical_name
        yield from self.synonyms

    def parents(self, relation: str = "is_a") -> Tuple[str, ...]:
        """RETURNS (Tuple[str, ...]): Targets of `relation` edges."""
        return tuple(target for rel, target in self.relations if rel == relation)


def unique_names(names: Iterable[str], exclude: str) -> Tuple[str, ...]:
    """Strip names and drop empty ones, repeats and `exclude` (the canonical
    name), keeping first-seen order: the synonyms of a Concept."""
    seen = {exclude}
    out = []
    for name in names:
        name = name.strip()
        if name and name not in seen:
            seen.add(name)
            out.append(name)
    return tuple(out)


__all__ = ["Concept", "unique_names"]

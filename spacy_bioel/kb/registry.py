"""Registered KB loaders (entry points in `spacy_misc`): each returns a
zero-argument callable that loads the KB, so a config can name a KB and the
component's `initialize` loads it only when needed (spaCy's `kb_loader`)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, List, Optional

from spacy.util import registry

from .knowledge_base import KnowledgeBase

KBLoader = Callable[[], KnowledgeBase]


@registry.misc("spacy-bioel.KBFromFile.v1")
def create_kb_from_file(path: Path) -> KBLoader:
    """Load a KB saved by `kb build` / `KnowledgeBase.to_disk` (or `embedded:doid`)."""
    def load() -> KnowledgeBase:
        return KnowledgeBase.from_disk(path)
    return load


@registry.misc("spacy-bioel.EmbeddedKB.v1")
def create_embedded_kb(name: str = "doid") -> KBLoader:
    """A KB shipped inside the package, by handle (`doid`: DOID 2024-01-31)."""
    from .embedded import embedded_kb_path

    path = embedded_kb_path(name)  # a bad handle fails when the config is read (E199)

    def load() -> KnowledgeBase:
        return KnowledgeBase.from_disk(path)
    return load


@registry.misc("spacy-bioel.MedicKB.v1")
def create_medic_kb(path: Path) -> KBLoader:
    """MEDIC in the DNorm / BioSyn dictionary form (``ID|ALT||name|syn...``)."""
    def load() -> KnowledgeBase:
        from .medic import load_medic_dictionary
        return load_medic_dictionary(path)
    return load


@registry.misc("spacy-bioel.CTDDiseasesKB.v1")
def create_ctd_diseases_kb(path: Path) -> KBLoader:
    """CTD's ``CTD_diseases.tsv(.gz)`` report."""
    def load() -> KnowledgeBase:
        from .medic import load_ctd_diseases
        return load_ctd_diseases(path)
    return load


@registry.misc("spacy-bioel.OBOKB.v1")
def create_obo_kb(path: Path, prefixes: Optional[List[str]] = None,
                  synonym_scopes: List[str] = ["EXACT", "RELATED", "BROAD", "NARROW"],
                  include_obsolete: bool = False) -> KBLoader:
    """An OBO ontology, own-prefix terms only when `prefixes` is given, obsolete
    terms only when `include_obsolete` is set."""
    scopes = tuple(synonym_scopes)
    def load() -> KnowledgeBase:
        from .obo import load_obo
        return load_obo(path, prefixes=prefixes, synonym_scopes=scopes,
                        include_obsolete=include_obsolete)
    return load


@registry.misc("spacy-bioel.ScispacyJSONLKB.v1")
def create_scispacy_jsonl_kb(path: Path) -> KBLoader:
    """scispaCy's KB JSONL (concept_id, canonical_name, aliases, types, definition)."""
    def load() -> KnowledgeBase:
        from .scispacy_jsonl import load_scispacy_jsonl
        return load_scispacy_jsonl(path)
    return load


@registry.misc("spacy-bioel.UMLSKB.v1")
def create_umls_kb(meta_dir: Path, languages: List[str] = ["ENG"],
                   sources: Optional[List[str]] = None,
                   include_suppressed: bool = False) -> KBLoader:
    """A UMLS release's META directory (MRCONSO, MRSTY, MRDEF), streamed."""
    langs = tuple(languages)
    def load() -> KnowledgeBase:
        from .umls import load_umls
        return load_umls(meta_dir, languages=langs, sources=sources,
                         include_suppressed=include_suppressed)
    return load


@registry.misc("spacy-bioel.AskAPatientKB.v1")
def create_askapatient_kb(paths: List[Path]) -> KBLoader:
    """The AskAPatient concepts (id -> description) of the given fold files."""
    def load() -> KnowledgeBase:
        from .askapatient import load_askapatient_kb
        return load_askapatient_kb(paths)
    return load

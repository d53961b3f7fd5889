"""The knowledge bases shipped inside the package, by handle.

`doid`: the Disease Ontology, DOID release 2024-01-31 (CC0), DOID: terms only,
obsolete terms left out (`spacy_bioel/assets/doid.bioelkb`). In Python
`load_embedded_kb("doid")`; in a config

    [initialize.components.bioel_linker.kb_loader]
    @misc = "spacy-bioel.EmbeddedKB.v1"
    name = "doid"

and on the command line `--kb embedded:doid` wherever a KB file is read through
`resolve_kb_path`.
"""
from __future__ import annotations

from .handles import EMBEDDED_KBS, PREFIX, embedded_kb_path, resolve_kb_path
from .knowledge_base import KnowledgeBase


def load_embedded_kb(name: str = "doid") -> KnowledgeBase:
    """An embedded KB by handle (`doid`, or `embedded:doid`)."""
    return KnowledgeBase.from_disk(embedded_kb_path(name))


__all__ = ["EMBEDDED_KBS", "PREFIX", "embedded_kb_path", "load_embedded_kb", "resolve_kb_path"]

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

from pathlib import Path
from typing import Dict, Union

from ..errors import BioELError, Errors
from .knowledge_base import KnowledgeBase

ASSETS = Path(__file__).resolve().parent.parent / "assets"
EMBEDDED_KBS: Dict[str, Path] = {"doid": ASSETS / "doid.bioelkb"}
PREFIX = "embedded:"


def embedded_kb_path(name: str) -> Path:
    """The file of the embedded KB `name` (E199 names the handles there are)."""
    key = name[len(PREFIX):] if name.startswith(PREFIX) else name
    if key.lower() not in EMBEDDED_KBS:
        raise BioELError(Errors.E199.format(name=name, names=", ".join(sorted(EMBEDDED_KBS))))
    return EMBEDDED_KBS[key.lower()]


def resolve_kb_path(path: Union[str, Path]) -> Path:
    """`path` itself, or the embedded KB's file for an `embedded:NAME` handle."""
    text = str(path)
    return embedded_kb_path(text) if text.startswith(PREFIX) else Path(path)


def load_embedded_kb(name: str = "doid") -> KnowledgeBase:
    """An embedded KB by handle (`doid`, or `embedded:doid`)."""
    return KnowledgeBase.from_disk(embedded_kb_path(name))


__all__ = ["EMBEDDED_KBS", "embedded_kb_path", "load_embedded_kb", "resolve_kb_path"]

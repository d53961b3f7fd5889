"""KB handles: `embedded:NAME` names a KB file shipped inside the package
(read by `KnowledgeBase.from_disk` and `load_embedded_kb`)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Union

from ..errors import BioELError, Errors

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


__all__ = ["ASSETS", "EMBEDDED_KBS", "PREFIX", "embedded_kb_path", "resolve_kb_path"]

"""The disease NER shipped in the package: what the default pipeline finds
mentions with in plain text.

A spaCy pipeline of `tok2vec` (spaCy's CNN with the KB-name features of the
embedded Disease Ontology, `spacy-bioel.KBNameEmbed.v1`) and `ner` (one label,
`Disease`), trained on the disease mentions of NCBI Disease (Dogan et al. 2014)
and BC5CDR (Li et al. 2016), train and dev of both, with seed 0
(`spacy project run build-default-ner`, configs/ner_default.cfg). It lives in
`spacy_bioel/assets/ner` with a manifest (`MANIFEST`): each file's SHA-256, the
fingerprint of the data it was trained on, the seed and the command.
`load_ner` checks the files against the manifest before spaCy reads them (E254
for a file that differs or is missing), so what loads is what was built.
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Dict, Optional, Union

from ..errors import BioELError, Errors

logger = logging.getLogger(__name__)

ASSET = Path(__file__).resolve().parent.parent / "assets" / "ner"
MANIFEST = "shipped.json"
LABEL = "Disease"


def tree_checksums(folder: Union[str, Path]) -> Dict[str, str]:
    """{relative posix path: SHA-256} of every file under `folder` but the manifest."""
    folder = Path(folder)
    out: Dict[str, str] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder).as_posix()
        if relative == MANIFEST or "__pycache__" in path.parts:
            continue
        out[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def digest(folder: Union[str, Path] = ASSET) -> str:
    """One SHA-256 over every file's checksum (what a test pins, and the default
    pipeline's cache key reads)."""
    table = json.dumps(tree_checksums(folder), sort_keys=True)
    return hashlib.sha256(table.encode("utf-8")).hexdigest()


def manifest(folder: Union[str, Path] = ASSET) -> Dict[str, Any]:
    """The shipped NER's manifest (E254 when it is missing or not JSON)."""
    path = Path(folder) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise BioELError(Errors.E254.format(path=path, problem=f"its manifest cannot be read ({err})"))
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise BioELError(Errors.E254.format(path=path, problem="its manifest has no 'files' table"))
    return data


def verify(folder: Union[str, Path] = ASSET) -> Dict[str, Any]:
    """Check every file of the NER in `folder` against its manifest; return the
    manifest. E254 names the first file that is missing, added or changed."""
    folder = Path(folder)
    expected = manifest(folder)["files"]
    found = tree_checksums(folder)
    for name in sorted(set(expected) | set(found)):
        if name not in found:
            problem = f"{name} is missing"
        elif name not in expected:
            problem = f"{name} is not one of the files it was shipped with"
        elif found[name] != expected[name]:
            problem = f"{name} differs from the file that was shipped (SHA-256)"
        else:
            continue
        raise BioELError(Errors.E254.format(path=folder, problem=problem))
    return manifest(folder)


def load_ner(folder: Union[str, Path] = ASSET, vocab: Optional[Any] = None):
    """The shipped NER pipeline (`tok2vec`, `ner`), checked against its manifest.

    vocab: a spaCy Vocab to share (e.g. the linker pipeline's), or None.

    Example:
        >>> ner = load_ner()
        >>> [e.text for e in ner("Carriers of FAP develop colon cancer.").ents]
    """
    import spacy

    verify(folder)
    kwargs = {"vocab": vocab} if vocab is not None else {}
    return spacy.load(folder, **kwargs)


__all__ = ["ASSET", "LABEL", "MANIFEST", "digest", "load_ner", "manifest", "tree_checksums", "verify"]

"""What ships inside the package beside the code, and the check that what loads
is what was built: each shipped artifact folder (the disease NER, the int8
mention tower) holds a manifest (`MANIFEST`) with every file's SHA-256; `verify`
compares them before the files are read (E254 names the first that differs)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Union

from ..errors import BioELError, Errors

FOLDER = Path(__file__).resolve().parent
MANIFEST = "shipped.json"


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


def digest(folder: Union[str, Path]) -> str:
    """One SHA-256 over every file's checksum (what a test pins)."""
    table = json.dumps(tree_checksums(folder), sort_keys=True)
    return hashlib.sha256(table.encode("utf-8")).hexdigest()


def manifest_digest(folder: Union[str, Path]) -> str:
    """SHA-256 of the manifest file: it lists every file's checksum, so it names the
    build without reading the files again (a cache key read on every load; `verify`
    checks the files themselves when they are used)."""
    return hashlib.sha256((Path(folder) / MANIFEST).read_bytes()).hexdigest()


def manifest(folder: Union[str, Path], what: str, command: str) -> Dict[str, Any]:
    """The manifest of the artifact `what` in `folder` (E254 when it is missing or
    not JSON; `command` rebuilds it)."""
    path = Path(folder) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise BioELError(Errors.E254.format(what=what, path=path, command=command,
                                            problem=f"its manifest cannot be read ({err})"))
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise BioELError(Errors.E254.format(what=what, path=path, command=command,
                                            problem="its manifest has no 'files' table"))
    return data


def verify(folder: Union[str, Path], what: str, command: str) -> Dict[str, Any]:
    """Every file of `folder` against its manifest; the manifest. E254 names the
    first file that is missing, added or changed."""
    folder = Path(folder)
    expected = manifest(folder, what, command)["files"]
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
        raise BioELError(Errors.E254.format(what=what, path=folder, command=command,
                                            problem=problem))
    return manifest(folder, what, command)


__all__ = ["FOLDER", "MANIFEST", "digest", "manifest", "manifest_digest", "tree_checksums", "verify"]

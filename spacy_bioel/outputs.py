"""What a command may write over and delete: nothing a user owns.

A command that writes a folder of results (`link-corpus`) owns that folder only
when it created it, found it empty, or finds its own marker file in it
(`MARKER`, written when the folder is claimed); anything else is refused before
any work (E246). Inside a folder it owns it deletes only the files it names as
its own (`owned`), never the user's. Its inputs, the pipeline it runs and the
working directory are never its targets: an output folder or report file that
is one of them, holds one, or (for the pipeline) lies inside one is E245.

Example:
    >>> protected = [Protected("an input shard", shard), Protected("the pipeline", pipeline, inside=True)]
    >>> earlier_run = claim_folder(output_dir, "link-corpus", protected)
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Union

from .about import __version__
from .errors import BioELError, Errors

MARKER = ".spacy-bioel-output.json"


@dataclass(frozen=True)
class Protected:
    """A path a command must not write over.

    what (str): What it is, for the error ("an input shard", "the pipeline").
    path (Path): The path.
    inside (bool): Also refuse targets inside it (a folder such as the pipeline).
    """

    what: str
    path: Path
    inside: bool = False


def working_directory() -> Protected:
    """The working directory: an output may lie inside it, but never be it or hold it."""
    return Protected("the working directory", Path.cwd())


def check_target(command: str, target: Union[str, Path], protected: Sequence[Protected]) -> None:
    """E245 when `target` (a folder or file the command writes) is a protected path,
    holds one, or lies inside one marked `inside`."""
    resolved = Path(target).resolve()
    for item in protected:
        guarded = Path(item.path).resolve()
        relation = ("is" if resolved == guarded else
                    "holds" if resolved in guarded.parents else
                    "lies inside" if item.inside and guarded in resolved.parents else None)
        if relation is not None:
            raise BioELError(Errors.E245.format(command=command, path=target, relation=relation,
                                                what=item.what, target=item.path))


def protect_inputs(command: str, targets: Sequence[Union[str, Path, None]],
                   inputs: Sequence[Union[str, Path, None]] = (),
                   pipelines: Sequence[Union[str, Path, None]] = ()) -> None:
    """E245 when a file a command writes (`targets`, e.g. `--output` and the .md beside
    it) is one of its inputs, or lies inside a pipeline folder it reads."""
    protected = [Protected("an input of the command", Path(p)) for p in inputs if p]
    protected += [Protected("the pipeline", Path(p), inside=True) for p in pipelines
                  if p and Path(p).is_dir()]
    for target in targets:
        if target:
            check_target(command, target, protected)


def read_marker(folder: Union[str, Path]) -> Optional[dict]:
    """The marker a command left in `folder` (None when there is none or it does not parse)."""
    try:
        marker = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def claim_folder(folder: Union[str, Path], command: str, protected: Sequence[Protected] = (),
                 own: Optional[Callable[[str], bool]] = None) -> bool:
    """Make `folder` the output folder of `command`: check it against `protected`
    (E245), refuse a file or a folder holding anything but an earlier run of the same
    command (E246), then create it if needed and write the marker. A folder without
    the marker whose every entry `own(name)` names as the command's (written by a
    version before markers) is an earlier run too.
    RETURNS (bool): whether the folder holds an earlier run of `command`."""
    folder = Path(folder)
    check_target(command, folder, protected)
    if folder.exists() and not folder.is_dir():
        raise BioELError(Errors.E245.format(command=command, path=folder, relation="is",
                                            what="a file, not a folder", target=folder))
    earlier = False
    if folder.is_dir():
        marker = read_marker(folder)
        earlier = marker is not None and marker.get("command") == command
        entries = sorted(os.listdir(folder))
        if entries and marker is None and own is not None and all(map(own, entries)):
            earlier = True
            write_marker(folder, command)
        if entries and not earlier:
            raise BioELError(Errors.E246.format(command=command, path=folder, examples=", ".join(
                entries[:3]) + (f" and {len(entries) - 3:,} more" if len(entries) > 3 else "")))
    folder.mkdir(parents=True, exist_ok=True)
    if not earlier:
        write_marker(folder, command)
    return earlier


def write_marker(folder: Path, command: str, **fields: str) -> None:
    """Write the marker that tells a later run the folder is `command`'s (`fields`:
    what else identifies it, e.g. a cache entry's key)."""
    record = {"command": command, **fields, "spacy_bioel": __version__, "created": time.strftime(
        "%Y-%m-%dT%H:%M:%S%z"), "note": "written by spacy-bioel: a later run of the same command "
                                         "replaces only the files it wrote itself"}
    (folder / MARKER).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def remove_owned(folder: Path, is_owned: Callable[[str], bool]) -> List[str]:
    """Delete the files of a claimed `folder` that `is_owned(name)` names as the
    command's own (and the marker), then the folder itself if nothing else is left.
    Nothing else is touched; a folder without the marker is left as it is.
    RETURNS (List[str]): the names of what was left (not the command's)."""
    if read_marker(folder) is None:
        return sorted(os.listdir(folder)) if folder.is_dir() else []
    left = []
    for entry in sorted(os.listdir(folder)):
        path = folder / entry
        if entry != MARKER and not (is_owned(entry) and (path.is_file() or path.is_symlink())):
            left.append(entry)
            continue
        if entry != MARKER:
            path.unlink()
    if not left:
        (folder / MARKER).unlink()
        folder.rmdir()
    return left


def remove_stale_partials(parent: Path, prefix: str, suffix: str, command: str) -> int:
    """Remove the partial folders `parent/PREFIX*SUFFIX` that a killed `command` left:
    those whose marker (`write_partial_marker`) names `command` and a process of this
    host that is gone. A folder without that marker is never removed, whatever its name.
    RETURNS (int): how many were removed."""
    removed = 0
    if not parent.is_dir():
        return 0
    for path in parent.iterdir():
        if not (path.name.startswith(prefix) and path.name.endswith(suffix)) or \
                path.is_symlink() or not path.is_dir():
            continue
        marker = read_marker(path)
        if marker is None or marker.get("command") != command or _alive(marker):
            continue
        shutil.rmtree(path, ignore_errors=True)  # our own partial folder (its marker), abandoned
        removed += not path.exists()
    return removed


def write_partial_marker(folder: Path, command: str) -> None:
    """The marker of a folder being written: its writer's pid and host, so a later
    run can tell an abandoned partial folder from one still being written."""
    record = {"command": command, "pid": os.getpid(), "host": platform.node()}
    (folder / MARKER).write_text(json.dumps(record) + "\n", encoding="utf-8")


def _alive(marker: dict) -> bool:
    """Whether the process a partial marker names may still be writing (another host's,
    or one that does not say, counts as alive)."""
    pid = marker.get("pid")
    if marker.get("host") != platform.node() or not isinstance(pid, int):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


__all__ = ["MARKER", "Protected", "check_target", "claim_folder", "protect_inputs", "read_marker", "remove_owned",
           "remove_stale_partials", "working_directory", "write_marker", "write_partial_marker"]

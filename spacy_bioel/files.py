"""Files a saved pipeline keeps using after it has loaded.

Large parts of a pipeline are read lazily (the name embeddings by memory map,
the PyTorch weights of an ONNX-served linker only when training or saving needs
them). Saving a pipeline over the folder it was loaded from must not change
what the running one reads: every such file is written to a temporary name and
renamed into place (`replace_file`), so an open file or memory map keeps the
old content, and a `PinnedFile` keeps a file open from loading on.

The folder's edges: nothing is written outside a folder being saved or
unpacked, and nothing is read through a link out of it. `member` turns a name
from a payload into a path only when it stays inside its folder (E230);
`unlink_links` removes the symbolic links inside a folder before it is saved
over, so a write cannot follow one out; `tree_files`, the one walker of loading
and packaging, refuses a folder that holds a link leading out of it, or a FIFO,
socket or device that would hang or feed a reader (E231): `check_tree` before a
folder is loaded, `copy_tree` when a pipeline is packaged.
"""
from __future__ import annotations

import logging
import os
import stat
import uuid
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Iterator, Union

logger = logging.getLogger(__name__)

CHUNK = 1 << 24


def replace_file(path: Union[str, Path], write: Callable[[Path], None]) -> None:
    """Call `write(temporary path)` in `path`'s folder, then rename it to `path`. The
    temporary name is unique per call, so concurrent writers (processes or threads)
    never share one; the last rename wins, whole."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(partial)
        os.replace(partial, path)
    finally:
        if partial.exists():
            partial.unlink()


class PinnedFile:
    """A file held open: its bytes stay readable after its path is replaced or removed.

    path (Union[str, Path]): The file to pin.
    """

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDONLY)
        self.size = os.fstat(self._fd).st_size

    def intact(self) -> bool:
        """Whether the path still names the pinned file (not replaced or removed)."""
        try:
            return os.path.samestat(os.stat(self.path), os.fstat(self._fd))
        except OSError:
            return False

    def read_bytes(self) -> bytes:
        """RETURNS (bytes): the content the file had when it was pinned."""
        return b"".join(os.pread(self._fd, min(CHUNK, self.size - start), start)
                        for start in range(0, self.size, CHUNK))

    def sha256(self) -> str:
        """RETURNS (str): the hex SHA-256 of the pinned content."""
        import hashlib

        digest = hashlib.sha256()
        for start in range(0, self.size, CHUNK):
            digest.update(os.pread(self._fd, min(CHUNK, self.size - start), start))
        return digest.hexdigest()

    def copy_to(self, target: Union[str, Path]) -> None:
        """Write the pinned content to `target` (through a temporary file)."""
        target = Path(target)
        if target.exists() and os.path.samestat(os.stat(target), os.fstat(self._fd)):
            return  # saved over itself: the file is already there

        def write(partial: Path) -> None:
            with open(partial, "wb") as handle:
                for start in range(0, self.size, CHUNK):
                    handle.write(os.pread(self._fd, min(CHUNK, self.size - start), start))
        replace_file(target, write)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:  # pragma: no cover - interpreter shutdown
            pass


def sha256_of(path: Union[str, Path]) -> str:
    """RETURNS (str): the hex SHA-256 of a file's bytes, read in blocks."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def member(folder: Union[str, Path], name: str, where: str = "<payload>") -> Path:
    """`folder / name` for a relative, forward-slash `name` that stays inside
    `folder` without passing through a symbolic link; E230 otherwise.

    folder (Union[str, Path]): The folder being written (it need not exist yet).
    name (str): A file name from a payload (`pack_folder`'s keys).
    where (str): What the name came from, for the error.
    """
    from .errors import BioELError, Errors

    parts = name.split("/") if isinstance(name, str) else []
    if not parts or "\\" in name or "\x00" in name or PurePosixPath(name).is_absolute() or \
            any(p in ("", ".", "..") or ":" in p for p in parts):
        raise BioELError(Errors.E230.format(where=where, name=name, folder=folder))
    target = Path(folder)
    for part in parts:
        target = target / part
        if target.is_symlink():
            raise BioELError(Errors.E230.format(where=where, name=name, folder=folder))
    return target


def unlink_links(folder: Union[str, Path]) -> int:
    """Remove every symbolic link below `folder` (not `folder` itself), so that
    saving over it writes regular files inside it; RETURNS how many were removed."""
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    removed = 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(root) / name
            if path.is_symlink():
                path.unlink()
                removed += 1
    if removed:
        logger.warning("Removed %d symbolic link(s) inside %s before saving over it: the "
                       "files are written there as regular files", removed, folder)
    return removed


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return kind
    return "a special file"


def tree_files(folder: Union[str, Path]) -> Iterator[Path]:
    """Every regular file below `folder`, as loading reads the folder (the one walker
    of loading and packaging): E231 for a symbolic link that leads outside it or
    anything but regular files and folders (a FIFO would hang a reader). A link
    that stays inside is read where it points (its target's own entry is yielded
    too); links are never followed out of the folder, nor to a folder above them."""
    from .errors import BioELError, Errors

    folder = Path(folder)
    root = folder.resolve()
    linked = set()  # folders walked through a link, by where they are (no walk in circles)
    # top-down: each entry is checked before the walk descends into it, links included
    for base, dirs, files in os.walk(folder, followlinks=True):
        for name in list(dirs) + files:
            path = Path(base) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                resolved = path.resolve()
                if resolved != root and root not in resolved.parents:
                    raise BioELError(Errors.E231.format(
                        path=path, kind=f"a symbolic link to {resolved}, outside {folder}"))
                mode = os.stat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise BioELError(Errors.E231.format(path=path, kind=_kind(mode)))
            if stat.S_ISREG(mode):
                yield path
            elif path.is_symlink():
                target = path.resolve()
                if target in linked or target == Path(base).resolve() or \
                        target in Path(base).resolve().parents:
                    raise BioELError(Errors.E231.format(path=path, kind=(
                        f"a symbolic link to {target}, a folder above it or linked twice: a "
                        "walk through it would never end")))
                linked.add(target)


def check_tree(folder: Union[str, Path]) -> None:
    """E231 when `folder` holds (at any depth) a symbolic link that leads outside
    it, or anything but regular files and folders (`tree_files`)."""
    for _ in tree_files(folder):
        pass


def copy_tree(folder: Union[str, Path], target: Union[str, Path], skip: Iterable[str] = ()) -> int:
    """Copy the regular files `tree_files` walks (what loading reads) to the new
    folder `target`, as regular files, except those at the relative paths `skip`;
    RETURNS how many bytes were copied."""
    import shutil

    folder, target = Path(folder), Path(target)
    skipped = {Path(name) for name in skip}
    copied = 0
    for path in tree_files(folder):
        if path.relative_to(folder) in skipped:
            continue
        destination = target / path.relative_to(folder)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        copied += destination.stat().st_size
    return copied


__all__ = ["replace_file", "PinnedFile", "member", "unlink_links", "tree_files", "check_tree", "copy_tree",
           "sha256_of"]

"""Files a saved pipeline keeps using after it has loaded.

Large parts of a pipeline are read lazily (the name embeddings by memory map,
the PyTorch weights of an ONNX-served linker only when training or saving needs
them). Saving a pipeline over the folder it was loaded from must not change
what the running one reads: every such file is written to a temporary name and
renamed into place (`replace_file`), so an open file or memory map keeps the
old content, and a `PinnedFile` keeps a file open from loading on.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Union

CHUNK = 1 << 24


def replace_file(path: Union[str, Path], write: Callable[[Path], None]) -> None:
    """Call `write(temporary path)` in `path`'s folder, then rename it to `path`."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
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


__all__ = ["replace_file", "PinnedFile"]

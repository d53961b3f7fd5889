"""Opening plain or gzipped text sources with line numbers and progress."""
from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import IO, Iterator, Tuple, Union

from ..errors import BioELError, Errors


def open_text(path: Union[str, Path], encoding: str = "utf-8", errors: str = "strict") -> IO[str]:
    """Open a text file, transparently gunzipping '*.gz'. Raises E008 if missing."""
    path = Path(path)
    if not path.exists():
        raise BioELError(Errors.E008.format(path=path))
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding=encoding, errors=errors, newline="")
    return open(path, encoding=encoding, errors=errors, newline="")


def iter_lines(path: Union[str, Path], encoding: str = "utf-8",
               errors: str = "strict") -> Iterator[Tuple[int, str]]:
    """Yield (1-based line number, line without its line ending)."""
    with open_text(path, encoding=encoding, errors=errors) as handle:
        for number, line in enumerate(handle, start=1):
            yield number, line.rstrip("\r\n")


def file_size(path: Union[str, Path]) -> int:
    return Path(path).stat().st_size


__all__ = ["open_text", "iter_lines", "file_size"]

"""Reading the text sources of every loader and converter: plain or gzipped,
with line numbers, an encoding that is detected or declared, and a coded error
for whatever cannot be read.

- Compression is detected from the content (gzip's magic bytes), not the name;
  a file named `.gz` that is not gzip, or a truncated gzip stream, is E017.
- Encoding: a byte-order mark decides (UTF-8, UTF-16, UTF-32; the mark is
  removed); otherwise `encoding` (default UTF-8). Bytes that do not decode are
  E018 with the line and the byte offset, NUL bytes without a declared
  encoding (UTF-16 without a mark) E019. `fallback` decodes such a line with a
  second encoding instead and reports it (AskAPatient's Latin-1 train file).
- Lines split on '\\n' only (a '\\r' before it is dropped), so a stray '\\r'
  inside a field never breaks a record; a file whose head has '\\r' and no
  '\\n' (old Mac line endings) splits on '\\r'.
- UTF-16 / UTF-32 declared without a byte order and without a mark: the order
  is told by the zero bytes of the head (E251 when it cannot be).
"""
from __future__ import annotations

import codecs
import gzip
import io
import zlib
from pathlib import Path
from typing import IO, Callable, Iterator, Optional, Tuple, Union

from ..errors import BioELError, Errors

GZIP_MAGIC = b"\x1f\x8b"
# UTF-32 LE first: its mark starts with UTF-16 LE's
BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"))
_READ_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def check_file(path: Union[str, Path]) -> Path:
    """E008 when `path` does not exist, E016 when it is not a regular file."""
    path = Path(path)
    if not path.exists():
        raise BioELError(Errors.E008.format(path=path))
    if not path.is_file():
        raise BioELError(Errors.E016.format(path=path))
    return path


def open_binary(path: Union[str, Path]) -> IO[bytes]:
    """The file's bytes, gunzipped when its content is gzip (E017 for a file
    named .gz that is not)."""
    path = check_file(path)
    with open(path, "rb") as handle:
        magic = handle.read(2)
    if magic == GZIP_MAGIC:
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if path.suffix == ".gz":
        raise BioELError(Errors.E017.format(path=path, line=1,
                                            problem="named .gz but not gzip-compressed"))
    return open(path, "rb")


def detect_bom(head: bytes) -> Tuple[Optional[str], int]:
    """(encoding, length of the mark) of a byte-order mark at the start of `head`."""
    for bom, encoding in BOMS:
        if head.startswith(bom):
            return encoding, len(bom)
    return None, 0


def iter_lines(path: Union[str, Path], encoding: Optional[str] = None,
               fallback: Optional[str] = None,
               on_fallback: Optional[Callable[[int], None]] = None) -> Iterator[Tuple[int, str]]:
    """Yield (1-based line number, line without its line ending).

    encoding (Optional[str]): The file's encoding when it has no byte-order
        mark (None: UTF-8, and NUL bytes are refused as E019).
    fallback (Optional[str]): Decode a line that `encoding` cannot with this
        one (e.g. 'cp1252'; Latin-1 where that fails too), calling
        `on_fallback(line number)`; None: E018.
    """
    path = Path(path)
    line = 0
    try:
        with open_binary(path) as stream:
            head = stream.read(HEAD)
            bom_encoding, bom_length = detect_bom(head)
            stream.seek(bom_length)  # files and gzip streams both seek (gzip by re-reading)
            declared = encoding
            encoding = bom_encoding or encoding or "utf-8"
            codecs.lookup(encoding)
            # old Mac files end lines with '\r' alone: split on it where the head has no '\n'
            newline = "\r" if b"\r" in head and b"\n" not in head else "\n"
            if encoding.replace("_", "-").lower().startswith(("utf-16", "utf-32", "utf16", "utf32")):
                if bom_encoding is None:
                    encoding = byte_order(path, encoding, head)
                text = io.TextIOWrapper(stream, encoding=encoding, newline=newline)
                for line, value in enumerate(text, start=1):
                    yield line, value.rstrip("\r\n")
                return
            lines = stream if newline == "\n" else _split_on(stream, b"\r")
            for line, raw in enumerate(lines, start=1):
                if declared is None and bom_encoding is None and b"\x00" in raw:
                    raise BioELError(Errors.E019.format(path=path, line=line))
                try:
                    value = raw.decode(encoding)
                except UnicodeDecodeError as err:
                    if fallback is None:
                        raise BioELError(Errors.E018.format(
                            path=path, line=line, offset=err.start, encoding=encoding,
                            byte=raw[err.start:err.start + 1].hex()))
                    try:
                        value = raw.decode(fallback)
                    except UnicodeDecodeError:  # e.g. cp1252's 5 unassigned bytes
                        value = raw.decode("latin-1")
                    if on_fallback is not None:
                        on_fallback(line)
                yield line, value.rstrip("\r\n")
    except LookupError:
        raise BioELError(Errors.E020.format(path=path, encoding=encoding))
    except UnicodeDecodeError as err:  # UTF-16/32 streams
        raise BioELError(Errors.E018.format(path=path, line=line + 1, offset=err.start,
                                            encoding=encoding, byte="?"))
    except UnicodeError as err:  # a codec's other complaints (e.g. a missing byte-order mark)
        raise BioELError(Errors.E018.format(path=path, line=line + 1, offset="?",
                                            encoding=encoding, byte=f"? ({err})"))
    except _READ_ERRORS as err:
        raise BioELError(Errors.E017.format(path=path, line=line + 1,
                                            problem=f"{type(err).__name__}: {err}"))


HEAD = 1 << 16  # bytes read ahead for the byte-order mark, byte order and line endings


def byte_order(path: Path, encoding: str, head: bytes) -> str:
    """The UTF-16 / UTF-32 codec with its byte order for a file without a byte-order
    mark, told by where the zero bytes of its (mostly ASCII) head fall; E251 when
    they do not tell."""
    width = 4 if "32" in encoding else 2
    if encoding.replace("_", "-").lower().endswith(("le", "be")):
        return encoding
    sample = head[: len(head) - len(head) % width]
    low = sum(1 for i in range(0, len(sample), width) if sample[i] == 0)  # zero first: big-endian
    high = sum(1 for i in range(width - 1, len(sample), width) if sample[i] == 0)
    if high > low:
        return f"utf-{8 * width}-le"
    if low > high:
        return f"utf-{8 * width}-be"
    raise BioELError(Errors.E251.format(path=path, encoding=f"utf-{8 * width}", problem=(
        "its first characters do not tell" if sample else "it is empty")))


def _split_on(stream: IO[bytes], separator: bytes) -> Iterator[bytes]:
    """The lines of a binary stream that ends them with `separator` (each with it)."""
    rest = b""
    for block in iter(lambda: stream.read(1 << 20), b""):
        *lines, rest = (rest + block).split(separator)
        for line in lines:
            yield line + separator
    if rest:
        yield rest


def read_text(path: Union[str, Path], encoding: Optional[str] = None) -> str:
    """The whole text ('\\n' after every line), read as `iter_lines` reads it."""
    return "".join(line + "\n" for _, line in iter_lines(path, encoding))


def read_exact_text(path: Union[str, Path]) -> str:
    """The file's characters exactly as it holds them (line endings kept, unlike
    `read_text`, so that offsets into the text are offsets into the file's):
    UTF-8, or the encoding of its byte-order mark (which is left out). E019 for
    NUL bytes in a file without a mark, E018 for bytes that do not decode, each
    naming the line."""
    with open_binary(path) as stream:
        raw = stream.read()
    encoding, skip = detect_bom(raw[:4])
    body = raw[skip:]
    if encoding is None and b"\x00" in body:
        raise BioELError(Errors.E019.format(path=path, line=body[:body.index(b"\x00")].count(b"\n") + 1))
    try:
        return body.decode(encoding or "utf-8")
    except UnicodeDecodeError as err:
        start = body.rfind(b"\n", 0, err.start) + 1
        raise BioELError(Errors.E018.format(path=path, line=body[:err.start].count(b"\n") + 1,
                                            offset=err.start - start, encoding=encoding or "utf-8",
                                            byte=body[err.start:err.start + 1].hex()))


__all__ = ["check_file", "open_binary", "detect_bom", "iter_lines", "read_text", "read_exact_text"]

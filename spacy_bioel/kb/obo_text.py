"""Tolerant reading of OBO text with the strict, maintained `fastobo` parser.

Real ontology releases contain clauses that the OBO 1.4 grammar rejects (xref
values with spaces, definition or synonym xref lists with spaces, a synonym
without its scope, tags of other tools). One such clause makes `fastobo.loads`
reject the whole file. Here the text is parsed in chunks of stanzas; when the
parser rejects a line, that clause alone is repaired or skipped and the chunk
is parsed again:

- a `def:` or `synonym:` clause keeps its quoted text (and the synonym its
  scope, RELATED when it has none, the OBO 1.2 default) and drops the xref list;
- an `is_a:` or `relationship:` clause keeps its first id(s);
- any other clause is skipped (its value is not read by the KB loader);
- a stanza whose `[Term]` line or `id:` line is rejected is skipped whole.

Every repair and skip is recorded with its line number (`Repair`), so the
loader can count them by kind and name the lines: nothing is dropped silently.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple

from ..errors import Errors, KBFormatError

FRAMES_PER_CHUNK = 500
QUOTED = re.compile(r'^(def|synonym):\s*"((?:[^"\\]|\\.)*)"\s*(.*)$')
SCOPE = re.compile(r"^(EXACT|RELATED|BROAD|NARROW)\b")
ID_TOKEN = re.compile(r"^\S+")
TAG = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*:")


@dataclass(frozen=True)
class Repair:
    """One clause the strict parser rejected.

    line (int): 1-based line in the file.
    tag (str): The clause's tag ('xref', 'def', ...; 'stanza' for a whole stanza).
    action (str): 'repaired' (parsed by the lenient fallback) or 'skipped'.
    problem (str): The parser's message.
    """

    line: int
    tag: str
    action: str
    problem: str


def _lenient(line: str) -> Optional[str]:
    """The clause rewritten so the strict grammar accepts it, keeping what the
    KB reads (quoted text, scope, ids), or None when nothing can be kept."""
    stripped = line.strip()
    quoted = QUOTED.match(stripped)
    if quoted:
        tag, text, rest = quoted.groups()
        if tag == "def":
            return f'def: "{text}" []'
        scope = SCOPE.match(rest)
        return f'synonym: "{text}" {scope.group(1) if scope else "RELATED"} []'
    tag = TAG.match(stripped)
    if tag and tag.group(1) in ("is_a", "relationship"):
        tokens = stripped.split(":", 1)[1].split("!", 1)[0].split()
        need = 1 if tag.group(1) == "is_a" else 2
        if len(tokens) >= need:
            return f"{tag.group(1)}: {' '.join(tokens[:need])}"
    return None


def _tag(line: str) -> str:
    stripped = line.strip()
    if stripped.startswith("["):
        return "stanza"
    match = TAG.match(stripped)
    return match.group(1) if match else "untagged line"


class _Chunk:
    """Lines of consecutive stanzas (or of the header) with their file line numbers."""

    def __init__(self, lines: List[Tuple[int, str]]) -> None:
        self.lines = lines
        self.repaired: set = set()

    def fix(self, index: int, problem: str) -> Repair:
        """Repair or remove the rejected line `index` (0-based) of this chunk."""
        number, line = self.lines[index]
        tag = _tag(line)
        if tag == "stanza" or tag == "id":
            return self._drop_stanza(index, problem)
        rewritten = None if number in self.repaired else _lenient(line)
        if rewritten is not None:
            self.lines[index] = (number, rewritten)
            self.repaired.add(number)
            return Repair(number, tag, "repaired", problem)
        del self.lines[index]
        return Repair(number, tag, "skipped", problem)

    def _drop_stanza(self, index: int, problem: str) -> Repair:
        start = index
        while start > 0 and not self.lines[start][1].lstrip().startswith("["):
            start -= 1
        end = index + 1
        while end < len(self.lines) and not self.lines[end][1].lstrip().startswith("["):
            end += 1
        number = self.lines[start][0]
        del self.lines[start:end]
        return Repair(number, "stanza", "skipped", problem)


def _chunks(text: str) -> Tuple[_Chunk, List[_Chunk]]:
    """The header and the stanzas, FRAMES_PER_CHUNK stanzas per chunk."""
    header: List[Tuple[int, str]] = []
    chunks: List[List[Tuple[int, str]]] = []
    frames = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("["):
            if frames % FRAMES_PER_CHUNK == 0:
                chunks.append([])
            frames += 1
        (chunks[-1] if chunks else header).append((number, line))
    return _Chunk(header), [_Chunk(lines) for lines in chunks]


def _frames(lines: List[Tuple[int, str]], threads: int = 0) -> Tuple[Any, List[Tuple[int, Any]]]:
    """Parse lines with fastobo. RETURNS: (document, [(first line, frame)])."""
    import fastobo

    document = fastobo.loads("\n".join(line for _, line in lines) + "\n", threads=threads)
    starts = [n for n, line in lines if line.lstrip().startswith("[")]
    return document, list(zip(starts, document))


def _parse(chunk: _Chunk, path: Path, repairs: List[Repair]) -> Tuple[Any, List[Tuple[int, Any]]]:
    """Parse a chunk of stanzas at once; when the parser rejects a line, parse
    the chunk's stanzas one by one (single-threaded, cheap for one stanza),
    repairing or skipping each rejected line.
    RETURNS: (the last document parsed, [(first line, frame)] of the chunk)."""
    try:
        return _frames(chunk.lines)
    except SyntaxError:
        pass
    starts = [i for i, (_, line) in enumerate(chunk.lines) if line.lstrip().startswith("[")]
    document, frames = None, []
    for begin, end in zip(starts, starts[1:] + [len(chunk.lines)]):
        document, stanza = _repaired(_Chunk(chunk.lines[begin:end]), path, repairs)
        frames.extend(stanza)
    return document, frames


def _repaired(chunk: _Chunk, path: Path, repairs: List[Repair]) -> Tuple[Any, List[Tuple[int, Any]]]:
    """Parse one stanza (or the header), fixing rejected lines until it parses."""
    while True:
        try:
            return _frames(chunk.lines, threads=1)
        except SyntaxError as err:
            lineno = getattr(err, "lineno", None)
            problem = getattr(err, "msg", str(err))
            if not isinstance(lineno, int) or not 1 <= lineno <= len(chunk.lines):
                where = chunk.lines[0][0] if chunk.lines else "?"
                raise KBFormatError(Errors.E011.format(path=path, line=where, problem=problem))
            repairs.append(chunk.fix(lineno - 1, problem))


def read_obo_frames(text: str, path: Path, progress: bool = False
                    ) -> Tuple[Any, Iterator[Tuple[int, Any]], List[Repair]]:
    """Parse OBO text tolerantly.

    text (str): The whole OBO document.
    path (Path): Its file, for messages.
    progress (bool): A progress bar over chunks of stanzas.
    RETURNS: (the header frame, an iterator of (first line, frame) over the
        stanzas, the list of repairs; it fills as the iterator is consumed).
    """
    from ..progress import progress_bar

    header_chunk, chunks = _chunks(text)
    repairs: List[Repair] = []
    header = _repaired(header_chunk, path, repairs)[0].header

    def frames() -> Iterator[Tuple[int, Any]]:
        for chunk in progress_bar(chunks, desc=f"OBO {path.name}", unit=" chunks",
                                  disable=not progress):
            yield from _parse(chunk, path, repairs)[1]

    return header, frames(), repairs


__all__ = ["Repair", "read_obo_frames", "FRAMES_PER_CHUNK"]

"""Small helpers shared by the tests (fixtures themselves are built inline)."""
import gzip
from pathlib import Path
from typing import List


def write_lines(path: Path, lines: List[str]) -> Path:
    """Write `lines` (newline-terminated) as UTF-8, gzipped when the name ends in .gz."""
    text = "".join(line + "\n" for line in lines)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path

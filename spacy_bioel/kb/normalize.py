"""Text normalisation shared by the alias map, the dictionary baselines and the
refined-split test: Unicode (NFKC), case (casefold), punctuation and whitespace."""
from __future__ import annotations

import re
import unicodedata

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
# ASCII: letters lowered, digits kept, every other character (what `_NON_WORD` matches) a space
_ASCII_TABLE = bytes.maketrans(bytes(range(128)), bytes(
    ord(chr(c).lower()) if chr(c).isalnum() else ord(" ") for c in range(128)))


def normalize_text(text: str) -> str:
    """Normalise a mention or concept name for dictionary lookup.

    NFKC-folds the string, case-folds it, turns every run of punctuation,
    symbols and whitespace into one space and strips the ends, so
    "Crohn's  Disease" and "crohn s disease" compare equal.

    text (str): The raw text.
    RETURNS (str): The normalised text ("" for punctuation-only input).
    """
    if text.isascii():  # NFKC leaves ASCII as it is and casefold is lower: faster, same result
        return " ".join(text.encode("ascii").translate(_ASCII_TABLE).decode("ascii").split())
    text = unicodedata.normalize("NFKC", text).casefold()
    return _NON_WORD.sub(" ", text).strip()


__all__ = ["normalize_text"]

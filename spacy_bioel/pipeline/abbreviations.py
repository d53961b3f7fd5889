"""Abbreviation definitions in running text ("familial adenomatous polyposis
(FAP)"), found with the algorithm of Schwartz & Hearst (2003).

References:
    Schwartz AS, Hearst MA. A simple algorithm for identifying abbreviation
    definitions in biomedical text. Pacific Symposium on Biocomputing 2003.
    (scispaCy's AbbreviationDetector implements the same algorithm.)

A short form is a parenthesised token of 2-10 characters with a letter whose
first character is alphanumeric; its long form is the shortest stretch of the
at most min(|SF| + 5, 2 |SF|) preceding words in which the short form's
characters occur in order, matched right to left, its first character at the
start of a word.

The preceding words are those of the short form's sentence, as in Schwartz &
Hearst's own sentence-by-sentence search: a word ending in ".", "!" or "?"
followed by one that starts with a capital or a digit ends a sentence, so
"Myotonic dystrophy (DM)" after "... dystrophy." finds no long form where
"dystrophy. Myotonic dystrophy" matched D...M across the sentence end.

Two repairs of that shortest match, from NCBI Disease's errors
(docs/results/accuracy.md, "Error analysis"):
- a short form with more capitals than its long form has words takes the words
  before it while they start with its first letter ("attenuated adenomatous
  polyposis coli (AAPC)", not "adenomatous polyposis coli"; "congenital chloride
  diarrhea (CLD)", not "chloride diarrhea");
- a short form defined earlier inside a long form is replaced by its own long
  form ("isolated DMS (IDMS)" after "diffuse mesangial sclerosis (DMS)" reads
  "isolated diffuse mesangial sclerosis").
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional

_PAREN = re.compile(r"\(([^()]{1,12})\)")
_MAX_WORD = 64


def is_short_form(candidate: str) -> bool:
    """Whether `candidate` can be a short form (2-10 characters, at most 2 words,
    alphanumeric first, a letter): `find_abbreviations` keys nothing else."""
    if not 2 <= len(candidate) <= 10 or len(candidate.split()) > 2:
        return False
    return candidate[0].isalnum() and any(c.isalpha() for c in candidate)


def best_long_form(short_form: str, preceding: str) -> Optional[str]:
    """Schwartz-Hearst matching of `short_form` inside the words of `preceding`.

    RETURNS (Optional[str]): the long form, or None when it does not match.
    """
    s_index = len(short_form) - 1
    l_index = len(preceding) - 1
    while s_index >= 0:
        char = short_form[s_index].lower()
        if not char.isalnum():
            s_index -= 1
            continue
        while l_index >= 0 and (preceding[l_index].lower() != char or (
                s_index == 0 and l_index > 0 and preceding[l_index - 1].isalnum())):
            l_index -= 1
        if l_index < 0:
            return None
        l_index -= 1
        s_index -= 1
    start = preceding.rfind(" ", 0, l_index + 1) + 1
    long_form = preceding[start:].strip()
    if len(long_form) <= len(short_form) or short_form.lower() in long_form.lower().split():
        return None
    return long_form


def _preceding_words(text: str, end: int, n: int) -> List[str]:
    """The last `n` whitespace-separated words of text[:end], reading back at
    most n * _MAX_WORD characters, so each definition costs O(window) and the
    whole text O(length) (a longer word is cut to its last _MAX_WORD characters)."""
    return text[max(0, end - n * _MAX_WORD):end].split()[-n:]


# words with a full stop that end no sentence ("i.e." and "U.S." have a stop inside)
_NOT_AN_END = {"al.", "approx.", "ca.", "cf.", "dr.", "fig.", "figs.", "no.", "ref.", "refs.", "st.", "vs."}


def _ends_sentence(word: str, following: str) -> bool:
    if word[-1] not in ".!?" or not (following[0].isupper() or following[0].isdigit()):
        return False
    return word[-1] != "." or ("." not in word[:-1] and word.lower() not in _NOT_AN_END)


def _in_sentence(words: List[str]) -> List[str]:
    """The words of `words` after the last sentence end among them (a word
    ending in . ! or ? before one that starts with a capital or a digit, but not
    "i.e.", "vs." and the like)."""
    for k in range(len(words) - 2, -1, -1):
        if _ends_sentence(words[k], words[k + 1]):
            return words[k + 1:]
    return words


def find_abbreviations(text: str) -> Dict[str, str]:
    """Short form -> long form for every definition "long form (SF)" in `text`
    (the first definition of a short form wins)."""
    out: Dict[str, str] = {}
    for match in _PAREN.finditer(text):
        short_form = match.group(1).strip()
        if not is_short_form(short_form) or short_form in out:
            continue
        window = min(len(short_form) + 5, 2 * len(short_form))
        words = _in_sentence(_preceding_words(text, match.start(), window))
        long_form = best_long_form(short_form, " ".join(words))
        if long_form:
            long_form = _extended(short_form, long_form, words)
            out[short_form] = " ".join(out.get(word, word) for word in long_form.split())
    return out


def _extended(short_form: str, long_form: str, words: List[str]) -> str:
    """`long_form` (the last words of `words`) with the words before it that start
    with the short form's first letter, while it has fewer words than the short
    form has capitals (the one-letter-one-word reading of an all-capital short form)."""
    capitals = sum(c.isupper() for c in short_form)
    taken = len(long_form.split())
    first = short_form[0].lower()
    while capitals >= 2 and taken < capitals and taken < len(words):
        word = words[-taken - 1]
        if not (word.isalpha() and word[0].lower() == first):
            break
        taken += 1
    return " ".join(words[-taken:])


__all__ = ["find_abbreviations", "best_long_form", "is_short_form"]

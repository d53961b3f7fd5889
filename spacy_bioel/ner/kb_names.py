"""KB-name features for the NER before a linker: does a stretch of tokens spell
a name of the knowledge base the linker links to?

Dictionary features are the classic lexicon signal of biomedical NER (the
lexicon features of BANNER and TaggerOne's NER; Leaman & Lu 2016,
Bioinformatics 32(18)). Here each token gets four binary features from the
KB's names and synonyms, and `spacy-bioel.KBNameEmbed.v1` concatenates them to
spaCy's hash embeddings before the CNN encoder, so the NER learns how far to
trust them:

0. the token begins a longest match (left to right, at most `max_words` tokens);
1. the token is inside a longest match, after its first token;
2. the token is covered by any match (overlapping ones included);
3. the token alone is a name.

Names are compared as the KB's alias map compares them (`kb.normalize`:
NFKC, case-folded, runs of punctuation and spaces read as one space, so
"Ehlers-Danlos syndrome" matches "ehlers danlos syndrome"); names of at most
four such characters ("CHD", "AS") match only with their case, so that "as" or "is" are not abbreviations. The names are read
from the KB when the pipeline is initialised (`spacy train`) and saved with the
model: a trained pipeline does not need the KB file again.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import numpy as np
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Maxout, Model, chain, concatenate, with_array
from thinc.types import Floats2d

from ..errors import BioELError, Errors
from ..kb.normalize import normalize_text

N_FEATURES = 4
SHORT = 4  # names of at most this many normalised characters match with their case
MAX_CACHED = 4  # matchers kept (one per model; a large KB's names take tens of MB)


class NameMatcher:
    """Longest and overlapping matches of KB names over a doc's tokens."""

    def __init__(self, names: Sequence[str], max_words: int = 10) -> None:
        self.max_words = max_words
        self.long: Set[Tuple[str, ...]] = set()
        self.prefixes: Set[Tuple[str, ...]] = set()
        short: Set[str] = set()
        for name in names:
            key = normalize_text(name)
            if len(key) > SHORT:
                words = tuple(key.split())
                self.long.add(words)
                self.prefixes.update(words[:k] for k in range(1, len(words)))
            elif key:
                short.add(name.strip())
        self.short: FrozenSet[str] = frozenset(short)
        self.short_length = max(map(len, short), default=0)  # the longest short name's text

    def matches(self, doc: Doc) -> List[Tuple[int, int]]:
        """Every (start, end) token span of `doc` that spells a name and begins
        and ends with a token holding a letter or digit. A short name is compared
        with the span's text (`doc[i:j].text`), built from the tokens' texts (spaCy
        builds a span for each: 13% of the text pipeline's time on NCBI test) and
        only while it is no longer than the longest short name."""
        texts: List[str] = []
        with_ws: List[str] = []
        for token in doc:
            texts.append(token.text)
            with_ws.append(token.text_with_ws)
        keys: Dict[str, Tuple[str, ...]] = {}  # a token text's words, normalised once a doc
        for text in texts:
            if text not in keys:
                keys[text] = tuple(normalize_text(text).split())
        words = [keys[text] for text in texts]
        n = len(texts)
        out: List[Tuple[int, int]] = []
        for i in range(n):
            if not words[i]:
                continue
            key: Tuple[str, ...] = ()
            for j in range(i, min(n, i + self.max_words)):
                key += words[j]
                if words[j] and key in self.long:
                    out.append((i, j + 1))
                if key not in self.prefixes:
                    break
            before = ""  # doc[i:j - 1].text_with_ws
            for j in range(i + 1, min(n, i + 3) + 1):
                text = before + texts[j - 1]  # doc[i:j].text
                if len(text) > self.short_length:
                    break
                if words[j - 1] and text in self.short:
                    out.append((i, j))
                before += with_ws[j - 1]
        return out

    @staticmethod
    def longest(spans: List[Tuple[int, int]], n_tokens: int) -> List[Tuple[int, int]]:
        """The left-to-right longest, non-overlapping spans of `matches`."""
        ends: Dict[int, int] = {}
        for start, end in spans:
            ends[start] = max(ends.get(start, start), end)
        out, i = [], 0
        while i < n_tokens:
            if i in ends:
                out.append((i, ends[i]))
                i = ends[i]
            else:
                i += 1
        return out

    def features(self, doc: Doc) -> np.ndarray:
        """(len(doc), N_FEATURES) float32: begin / inside of a longest match,
        covered by any match, a name alone."""
        out = np.zeros((len(doc), N_FEATURES), dtype="float32")
        spans = self.matches(doc)
        for start, end in spans:
            out[start:end, 2] = 1.0
            if end - start == 1:
                out[start, 3] = 1.0
        for start, end in self.longest(spans, len(doc)):
            out[start, 0] = 1.0
            out[start + 1:end, 1] = 1.0
        return out


def read_kb_names(path: Union[str, Path]) -> List[str]:
    """Every name and synonym of a KB file (`.bioelkb`, or `embedded:NAME`), or
    of the KB inside a saved pipeline's bioel_linker (a pipeline folder)."""
    from ..kb.knowledge_base import KnowledgeBase

    folder = Path(path)
    if folder.is_dir():
        found = sorted(folder.glob("*/kb"))
        if not found:
            raise BioELError(Errors.E225.format(path=path))
        path = found[0]
    kb = KnowledgeBase.from_disk(path)
    return sorted({name for _, name in kb.names() if name.strip()})


# model.id -> (the names list it was built from, its max_words, the matcher): built on first
# use, again when from_bytes / from_disk gives the model other names; the least recently used
# beyond MAX_CACHED are dropped (thinc models cannot be weakly referenced)
_MATCHERS: "OrderedDict[int, Tuple[List[str], int, NameMatcher]]" = OrderedDict()


def _matcher(model: Model) -> NameMatcher:
    names, max_words = model.attrs["names"], model.attrs["max_words"]
    cached = _MATCHERS.get(model.id)
    if cached is None or cached[0] is not names or cached[1] != max_words:
        cached = _MATCHERS[model.id] = (names, max_words, NameMatcher(names, max_words))
        while len(_MATCHERS) > MAX_CACHED:
            _MATCHERS.popitem(last=False)
    _MATCHERS.move_to_end(model.id)
    return cached[2]


def kb_name_features(kb: Optional[Union[str, Path]], max_words: int = 10
                     ) -> Model[List[Doc], List[Floats2d]]:
    """Docs -> (tokens, N_FEATURES) KB-name features (no weights; see the module)."""
    return Model("kb_name_features", _forward, init=_init, dims={"nO": N_FEATURES},
                 attrs={"kb": str(kb) if kb else "", "names": [], "max_words": max_words})


def _init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    if model.attrs["names"]:
        return
    if not model.attrs["kb"]:
        raise BioELError(Errors.E226)
    model.attrs["names"] = read_kb_names(model.attrs["kb"])


def _forward(model: Model, docs: List[Doc], is_train: bool
             ) -> Tuple[List[Floats2d], Callable[[List[Floats2d]], List[Doc]]]:
    if not model.attrs["names"]:
        raise BioELError(Errors.E226)
    matcher = _matcher(model)
    out = [model.ops.asarray2f(matcher.features(doc)) for doc in docs]
    return out, lambda d_out: []


@registry.architectures("spacy-bioel.KBNameEmbed.v1")
def build_kb_name_embed(embed: Model[List[Doc], List[Floats2d]], width: int,
                        kb: Optional[str] = None, max_words: int = 10
                        ) -> Model[List[Doc], List[Floats2d]]:
    """spaCy's token embedding (`embed`, e.g. spacy.MultiHashEmbed.v2) with the
    KB-name features of each token beside it, mixed back to `width` by a maxout
    layer: the `embed` of a spacy.Tok2Vec.v2.

    embed (Model[List[Doc], List[Floats2d]]): The token embedding.
    width (int): The output width (the encoder's).
    kb (Optional[str]): A KB file, `embedded:NAME`, or a saved pipeline whose
        bioel_linker's KB to read (e.g. `${paths.linker}`); read once, when the
        pipeline is initialised.
    max_words (int): The longest name matched, in tokens.
    """
    features = kb_name_features(kb, max_words)
    return chain(concatenate(embed, features),
                 with_array(Maxout(width, nP=3, dropout=0.0, normalize=True)))


__all__ = ["NameMatcher", "read_kb_names", "kb_name_features",
           "build_kb_name_embed", "N_FEATURES"]

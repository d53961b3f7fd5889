"""What the linker remembers between mentions: the embedding of every text it
encoded and the decision of every entity it linked, bounded (least recently
used entries go first).

Keys are exact for the model. A text is keyed as the encoder sees it, after
its tokenizer's normaliser (BERT lowercases and strips accents, so "Colon
Cancer" and "colon cancer" share one embedding); a decision is keyed by the
mention's text and the long form it is read through (a defined abbreviation),
each as every stage reads it: as the encoder sees it and as the candidate
generator does (TF-IDF and exact names keep accents, so "Ménière" and
"Meniere" share an embedding but not a decision under hybrid candidates),
and, with a type filter, its label. Decisions made without the encoder (an exact-name
shortcut, a mention without letters or digits) are not cached: they cost nothing.

Scope: one cache of decisions lives for one `nlp.pipe` (or `nlp(doc)`) call,
so a mention repeated in a corpus is encoded and ranked once per call. It keeps
no embeddings: with its decisions cached (each packed: its candidates as a tuple
of ids and an array of probabilities), a text comes back to the encoder only
under another long form or label (a few more texts encoded, for less peak
memory: docs/results/speed.md). A repeated entry is the
same computation as the first; a fresh run can differ from it by float rounding
(about 1e-7, which depends on the batch it was computed in) or, with the int8
ONNX tower, by the quantisation of the batch's activations, which share one scale.
"""
from __future__ import annotations

from collections import Counter, OrderedDict
from contextlib import contextmanager
from typing import Any, Hashable, Iterator, Optional

from .decisions import Decision, pack_decision, unpack_decision


class LRUCache:
    """A dict bounded to `size` entries; `get` refreshes an entry, `put` evicts
    the least recently used one. size 0 stores nothing."""

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self._items: "OrderedDict[Hashable, Any]" = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> Optional[Any]:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        if self.size <= 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()


class DecisionCache(LRUCache):
    """An `LRUCache` of entity decisions, each held packed (`pack_decision`);
    `get` returns a fresh `Decision`."""

    def get(self, key: Hashable) -> Optional[Decision]:
        packed = super().get(key)
        return unpack_decision(packed) if packed is not None else None

    def put(self, key: Hashable, value: Decision) -> None:
        if self.size > 0:
            super().put(key, pack_decision(value))


class LinkCache:
    """Entity decisions, bounded to `size` entries, and counts of hits and misses
    (`stats`)."""

    def __init__(self, size: int) -> None:
        self.decisions = DecisionCache(size)
        self.stats: Counter = Counter()

    def clear(self) -> None:
        self.decisions.clear()


@contextmanager
def call_cache(component) -> Iterator[Optional[LinkCache]]:
    """The cache of one `nlp.pipe` / `nlp(doc)` call of a linker, set as its
    `call` meanwhile (a nested call restores the outer one): a fresh one (none
    with `cache_size` 0). Its counts are added to the linker's `counts` ('cache_decision_hits',
    'cache_texts_encoded', ...) when the call ends."""
    size, outer = component.cfg["cache_size"], component.call
    call = None if size == 0 else LinkCache(size)
    component.call = call
    try:
        yield call
    finally:
        component.call = outer
        if call is not None:
            component.counts.update({f"cache_{k}": v for k, v in call.stats.items()})
            call.stats.clear()


__all__ = ["LRUCache", "DecisionCache", "LinkCache", "call_cache"]

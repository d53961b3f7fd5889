"""How the linker decides a batch of entities (`BioELLinker.predict` and
`retrieve`), in order of cost:

1. a mention with no letter or digit in any script is NIL (`nil_without_alnum`);
2. the `shortcut` stage (an exact KB name of one concept) links without the
   encoder, unless the mention is an abbreviation defined in its document
   (read through its long form);
3. an entity whose (text, long form, label) was decided earlier in the same
   call (or, with `cache_across_calls`, since the last change) reuses that
   decision (`cache.LinkCache`);
4. the rest are encoded by the `runtime` stage (each distinct text once; a text
   encoded earlier comes from the cache), searched in the name index and the
   kNN datastore, ranked and given to the NIL stage.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Dict, Hashable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc, Span

from ..errors import BioELError, Errors, Warnings, warn
from .cache import LinkCache
from .decisions import NIL_WITHOUT_ALNUM, Retrieved, decide_entity
from ..encoders.thinc_biencoder import is_contextual
from .mentions import (SpanKey, has_alnum, held_out_key, long_forms, mention_alternatives,
                       mention_input)

if TYPE_CHECKING:
    from .linker import BioELLinker

Entity = Tuple[int, Span]  # (doc index, entity)


@contextmanager
def call_cache(linker: "BioELLinker") -> Iterator[Optional[LinkCache]]:
    """The cache of one `nlp.pipe` / `nlp(doc)` call: the linker's shared one
    with `cache_across_calls`, else a fresh one for the call. Its counts are
    added to `linker.counts` ('cache_decision_hits', 'cache_texts_encoded', ...)."""
    outer = linker.call
    if linker.cfg["cache_size"] == 0:  # caching off: every entity is decided on its own
        linker.call = None
    else:
        linker.call = linker.cache if linker.cfg["cache_across_calls"] else \
            LinkCache(linker.cfg["cache_size"])
    try:
        yield linker.call
    finally:
        if linker.call is not None:
            linker.counts.update({f"cache_{k}": v for k, v in linker.call.stats.items()})
            linker.call.stats.clear()
        linker.call = outer


def _early(linker: "BioELLinker", docs: Sequence[Doc]
           ) -> Tuple[List[Entity], Dict[SpanKey, str], List[Optional[Retrieved]]]:
    """Every entity, the long forms of defined abbreviations, and the
    alternatives of the entities decided without the encoder (None for the others)."""
    every = [(i, ent) for i, doc in enumerate(docs) for ent in doc.ents]
    forms = long_forms(list(docs)) if linker.cfg["abbreviations"] else {}
    shortcut = linker.shortcut
    early: List[Optional[Retrieved]] = [None] * len(every)
    for k, (i, ent) in enumerate(every):
        if linker.cfg["nil_without_alnum"] and not has_alnum(ent.text):
            early[k] = []
        elif shortcut is not None and (i, ent.start_char, ent.end_char) not in forms:
            concept = shortcut.concept(ent.text, ent.label_, linker.type_filter)
            if concept is not None:
                early[k] = [{"candidates": [(linker.index.names.concept_ids[concept], 1.0, 1.0)],
                             "neighbours": [], "shortcut": True}]
    return every, forms, early


def retrieve(linker: "BioELLinker", docs: Sequence[Doc], knn_k: Optional[int] = None
             ) -> List[Retrieved]:
    """Per entity (docs in order), its alternatives: none for a NIL without
    letters or digits, the shortcut's one, or the candidates and datastore
    neighbours of its text and of its long form. No cache (tuning reads this)."""
    every, forms, early = _early(linker, docs)
    rest = [k for k, alternatives in enumerate(early) if alternatives is None]
    for k, alternatives in zip(rest, retrieve_spans(linker, [every[k] for k in rest], forms,
                                                     knn_k, None)):
        early[k] = alternatives
    return early  # type: ignore[return-value]


def predict(linker: "BioELLinker", docs: Sequence[Doc], cache: Optional[LinkCache]
            ) -> List[Dict[str, Any]]:
    """RETURNS (List[Dict[str, Any]]): the decision of every entity, docs in order."""
    if is_contextual(linker.model):  # the same text reads differently in each context
        cache = None
    every, forms, early = _early(linker, docs)
    decisions: List[Optional[Dict[str, Any]]] = [None] * len(every)
    pending: Dict[Hashable, List[int]] = {}
    for k, alternatives in enumerate(early):
        if alternatives is not None:
            decisions[k] = decide(linker, alternatives)
    rest = [k for k in range(len(every)) if decisions[k] is None]
    keys = decision_keys(linker, [every[k] for k in rest], forms) if cache is not None else rest
    for k, key in zip(rest, keys):
        hit = cache.decisions.get(key) if cache is not None else None
        if hit is not None:
            decisions[k] = hit
            cache.stats["decision_hits"] += 1
        else:
            pending.setdefault(key, []).append(k)
    firsts = [positions[0] for positions in pending.values()]
    retrieved = retrieve_spans(linker, [every[k] for k in firsts], forms, None, cache)
    for (key, positions), alternatives in zip(pending.items(), retrieved):
        decision = decide(linker, alternatives)
        for k in positions:
            decisions[k] = decision
        if cache is not None:
            cache.decisions.put(key, decision)
            cache.stats["decisions"] += 1
            cache.stats["decision_hits"] += len(positions) - 1
    return decisions  # type: ignore[return-value]


def decide(linker: "BioELLinker", alternatives: Retrieved) -> Dict[str, Any]:
    if not alternatives:
        return dict(NIL_WITHOUT_ALNUM)
    return decide_entity(alternatives, linker.ranker, linker.nil, linker.cfg["top_k"])


def decision_keys(linker: "BioELLinker", spans: Sequence[Entity], forms: Dict[SpanKey, str]
                  ) -> List[Hashable]:
    """(text, long form, label, held-out document key) of each entity, texts as
    the encoder sees them; the label counts only with a type filter, the
    document only when it is held out of the datastore (`HELD_OUT_KNN`)."""
    context = linker.cfg["context_window"]
    texts = [mention_input(ent, context) for _, ent in spans]
    longs = [forms.get((i, ent.start_char, ent.end_char)) for i, ent in spans]
    keyed = linker.runtime.cache_keys(linker.model, texts + [f for f in longs if f is not None])
    long_keys = iter(keyed[len(texts):])
    filtered = linker.type_filter is not None
    held_out = held_out_keys(spans)
    return [(text, next(long_keys) if long_form is not None else None,
             ent.label_ if filtered else "", held_out[i])
            for text, long_form, (i, ent) in zip(keyed, longs, spans)]


def held_out_keys(spans: Sequence[Entity]) -> Dict[int, Optional[int]]:
    """Doc index -> the document key its entities' kNN search leaves out
    (`held_out_key`), computed once per document."""
    out: Dict[int, Optional[int]] = {}
    for i, ent in spans:
        if i not in out:
            out[i] = held_out_key(ent.doc)
    return out


def encode_mentions(linker: "BioELLinker", texts: List[str], cache: Optional[LinkCache]
                    ) -> np.ndarray:
    """(len(texts), dim) mention embeddings from the runtime, each distinct text
    encoded once; with a cache, texts it holds are not encoded again."""
    batch_size = linker.cfg["encode_batch_size"]
    if cache is None:
        return linker.runtime.encode(linker.model, texts, batch_size)
    keys = linker.runtime.cache_keys(linker.model, texts)
    rows = [cache.embeddings.get(key) for key in keys]
    missing = {key: text for key, text, row in zip(keys, texts, rows) if row is None}
    if missing:
        fresh = linker.runtime.encode(linker.model, list(missing.values()), batch_size)
        for key, row in zip(missing, fresh):
            cache.embeddings.put(key, row)
        found = dict(zip(missing, fresh))
        rows = [row if row is not None else found[key] for key, row in zip(keys, rows)]
    cache.stats["texts_encoded"] += len(missing)
    cache.stats["texts_cached"] += len(texts) - len(missing)
    return np.stack(rows) if rows else np.zeros((0, linker.index.store.dim), dtype=np.float32)


def contextual_queries(linker: "BioELLinker", spans: List[Entity], texts: List[str],
                       owner: List[int]) -> np.ndarray:
    """Embeddings of a contextual model: each entity read in its document; a long
    form (texts after the entities') read where it occurs in the document, nearest
    before its abbreviation (the entity itself if it does not occur)."""
    from ..encoders.contextual import embed_entities, locate

    linker.require_model("encoding mentions")
    rows = []
    for j, k in enumerate(owner):
        ent = spans[k][1]
        where = locate(ent.doc, texts[j], ent) if j >= len(spans) else None
        start, end = where if where is not None else (ent.start, ent.end)
        rows.append((ent.doc, start, end))
    return embed_entities(linker.model, rows)


def retrieve_spans(linker: "BioELLinker", spans: List[Entity], forms: Dict[SpanKey, str],
                   knn_k: Optional[int], cache: Optional[LinkCache]) -> List[Retrieved]:
    """Candidates and datastore neighbours of each span's text and long form."""
    out: List[Retrieved] = [[] for _ in spans]
    if not spans:
        return out
    if not linker.index.ready:
        raise BioELError(Errors.E168)
    if linker.index.stale or linker.datastore_stale:
        warn(Warnings.W006.format(name=linker.name))
    texts, labels, owner = mention_alternatives(spans, linker.cfg["context_window"], forms)
    if is_contextual(linker.model):
        queries = contextual_queries(linker, spans, texts, owner)
    else:
        queries = encode_mentions(linker, texts, cache)
    masks = linker.type_filter.masks(labels) if linker.type_filter is not None else None
    k = min(linker.cfg["top_k"], len(linker.index.names.concept_ids))
    found = linker.candidates(texts, queries, linker.index, k, masks)
    ranker, datastore = linker.ranker, linker.datastore
    knn_k = knn_k or (ranker.knn_k if ranker.use_knn else 0)  # kNN off: no search
    use_knn = datastore is not None and len(datastore) and knn_k
    if use_knn:
        held_out = held_out_keys(spans)
        neighbours = datastore.search(queries, knn_k, [held_out[spans[j][0]] for j in owner])
    else:
        neighbours = [[] for _ in texts]
    ids, concept_index = linker.index.names.concept_ids, linker.concept_index
    for j, (rows, near) in enumerate(zip(found, neighbours)):
        mask = masks[j] if masks is not None else None
        allowed = [(cid, s) for cid, s in near if cid in concept_index and
                   (mask is None or mask[concept_index[cid]])]
        out[owner[j]].append({"candidates": [(ids[c], score, sim) for c, score, sim in rows],
                              "neighbours": allowed})
    return out


__all__ = ["call_cache", "predict", "retrieve", "retrieve_spans", "encode_mentions", "decision_keys",
           "held_out_keys"]

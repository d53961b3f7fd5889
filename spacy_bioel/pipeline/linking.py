"""How the linker decides a batch of entities (`BioELLinker.predict` and
`retrieve`), in order of cost:

1. a mention with no letter or digit in any script is NIL (`nil_without_alnum`);
   without training mentions, so is an abbreviation its document does not define
   and no KB name names (`nil_undefined_abbreviations`; it is still encoded, so
   its candidates are written);
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

import time
from contextlib import contextmanager
from typing import Any, Dict, Hashable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from spacy.tokens import Doc, Span

from ..encoders.thinc_biencoder import is_contextual
from ..errors import BioELError, Errors, Warnings, warn
from .cache import LinkCache
from ..kb.normalize import normalize_text
from .decisions import (Decision, Retrieved, decide_entity, nil_undefined_abbreviation,
                        nil_without_alnum)
from .mentions import (SpanKey, has_alnum, held_out_key, long_forms, looks_like_abbreviation,
                       mention_alternatives, mention_input, mention_spans)
from .state import LinkerState

Entity = Tuple[int, Span]  # (doc index, entity)


class Decider:
    """The prediction path of one linker. The component makes one when it is
    built (`BioELLinker.decider`) and keeps it: at each call it reads the linker's
    current state (KB, index, datastore), model, stages and settings (`cfg`), so a
    stage replaced with `set_stage` or a setting changed with `set_option` is the
    one used next."""

    def __init__(self, linker: Any) -> None:
        self.linker = linker  # a `BioELLinker` (this module never imports it)

    state: LinkerState = property(lambda self: self.linker.state)  # type: ignore[assignment]
    model = property(lambda self: self.linker.model, doc="The thinc bi-encoder.")
    runtime = property(lambda self: self.linker.runtime, doc="Encodes mentions (PyTorch or ONNX Runtime).")
    candidates = property(lambda self: self.linker.candidates)
    ranker = property(lambda self: self.linker.ranker)
    nil = property(lambda self: self.linker.nil)
    shortcut = property(lambda self: self.linker.shortcut)
    type_filter = property(lambda self: self.linker.type_filter)
    cfg = property(lambda self: self.linker.cfg, doc="The linker's settings (`LinkerSettings`).")
    name = property(lambda self: self.linker.name)
    timings = property(lambda self: self.linker.timings, doc="Seconds per stage (`timed`).")

    def require_model(self, why: str) -> None:
        """Build a deferred PyTorch module before `why`."""
        self.linker.require_model(why)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the wall time of the block to `timings[stage]` (the benchmark's
        share of time per stage: early, encode, search, knn, decide); nothing
        unless the lab set the linker's `timings` to a Counter."""
        if self.timings is None:
            yield
            return
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[stage] += time.perf_counter() - start

    def decide_without_encoder(self, docs: Sequence[Doc]
               ) -> Tuple[List[Entity], Dict[SpanKey, str], List[Optional[Retrieved]]]:
        """Every entity, the long forms of defined abbreviations, and the
        alternatives of the entities decided without the encoder (None for the others)."""
        key = self.cfg["spans_key"]
        entities = [(i, ent) for i, doc in enumerate(docs) for ent in mention_spans(doc, key)]
        long_forms_at = long_forms(list(docs), key) if self.cfg["abbreviations"] else {}
        shortcut = self.shortcut
        without_encoder: List[Optional[Retrieved]] = [None] * len(entities)
        for k, (i, ent) in enumerate(entities):
            if self.cfg["nil_without_alnum"] and not has_alnum(ent.text):
                without_encoder[k] = []
            elif shortcut is not None and (i, ent.start_char, ent.end_char) not in long_forms_at:
                concept = shortcut.concept(ent.text, ent.label_, self.type_filter)
                if concept is not None:
                    concept_id = self.state.index.names.concept_ids[concept]
                    without_encoder[k] = [{"candidates": [(concept_id, 1.0, 1.0)], "neighbours": [],
                                           "shortcut": True}]
        return entities, long_forms_at, without_encoder

    def retrieve(self, docs: Sequence[Doc], knn_k: Optional[int] = None
                 ) -> List[Retrieved]:
        """Per entity (docs in order), its alternatives: none for a NIL without
        letters or digits, the shortcut's one, or the candidates and datastore
        neighbours of its text and of its long form. No cache (tuning reads this)."""
        entities, long_forms_at, without_encoder = self.decide_without_encoder(docs)
        rest = [k for k, alternatives in enumerate(without_encoder) if alternatives is None]
        retrieved = self.retrieve_spans([entities[k] for k in rest], long_forms_at, knn_k, None)
        for k, alternatives in zip(rest, retrieved):
            without_encoder[k] = alternatives
        return without_encoder  # type: ignore[return-value]

    def predict(self, docs: Sequence[Doc], cache: Optional[LinkCache]
                ) -> List[List[Decision]]:
        """RETURNS (List[List[Decision]]): per doc, the decision of each of its mentions."""
        if is_contextual(self.model):  # the same text reads differently in each context
            cache = None
        self.state.check_space(self.cfg["id_space"])  # one saved in a config: E261 at the first call
        with self.timed("early"):
            entities, long_forms_at, without_encoder = self.decide_without_encoder(docs)
        decisions: List[Optional[Decision]] = [None] * len(entities)
        pending: Dict[Hashable, List[int]] = {}
        with self.timed("decide"):
            by_concept: Dict[str, Decision] = {}  # a shortcut's decision depends on its concept only
            for k, alternatives in enumerate(without_encoder):
                if alternatives and alternatives[0].get("shortcut"):
                    concept = alternatives[0]["candidates"][0][0]
                    if concept not in by_concept:
                        by_concept[concept] = self.decide(alternatives)
                    decisions[k] = by_concept[concept]
                elif alternatives is not None:
                    decisions[k] = self.decide(alternatives)
        rest = [k for k in range(len(entities)) if decisions[k] is None]
        keys = self.decision_keys([entities[k] for k in rest], long_forms_at) if cache is not None else rest
        for k, key in zip(rest, keys):
            hit = cache.decisions.get(key) if cache is not None else None
            if hit is not None:
                decisions[k] = hit
                cache.stats["decision_hits"] += 1
            else:
                pending.setdefault(key, []).append(k)
        firsts = [positions[0] for positions in pending.values()]
        retrieved = self.retrieve_spans([entities[k] for k in firsts], long_forms_at, None, cache)
        with self.timed("decide"):
            for (key, positions), alternatives in zip(pending.items(), retrieved):
                decision = self.decide(alternatives)
                for k in positions:
                    decisions[k] = decision
                if cache is not None:
                    cache.decisions.put(key, decision)
                    cache.stats["decisions"] += 1
                    cache.stats["decision_hits"] += len(positions) - 1
        for k in self.undefined_abbreviations(entities, long_forms_at):
            decisions[k] = nil_undefined_abbreviation(decisions[k])  # type: ignore[arg-type]
        per_doc: List[List[Decision]] = [[] for _ in docs]
        for (i, _), decision in zip(entities, decisions):
            per_doc[i].append(decision)  # type: ignore[arg-type]
        return per_doc

    def nils_undefined_abbreviations(self) -> bool:
        """Whether `nil_undefined_abbreviations` applies: on, with `abbreviations`
        and an exact-name `shortcut` stage (`ExactShortcut`), and no training mentions."""
        return bool(self.cfg["nil_undefined_abbreviations"] and self.cfg["abbreviations"]
                    and not self.state.train_mentions
                    and getattr(self.shortcut, "exact", None) is not None)  # its KB names

    def undefined_abbreviations(self, entities: Sequence[Entity],
                                long_forms_at: Dict[SpanKey, str]) -> List[int]:
        """The entities a linker without training mentions calls NIL
        (`nil_undefined_abbreviations`): each reads as an abbreviation, its
        document does not define it (with `abbreviations` on) and it is no KB
        name (the `shortcut` stage's exact names; without that stage, none)."""
        if not self.nils_undefined_abbreviations():
            return []
        names = self.shortcut.exact.lookup
        return [k for k, (i, ent) in enumerate(entities)
                if looks_like_abbreviation(ent.text)
                and (i, ent.start_char, ent.end_char) not in long_forms_at
                and not names.get(normalize_text(ent.text))]

    def decide(self, alternatives: Retrieved) -> Decision:
        if not alternatives:
            return nil_without_alnum()
        return decide_entity(alternatives, self.ranker, self.nil, self.cfg["top_k"])

    def decision_keys(self, spans: Sequence[Entity], long_forms_at: Dict[SpanKey, str]
                      ) -> List[Hashable]:
        """(text, long form, label, held-out document key) of each entity, each text
        as every stage that reads it sees it: as the encoder sees it (its tokenizer's
        normaliser: BERT strips accents) and as the candidate generator does (its
        `text_key`: TF-IDF and exact names keep accents; an unknown generator, the raw
        text). The label counts only with a type filter, the document only when it is
        held out of the datastore (`HELD_OUT_KNN`)."""
        context = self.cfg["context_window"]
        texts = [mention_input(ent, context) for _, ent in spans]
        longs = [long_forms_at.get((i, ent.start_char, ent.end_char)) for i, ent in spans]
        keyed = self.runtime.cache_keys(self.model, texts + [f for f in longs if f is not None])
        text_key = getattr(self.candidates, "text_key", lambda text: text)
        keyed = [(key, text_key(text)) for key, text in
                 zip(keyed, texts + [f for f in longs if f is not None])]
        long_keys = iter(keyed[len(texts):])
        filtered = self.type_filter is not None
        held_out = held_out_keys(spans)
        return [(text, next(long_keys) if long_form is not None else None,
                 ent.label_ if filtered else "", held_out[i])
                for text, long_form, (i, ent) in zip(keyed, longs, spans)]

    def encode_mentions(self, texts: List[str], cache: Optional[LinkCache]
                        ) -> np.ndarray:
        """(len(texts), dim) mention embeddings from the runtime; with a cache, each
        text the encoder reads alike (`runtime.cache_keys`) is encoded once."""
        batch_size = self.cfg["encode_batch_size"]
        if cache is None:
            return self.runtime.encode(self.model, texts, batch_size)
        keys = self.runtime.cache_keys(self.model, texts)
        distinct = dict(zip(keys, texts))  # one text per key the encoder reads alike
        fresh = (self.runtime.encode(self.model, list(distinct.values()), batch_size)
                 if distinct else [])
        found = dict(zip(distinct, fresh))
        rows = [found[key] for key in keys]
        cache.stats["texts_encoded"] += len(distinct)
        cache.stats["texts_cached"] += len(texts) - len(distinct)
        return np.stack(rows) if rows else np.zeros((0, self.state.index.store.dim), dtype=np.float32)

    def contextual_queries(self, spans: List[Entity], texts: List[str],
                           owner: List[int]) -> np.ndarray:
        """Embeddings of a contextual model: each entity read in its document; a long
        form (texts after the entities') read where it occurs in the document, nearest
        before its abbreviation (the entity itself if it does not occur)."""
        from ..encoders.spans import embed_entities, locate

        self.require_model("encoding mentions")
        rows = []
        for j, k in enumerate(owner):
            ent = spans[k][1]
            where = locate(ent.doc, texts[j], ent) if j >= len(spans) else None
            start, end = where if where is not None else (ent.start, ent.end)
            rows.append((ent.doc, start, end))
        return embed_entities(self.model, rows)

    def retrieve_spans(self, spans: List[Entity], long_forms_at: Dict[SpanKey, str],
                       knn_k: Optional[int], cache: Optional[LinkCache]) -> List[Retrieved]:
        """Candidates and datastore neighbours of each span's text and long form."""
        out: List[Retrieved] = [[] for _ in spans]
        if not spans:
            return out
        if not self.state.index.ready:
            raise BioELError(Errors.E168)
        if self.state.index.stale or self.state.datastore_stale:
            warn(Warnings.W006.format(name=self.name))
        texts, labels, owner = mention_alternatives(spans, self.cfg["context_window"], long_forms_at)
        with self.timed("encode"):
            if is_contextual(self.model):
                queries = self.contextual_queries(spans, texts, owner)
            else:
                queries = self.encode_mentions(texts, cache)
        masks = self.type_filter.masks(labels) if self.type_filter is not None else None
        k = min(self.cfg["retrieve_k"], len(self.state.index.names.concept_ids))
        with self.timed("search"):
            found = self.candidates(texts, queries, self.state.index, k, masks)
        ranker, datastore = self.ranker, self.state.datastore
        knn_k = knn_k or (ranker.knn_k if ranker.use_knn else 0)  # kNN off: no search
        use_knn = datastore is not None and len(datastore) and knn_k
        if use_knn:
            held_out = held_out_keys(spans)
            with self.timed("knn"):
                neighbours = datastore.search(queries, knn_k, [held_out[spans[j][0]] for j in owner])
        else:
            neighbours = [[] for _ in texts]
        ids, concept_index = self.state.index.names.concept_ids, self.state.concept_index
        for j, (rows, near) in enumerate(zip(found, neighbours)):
            mask = masks[j] if masks is not None else None
            allowed = [(cid, s) for cid, s in near if cid in concept_index and
                       (mask is None or mask[concept_index[cid]])]
            out[owner[j]].append({"candidates": [(ids[c], score, sim) for c, score, sim in rows],
                                  "neighbours": allowed})
        return out


def check_contextual(model, ranker, biofeg, runtime) -> None:
    """E212 for the stages that encode mention texts, with a model that reads
    mentions in context: the kNN datastore (its keys are training mentions
    without their documents), BioFEG (real mention features from texts) and
    an ONNX runtime."""
    if not is_contextual(model):
        return
    if getattr(ranker, "use_knn", False):
        raise BioELError(Errors.E212.format(what="The kNN datastore", fix=(
            "Set [components.bioel_linker.ranker] use_knn = false.")))
    for stage, name in ((biofeg, "BioFEG"), (runtime.has_files and runtime, "The ONNX runtime")):
        if stage:
            fix = ("Set [components.bioel_linker.runtime] @misc = \"spacy-bioel.TorchRuntime.v1\" "
                   "(ONNX is the default runtime)" if name == "The ONNX runtime" else
                   f"Remove {name} from [components.bioel_linker]")
            raise BioELError(Errors.E212.format(what=name, fix=(
                f"{fix}, or use spacy-bioel.BiEncoder.v1.")))


def held_out_keys(spans: Sequence[Entity]) -> Dict[int, Optional[int]]:
    """Doc index -> the document key its entities' kNN search leaves out
    (`held_out_key`), computed once per document."""
    out: Dict[int, Optional[int]] = {}
    for i, ent in spans:
        if i not in out:
            out[i] = held_out_key(ent.doc)
    return out


__all__ = ["Decider", "check_contextual", "held_out_keys"]

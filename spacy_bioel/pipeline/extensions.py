"""The Span extensions a `bioel_linker` writes (their names are settings, so
two linkers can share a pipeline) and writing one decision on its entity."""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Optional

from spacy.tokens import Doc, Span

from ..kb.knowledge_base import NIL

ATTRS = ("kb_ents_attr", "is_nil_attr", "nil_score_attr", "similarity_attr", "probability_attr")
# the default extension names and scorer of a linking component's config (linker, reranker)
DEFAULT_ATTRS = {"kb_ents_attr": "kb_ents", "is_nil_attr": "is_nil", "nil_score_attr": "nil_score",
                 "similarity_attr": "kb_similarity", "probability_attr": "kb_prob",
                 "scorer": {"@scorers": "spacy-bioel.linker_scorer.v1"}}
SCORE_WEIGHTS = {"bioel_acc@1": 1.0, "bioel_acc@5": 0.0, "nel_micro_f": 0.0, "nel_micro_p": None,
                 "nel_micro_r": None}


def install_extensions(cfg: Dict[str, Any]) -> None:
    """Span extensions named by the cfg, installed once each, default None. Each
    value belongs to one span: it is kept in `doc.user_data` under the span's
    offsets and label (spaCy's own extensions key by offsets only, so two spans of
    a span group with the same offsets and different labels would share one
    value). The candidate list reads back as [(id, score), ...] tuples also after
    a Doc went through msgpack (`nlp.pipe(n_process=2)`, DocBin), which turns
    tuples into lists."""
    for attr in ATTRS + ("xrefs_attr",):
        name = cfg.get(attr)
        if not name or Span.has_extension(name):
            continue
        read = _pairs_getter(name) if attr == "kb_ents_attr" else _getter(name)
        Span.set_extension(name, getter=read, setter=_setter(name))


def write_entity(ent: Span, result: Dict[str, Any], cfg: Dict[str, Any]) -> None:
    """Write one decision on its entity: kb_id_ (or 'NIL'; the id in the cfg's
    `id_space` where the decision carries one, `xrefs.with_xrefs`) and the
    extensions the cfg names (candidates, NIL flag and score, similarity,
    probability, and the cross-references where the cfg names an extension)."""
    if result["is_nil"]:
        ent.kb_id_ = NIL
    elif "space_id" in result:
        ent.kb_id_ = result["space_id"] or NIL
    else:
        ent.kb_id_ = result["candidates"][0][0]
    if cfg.get("xrefs_attr"):
        ent._.set(cfg["xrefs_attr"], list(result.get("xrefs", ())))
    for attr, key in (("kb_ents_attr", "candidates"), ("is_nil_attr", "is_nil"),
                      ("nil_score_attr", "nil_score"), ("similarity_attr", "similarity"),
                      ("probability_attr", "probability")):
        ent._.set(cfg[attr], result[key])


def write_decisions(spans: List[Span], decisions: List[Dict[str, Any]], cfg: Dict[str, Any],
                    counts: Counter) -> None:
    """Write each decision on its span (`write_entity`), counting the mentions
    decided without the encoder by reason; E162 when the two lists differ."""
    from ..errors import BioELError, Errors

    if len(spans) != len(decisions):
        raise BioELError(Errors.E162.format(n_ents=len(spans), n_pred=len(decisions)))
    for span, result in zip(spans, decisions):
        if "reason" in result:
            counts[result["reason"]] += 1
        write_entity(span, result, cfg)


def write_docs(docs: Iterable[Doc], predictions: List[List[Dict[str, Any]]], cfg: Dict[str, Any],
               counts: Counter, kb=None) -> None:
    """Write each doc's decisions on the mentions the cfg's `spans_key` names
    (`write_decisions`), then those spans back on the doc; with the `kb`, each
    linked concept's cross-references and its id in the cfg's `id_space` too
    (`xrefs.with_xrefs`)."""
    from .mentions import mention_spans, write_spans

    if kb is not None:
        from .xrefs import with_xrefs

        predictions = with_xrefs(predictions, kb, cfg.get("id_space"), counts)

    key = cfg["spans_key"]
    for doc, decisions in zip(docs, predictions):
        spans = mention_spans(doc, key)
        write_decisions(spans, decisions, cfg, counts)
        write_spans(doc, key, spans)


def _key(name: str, span: Span) -> tuple:
    return ("._.", name, span.start_char, span.end_char, span.label)


def _getter(name: str) -> Callable[[Span], Any]:
    def get(span: Span) -> Any:
        return span.doc.user_data.get(_key(name, span))
    return get


def _pairs_getter(name: str) -> Callable[[Span], Optional[list]]:
    def get(span: Span) -> Optional[list]:
        value = span.doc.user_data.get(_key(name, span))
        return None if value is None else [tuple(pair) for pair in value]
    return get


def _setter(name: str) -> Callable[[Span, Any], None]:
    def set_(span: Span, value: Any) -> None:
        span.doc.user_data[_key(name, span)] = value
    return set_


__all__ = ["ATTRS", "DEFAULT_ATTRS", "SCORE_WEIGHTS", "install_extensions", "write_entity",
           "write_decisions", "write_docs"]

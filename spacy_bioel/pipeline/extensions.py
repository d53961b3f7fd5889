"""The Span extensions a `bioel_linker` writes (their names are settings, so
two linkers can share a pipeline), installed with reading and writing per span
(`decisions.Decision.annotate` writes them)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from spacy.tokens import Span

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


__all__ = ["ATTRS", "DEFAULT_ATTRS", "SCORE_WEIGHTS", "install_extensions"]

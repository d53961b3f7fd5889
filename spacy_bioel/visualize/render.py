"""displaCy pages of linked entities: each mention linked to its concept's page
(`urls.concept_url`), NIL mentions grey and unlinked, a tooltip with the top
candidates and their scores on every mention, and a side table per document
with the concept names, calibrated probability, NIL score and candidates."""
from __future__ import annotations

import html
from typing import Any, Dict, List, Mapping, Optional, Sequence

from spacy.tokens import Doc

from ..pipeline.extensions import ATTRS, DEFAULT_ATTRS
from ..pipeline.mentions import mention_spans
from .urls import concept_url

NIL_LABEL = "NIL"
NIL_COLOR = "repeating-linear-gradient(45deg, #e0e0e0, #e0e0e0 6px, #f4f4f4 6px, #f4f4f4 12px)"
PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em; }}
table.bioel {{ border-collapse: collapse; margin: 1em 0 2.5em; font-size: 0.9em; }}
table.bioel td, table.bioel th {{ border: 1px solid #ddd; padding: 4px 8px; vertical-align: top; }}
table.bioel tr.nil td {{ color: #777; }}
mark.entity[data-nil="true"] {{ outline: 1px dashed #999; }}
</style></head><body>
<h1>{title}</h1>
{body}
</body></html>"""


def link_records_of(doc: Doc, kb=None, attrs: Optional[Mapping[str, str]] = None, top: int = 5,
                    templates: Optional[Mapping[str, str]] = None) -> List[Dict[str, Any]]:
    """One record per entity of a linked Doc: text, offsets, label, the linked id
    (or NIL), its URL and name, probability, similarity, NIL flag and score, and
    the top candidates with names, scores and URLs. `attrs`: the linker's
    extension names and `spans_key` (its `cfg`; default the component's defaults:
    `doc.ents`)."""
    names = {**{k: v for k, v in DEFAULT_ATTRS.items() if k.endswith("_attr")},
             **{k: attrs[k] for k in ATTRS if attrs and k in attrs}}
    spans_key = attrs["spans_key"] if attrs and "spans_key" in attrs else None

    def get(ent, key):
        name = names[key]
        return ent._.get(name) if ent.has_extension(name) else None

    def name_of(cid: str) -> Optional[str]:
        concept = kb.get(cid) if kb is not None else None
        return concept.canonical_name if concept is not None else None

    records = []
    for ent in mention_spans(doc, spans_key):
        candidates = get(ent, "kb_ents_attr") or []
        is_nil = bool(get(ent, "is_nil_attr")) or ent.kb_id_ in ("", NIL_LABEL)
        kb_id = NIL_LABEL if is_nil else ent.kb_id_
        records.append({
            "text": ent.text, "start_char": ent.start_char, "end_char": ent.end_char,
            "label": ent.label_, "kb_id": kb_id, "url": concept_url(kb_id, templates),
            "name": None if is_nil else name_of(kb_id), "is_nil": is_nil,
            "probability": get(ent, "probability_attr"), "similarity": get(ent, "similarity_attr"),
            "nil_score": get(ent, "nil_score_attr"),
            "candidates": [{"id": cid, "name": name_of(cid), "score": float(score),
                            "url": concept_url(cid, templates)} for cid, score in candidates[:top]],
        })
    return records


def _fmt(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


def _tooltip(record: Dict[str, Any]) -> str:
    head = (f"NIL (best candidate below); NIL score {_fmt(record['nil_score'])}"
            if record["is_nil"] else
            f"{record['kb_id']} {record['name'] or ''}; prob {_fmt(record['probability'])}")
    lines = [head] + [f"{i}. {c['id']} {c['name'] or ''} ({c['score']:.2f})"
                      for i, c in enumerate(record["candidates"], 1)]
    return html.escape("\n".join(lines), quote=True)


def _ent_html(doc: Doc, records: Sequence[Dict[str, Any]], colors: Mapping[str, str]) -> str:
    """displaCy's entity markup in manual mode (kb_id / kb_url per entity), with a
    tooltip and data attributes added to each <mark> in document order."""
    from spacy import displacy

    ents = []
    records = _without_overlaps(records)
    for record in records:
        # displaCy writes label, kb_id and kb_url into the markup as they are: escape them
        ent = {"start": record["start_char"], "end": record["end_char"],
               "label": NIL_LABEL if record["is_nil"] else html.escape(record["label"])}
        if not record["is_nil"]:
            ent["kb_id"] = html.escape(record["kb_id"])
            ent["kb_url"] = html.escape(safe_url(record["url"]), quote=True)
        ents.append(ent)
    markup = displacy.render({"text": doc.text, "ents": ents, "title": None}, style="ent",
                             manual=True, page=False, jupyter=False,
                             options={"colors": {NIL_LABEL: NIL_COLOR, **colors}})
    parts = markup.split("<mark")
    out = [parts[0]]
    for record, part in zip(records, parts[1:]):
        out.append(f'<mark title="{_tooltip(record)}" data-kb-id="{html.escape(record["kb_id"])}"'
                   f' data-nil="{str(record["is_nil"]).lower()}"' + part)
    out += parts[len(records) + 1:]
    return "".join(out)


def _without_overlaps(records: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The records displaCy's entity view can mark: a span group may hold overlapping
    mentions, of which the view marks the first (longest at a start); the table lists all."""
    kept: List[Dict[str, Any]] = []
    for record in sorted(records, key=lambda r: (r["start_char"], -r["end_char"])):
        if not kept or record["start_char"] >= kept[-1]["end_char"]:
            kept.append(record)
    return kept


def safe_url(url: Optional[str]) -> str:
    """`url` when it is an http(s) address, else '#': a template or id cannot make
    a link run script (javascript:, data:)."""
    return url if url and url.lower().startswith(("http://", "https://")) else "#"


def _link(cid: str, url: Optional[str]) -> str:
    text = html.escape(cid)
    return (f'<a href="{html.escape(safe_url(url), quote=True)}" target="_blank">{text}</a>'
            if url else text)


def _table(records: Sequence[Dict[str, Any]]) -> str:
    rows = ["<table class=\"bioel\"><tr><th>#</th><th>mention</th><th>label</th><th>concept</th>"
            "<th>name</th><th>prob</th><th>sim</th><th>NIL score</th><th>candidates (score)</th></tr>"]
    for i, r in enumerate(records, 1):
        candidates = "<br>".join(f"{_link(c['id'], c['url'])} {html.escape(c['name'] or '')} "
                                 f"({c['score']:.2f})" for c in r["candidates"])
        rows.append(
            f"<tr class=\"{'nil' if r['is_nil'] else 'linked'}\"><td>{i}</td>"
            f"<td>{html.escape(r['text'])}</td><td>{html.escape(r['label'])}</td>"
            f"<td>{'NIL' if r['is_nil'] else _link(r['kb_id'], r['url'])}</td>"
            f"<td>{html.escape(r['name'] or '')}</td><td>{_fmt(r['probability'])}</td>"
            f"<td>{_fmt(r['similarity'])}</td><td>{_fmt(r['nil_score'])}</td>"
            f"<td>{candidates}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def render_doc(doc: Doc, kb=None, attrs: Optional[Mapping[str, str]] = None, top: int = 5,
               templates: Optional[Mapping[str, str]] = None,
               colors: Optional[Mapping[str, str]] = None) -> str:
    """HTML of one linked Doc: the displaCy entity view and its side table."""
    records = link_records_of(doc, kb, attrs, top, templates)
    return _ent_html(doc, records, colors or {}) + "\n" + _table(records)


def render_html(docs: Sequence[Doc], kb=None, attrs: Optional[Mapping[str, str]] = None,
                top: int = 5, templates: Optional[Mapping[str, str]] = None,
                title: str = "spacy-bioel links") -> str:
    """A standalone HTML page of linked Docs (render_doc each)."""
    body = "\n<hr>\n".join(render_doc(doc, kb, attrs, top, templates) for doc in docs)
    return PAGE.format(title=html.escape(title), body=body)


__all__ = ["link_records_of", "render_doc", "render_html", "NIL_LABEL"]

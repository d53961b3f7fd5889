"""The BioSyn evaluation protocol (Sung et al. 2020, the anchors' numbers), next
to ours, for issue 46's comparable rows.

BioSyn's test queries are pre-processed; what is done here, and how it differs:
- abbreviations: a mention that is a short form defined in its document is
  replaced by its long form (BioSyn: Ab3P; here: Schwartz & Hearst, the
  detector the linker uses);
- composite mentions (gold 'A|B' or 'A+B'): the text is split into as many
  parts as gold ids at 'and', 'or', 'and/or', ',' and '/', a head the last
  part carries after its first word lent to the shorter parts before it
  ("breast and ovarian cancer" -> "breast cancer", "ovarian cancer"); a text
  that does not split into that many parts is queried whole for each part
  (counted: `unsplit_composites`);
- each query lower-cased, punctuation turned into spaces;
- every query kept (BioSyn's `eval.py` drops duplicate (text, gold ids)
  queries only with `--filter_duplicate`, which its published commands do
  not pass); the duplicates are counted, and `dedupe` drops them;
- each query linked alone: no document context (BioSyn's encoder sees none);
- a part is right at k when one of its top k concepts is one of the gold ids;
  a query is right only when every part is right.
Our protocol (`evaluate`): every gold mention in its document, raw text, the
linker's own abbreviation handling, a composite right when any of its ids is
the top candidate.
"""
from __future__ import annotations

import re
from typing import Dict, List, Sequence, Tuple

from spacy.tokens import Doc, Span

CONJUNCTION = re.compile(r"\s*(?:\band/or\b|\band\b|\bor\b|,|/)\s*", re.IGNORECASE)
PUNCTUATION = re.compile(r"[^\w\s]|_")


def preprocess(text: str) -> str:
    """Lower case, punctuation to spaces, whitespace collapsed."""
    return " ".join(PUNCTUATION.sub(" ", text.lower()).split())


def split_composite(text: str, n_parts: int) -> List[str]:
    """The parts of a composite mention, or [] when it does not split into
    `n_parts` (see the module docstring)."""
    parts = [p for p in CONJUNCTION.split(text) if p.strip()]
    if len(parts) != n_parts:
        return []
    last = parts[-1].split()
    head = last[1:]  # "ovarian cancer" lends "cancer"
    out = []
    for part in parts[:-1]:
        words = part.split()
        out.append(" ".join(words + head) if head and len(words) < len(last) else part)
    return out + [parts[-1]]


def queries(docs: Sequence[Doc], abbreviations, dedupe: bool = False
            ) -> Tuple[List[Dict[str, object]], Dict[str, int]]:
    """BioSyn's test queries of `docs`: per gold mention (per distinct (text,
    gold ids) with `dedupe`), its parts and gold ids. `abbreviations(text)` maps
    a document's short forms to long forms.
    RETURNS: (queries, counts of what was done)."""
    from spacy_bioel.kb.ids import parse_gold_ids

    seen, out = set(), []
    counts = {"mentions": 0, "expanded": 0, "composites": 0, "unsplit_composites": 0, "duplicates": 0}
    for doc in docs:
        forms = None
        for ent in doc.ents:
            ids, _ = parse_gold_ids(ent.kb_id_)
            if not ids:
                continue  # NIL gold: not a BioSyn query
            counts["mentions"] += 1
            if forms is None:
                forms = abbreviations(doc.text)
            text = ent.text
            if text in forms:
                text, counts["expanded"] = forms[text], counts["expanded"] + 1
            parts = [text]
            if len(ids) > 1:
                counts["composites"] += 1
                parts = split_composite(text, len(ids))
                if not parts:
                    counts["unsplit_composites"] += 1
                    parts = [text] * len(ids)
            parts = [preprocess(p) for p in parts]
            key = ("|".join(parts), "|".join(sorted(ids)))
            if key in seen:
                counts["duplicates"] += 1
                if dedupe:
                    continue
            seen.add(key)
            out.append({"parts": parts, "gold": list(ids)})
    return out, counts


def link_queries(nlp, texts: Sequence[str], label: str = "Disease", batch_size: int = 256
                 ) -> Dict[str, List[str]]:
    """Each distinct text linked alone (a doc of its words, one entity over all
    of them): its ranked concept ids."""
    from spacy_bioel.pipeline.loading import find_linker

    linker = find_linker(nlp)
    attr = linker.cfg["kb_ents_attr"]
    distinct = [t for t in dict.fromkeys(texts) if t]
    docs = []
    for text in distinct:
        doc = Doc(nlp.vocab, words=text.split())
        doc.ents = [Span(doc, 0, len(doc), label=label)]
        docs.append(doc)
    ranked = {}
    for text, doc in zip(distinct, linker.pipe(docs, batch_size=batch_size)):
        ranked[text] = [concept for concept, _ in (getattr(doc.ents[0]._, attr) or [])]
    return ranked


def score(items: Sequence[Dict[str, object]], ranked: Dict[str, List[str]],
          ks: Sequence[int] = (1, 5)) -> Dict[str, float]:
    """Acc@k: a query is right at k when every part has a gold id in its top k."""
    out = {}
    for k in ks:
        hits = sum(all(set(ranked.get(part, [])[:k]) & set(item["gold"]) for part in item["parts"])
                   for item in items)
        out[f"acc@{k}"] = hits / len(items) if items else 0.0
    return out


def both_protocols(nlp, docs: Sequence[Doc]) -> Dict[str, object]:
    """Ours (every gold mention in its document) and BioSyn's on the same docs."""
    from spacy_bioel.evaluation.linkers import link_records
    from spacy_bioel.evaluation.metrics import linking_metrics
    from spacy_bioel.pipeline.abbreviations import find_abbreviations

    ours = linking_metrics(link_records(nlp, docs)[0], n_bootstrap=0)
    items, counts = queries(docs, find_abbreviations)
    ranked = link_queries(nlp, [part for item in items for part in item["parts"]])
    return {"ours": {key: ours[key] for key in ("n", "acc@1", "acc@5", "kb_id_acc", "right_as_nil")},
            "biosyn": {"n": len(items), **score(items, ranked)}, "counts": counts}


__all__ = ["preprocess", "split_composite", "queries", "link_queries", "score", "both_protocols"]

"""Fill evaluation records with predictions from a candidate generator (the
baselines) or from a saved spaCy pipeline whose linker writes `Span._.kb_ents`
(ours, or scispaCy's, which uses the same attribute)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:
    from spacy.language import Language

from spacy.tokens import Doc, Span

from ..kb.ids import split_gold_ids
from ..errors import BioELError, Errors
from ..kb.knowledge_base import NIL
from ..progress import progress_bar
from .records import MentionRecord, records_from_docs

logger = logging.getLogger(__name__)
Candidates = List[Tuple[str, float]]


def training_names(docs: Iterable[Doc]) -> List[Tuple[str, str]]:
    """(concept_id, mention text) for every non-NIL gold mention: the extra
    dictionary entries of BioSyn's 'KB + train/dev mentions' protocol. A
    composite mention is added to each of its ids."""
    names = []
    for doc in docs:
        for ent in doc.ents:
            for concept_id in split_gold_ids(ent.kb_id_):
                names.append((concept_id, ent.text))
    return names


def apply_candidates(records: Sequence[MentionRecord], candidates: Sequence[Candidates]) -> None:
    """Write ranked candidates into records; no candidate means a NIL answer.

    nil_score = 1 - top score (scores in [0, 1]), 1.0 without candidates.
    """
    for record, ranked in zip(records, candidates):
        record.candidates = [cid for cid, _ in ranked]
        record.scores = [float(s) for _, s in ranked]
        record.predicted = record.candidates[0] if ranked else NIL
        record.nil_score = 1.0 - record.scores[0] if ranked else 1.0


def run_generator(generator: Callable[..., List[Candidates]], docs: Sequence[Doc],
                  k: int) -> List[MentionRecord]:
    """Link every gold mention of `docs` with a candidate generator."""
    records = records_from_docs(docs)
    candidates = generator([r.text for r in records], k=k)
    apply_candidates(records, candidates)
    return records


def _strip_links(nlp, doc: Doc) -> Doc:
    """A fresh Doc with the same tokens and gold spans, but no kb ids."""
    fresh = Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])
    fresh.user_data.update(doc.user_data)
    fresh.ents = [Span(fresh, e.start, e.end, label=e.label_) for e in doc.ents]
    return fresh


BASELINES = ("exact", "tfidf")  # the dictionary baselines `evaluate` and `link` run by name
RERANKER_PREFIX = "reranker."


def apply_overrides(nlp: "Language", overrides: Optional[dict]) -> None:
    """Set bioel_linker options (e.g. {"ranker.use_knn": False} for an ablation
    row) and, for keys starting 'reranker.', bioel_reranker options
    (e.g. {"reranker.gate": None}: every mention reranked)."""
    from ..pipeline.linker import BioELLinker
    from ..reranker.component import BioELReranker

    for _, pipe in nlp.pipeline:
        for key, value in (overrides or {}).items():
            if isinstance(pipe, BioELReranker) and key.startswith(RERANKER_PREFIX):
                pipe.set_option(key[len(RERANKER_PREFIX):], value)
            elif isinstance(pipe, BioELLinker) and not key.startswith(RERANKER_PREFIX):
                pipe.set_option(key, value)


def find_reranker(nlp: "Language"):
    """The pipeline's first bioel_reranker, or None."""
    from ..reranker.component import BioELReranker

    return next((pipe for _, pipe in nlp.pipeline if isinstance(pipe, BioELReranker)), None)


RERANKER_COUNTS = ("reranked", "gated", "no_candidates")


def reranker_shares(reranker, before: Dict[str, int]) -> Dict[str, float]:
    """The shares of entities the reranker reranked, left to the linker (gate)
    and found without candidates since its counts were `before`."""
    done = {key: reranker.counts[key] - before.get(key, 0) for key in RERANKER_COUNTS}
    total = max(sum(done.values()), 1)
    return {f"share_{key}": value / total for key, value in done.items()}


def _records(gold_docs: Sequence[Doc], linked: Iterable[Doc], kb_ents_attr: str,
             path: Union[Path, "Language"]) -> List[MentionRecord]:
    """A record per gold mention with a kb id, filled from the linked doc
    (E102 when nothing wrote `Span._.<kb_ents_attr>`)."""
    records: List[MentionRecord] = []
    wrote_any = False
    for gold_doc, doc in zip(gold_docs, linked):
        for gold, ent in zip(gold_doc.ents, doc.ents):
            if not gold.kb_id_:
                continue
            ranked = getattr(ent._, kb_ents_attr, None) if Span.has_extension(kb_ents_attr) else None
            record = MentionRecord(gold.text, gold.label_, split_gold_ids(gold.kb_id_),
                                   str(gold_doc.user_data.get("bioel_doc_id", "")))
            if ranked is not None:
                wrote_any = True
                apply_candidates([record], [list(ranked)])
            if ent.kb_id_:
                record.predicted = ent.kb_id_
            if Span.has_extension("nil_score") and ent._.nil_score is not None:
                record.nil_score = float(ent._.nil_score)
            records.append(record)
    if records and not wrote_any:
        raise BioELError(Errors.E102.format(path=path, attr=kb_ents_attr))
    return records


def link_records(nlp: "Language", docs: Sequence[Doc], kb_ents_attr: str = "kb_ents",
                 batch_size: int = 64, overrides: Optional[dict] = None,
                 path: Union[Path, "Language", None] = None
                 ) -> Tuple[List[MentionRecord], Optional[Dict[str, Any]]]:
    """`run_pipeline` on a loaded pipeline, plus, when it has a bioel_reranker,
    what the reranker saw: its top_k, the recall@top_k of the upstream
    candidates it was fed (its ceiling: the gold must be among them) and the
    shares it reranked, left to the linker or found without candidates. The
    components before the reranker run once; their output is read, then the
    reranker and what follows it continue on the same docs.
    RETURNS: (records, reranker summary or None)."""
    from ..pipeline.loading import NER_COMPONENTS

    apply_overrides(nlp, overrides)
    active = [name for name in nlp.pipe_names if name not in NER_COMPONENTS]
    inputs = [_strip_links(nlp, doc) for doc in docs]
    reranker = find_reranker(nlp)
    cut = active.index(reranker.name) if reranker is not None and reranker.name in active else None
    with nlp.select_pipes(enable=active[:cut] if cut is not None else active):
        linked = progress_bar(nlp.pipe(inputs, batch_size=batch_size), total=len(inputs),
                              desc="Linking", unit=" docs")
        if cut is None:
            return _records(docs, linked, kb_ents_attr, path or nlp), None
        linked = list(linked)
    attr = reranker.cfg["kb_ents_attr"]
    upstream = [r for r in _records(docs, linked, attr, path or nlp) if not r.is_nil]
    before = dict(reranker.counts)
    for name in active[cut:]:
        proc = nlp.get_pipe(name)
        linked = list(progress_bar(proc.pipe(linked, batch_size=batch_size) if hasattr(proc, "pipe")
                                   else map(proc, linked), total=len(linked), desc=name, unit=" docs"))
    top_k = reranker.cfg["top_k"]
    hits = sum(1 for r in upstream if (r.rank() or top_k + 1) <= top_k)
    summary = {"name": reranker.name, "top_k": top_k, "n_linkable": len(upstream),
               f"candidate_recall@{top_k}": hits / max(len(upstream), 1),
               **reranker_shares(reranker, before),
               "settings": {k: reranker.cfg[k] for k in ("gate", "linker_weight", "nil_threshold",
                                                         "nil_option")}}
    return _records(docs, linked, kb_ents_attr, path or nlp), summary


def run_pipeline(path: Union[Path, "Language"], docs: Sequence[Doc], kb_ents_attr: str = "kb_ents",
                 batch_size: int = 64, overrides: Optional[dict] = None) -> List[MentionRecord]:
    """Link gold mentions with a saved pipeline directory, or a loaded one
    (gold spans given, NER disabled; `overrides` set bioel_linker stage
    parameters, see `BioELLinker.set_option`; keys starting 'reranker.' set a
    bioel_reranker's, e.g. 'reranker.gate': None).

    The pipeline's linker must write `Span._.<kb_ents_attr>` as [(id, score), ...]
    and may set `kb_id_` ('NIL' for NIL) and `Span._.nil_score`.
    """
    from ..pipeline.loading import load_pipeline

    nlp = load_pipeline(path) if isinstance(path, (str, Path)) else path
    return link_records(nlp, docs, kb_ents_attr, batch_size, overrides, path)[0]


def link_linker(linker: str, docs: Sequence[Doc], kb, extra_names: Iterable[Tuple[str, str]] = (),
                k: int = 64, word_weight: float = 0.25, kb_ents_attr: str = "kb_ents",
                overrides: Optional[dict] = None
                ) -> Tuple[List[MentionRecord], Optional[Dict[str, Any]], float]:
    """Records of `linker` on `docs`: a baseline name ('exact', 'tfidf': a candidate
    generator over the KB's names plus `extra_names`, `k` candidates) or a saved
    pipeline directory (`link_records`, `overrides` set on its stages).
    RETURNS: (records, reranker summary or None, seconds to build a baseline's index)."""
    import time

    if linker in BASELINES:
        start = time.perf_counter()
        if linker == "tfidf":
            from ..index.sparse import TfidfCandidates
            generator = TfidfCandidates(kb, extra_names, word_weight=word_weight)
        else:
            from ..index.exact import ExactMatchCandidates
            generator = ExactMatchCandidates(kb, extra_names)
        build_seconds = time.perf_counter() - start
        return run_generator(generator, docs, k), None, build_seconds
    if Path(linker).is_dir():
        from ..pipeline.loading import load_pipeline

        records, reranking = link_records(load_pipeline(Path(linker)), docs, kb_ents_attr,
                                          overrides=overrides, path=Path(linker))
        return records, reranking, 0.0
    raise BioELError(Errors.E101.format(linker=linker, options=", ".join(BASELINES)))


__all__ = ["training_names", "apply_candidates", "run_generator", "run_pipeline", "link_records", "link_linker",
           "apply_overrides", "find_reranker", "reranker_shares", "RERANKER_PREFIX"]

"""A worker that loads a pipeline once and links batches of records: the local
engine holds one, and Ray Data builds one per actor of its pool."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..errors import BioELError, Errors
from .records import Record, place, record_mentions, write_part

logger = logging.getLogger(__name__)


class LinkWorker:
    """pipeline: a saved pipeline (path or installed package name) with a
    bioel_linker; output_dir: where part files go; top: candidates kept per
    mention; threads: torch / BLAS / ONNX Runtime threads of this worker (0: leave as is);
    strict: a mention that cannot be placed in its text is E234 instead of
    skipped and counted; id_space: write each concept id in this vocabulary of
    the KB's cross-references (the linker's `id_space`; E261 for one the KB has
    no id in; '': as the pipeline was saved)."""

    def __init__(self, pipeline: str, output_dir: str, top: int = 5, threads: int = 0,
                 batch_size: int = 64, strict: bool = False, id_space: str = "") -> None:
        from ..pipeline.loading import find_linker, load_pipeline, mention_finders, mention_targets

        self.nlp = load_pipeline(pipeline) if Path(pipeline).exists() else _load_package(pipeline)
        if threads:  # after loading: the libraries it caps are imported by then
            from ..encoders.onnx_sessions import cap_threads
            from ..encoders.threads import limit_threads

            limit_threads(threads)
            cap_threads(threads)  # ONNX Runtime's pools: the mention tower's, the int8 name scan's
        self.linker = find_linker(self.nlp)
        if id_space:
            self.linker.set_option("id_space", id_space)
        self.finds_mentions = bool(mention_finders(self.nlp, self.linker))
        before = self.nlp.pipe_names[:self.nlp.pipe_names.index(self.linker.name)]
        self.writers = [name for name in before if mention_targets(self.nlp, name)]
        self.output_dir = Path(output_dir)
        self.top = int(top)
        self.batch_size = int(batch_size)
        self.strict = bool(strict)
        logger.info("Worker %d loaded %s", os.getpid(), pipeline)

    def link(self, records: Sequence[Record]) -> List[Record]:
        """Linked output records, in input order; each keeps the input mentions
        it could not place ("skipped", with the reason; E234 when strict)."""
        docs, skipped = [], []
        given_mentions = [self._mentions(record) for record in records]
        for record, mentions in zip(records, given_mentions):
            doc, missed = self._doc(record, mentions)
            docs.append(doc)
            skipped.append(missed)
        # given mentions are linked as given: the components that find mentions do not run on
        # them (an NER would add its own); documents the NER cannot read stay out of nlp.pipe
        given = [i for i, (m, d) in enumerate(zip(given_mentions, docs)) if d is not None and m is not None]
        found = [i for i, (m, d) in enumerate(zip(given_mentions, docs)) if d is not None and m is None]
        linked_docs: List[Any] = [None] * len(docs)
        with self.nlp.select_pipes(disable=self.writers):
            for i, doc in zip(given, self.nlp.pipe([docs[i] for i in given], batch_size=self.batch_size)):
                linked_docs[i] = doc
        for i, doc in zip(found, self.nlp.pipe([docs[i] for i in found], batch_size=self.batch_size)):
            linked_docs[i] = doc
        from ..pipeline.mentions import mention_spans

        cfg = self.linker.cfg
        out = []
        for record, mentions, doc, missed in zip(records, given_mentions, linked_docs, skipped):
            linked = {"id": record["id"], "text": record["text"], "skipped": missed,
                      "mentions_from": "ner" if mentions is None else "input"}
            if record.get("repaired"):
                linked["repaired"] = record["repaired"]
            if doc is None:  # longer than the NER reads (counted, E248 with --strict)
                linked.update(entities=[], skipped_document=self._too_long(record))
                out.append(linked)
                continue
            out.append({**linked, "entities": [
                {"start": e.start_char, "end": e.end_char, "text": e.text, "label": e.label_,
                 "kb_id": e.kb_id_, "prob": _num(e._.get(cfg["probability_attr"])),
                 "is_nil": bool(e._.get(cfg["is_nil_attr"])),
                 "nil_score": _num(e._.get(cfg["nil_score_attr"])),
                 "candidates": [[cid, round(float(s), 6)]
                                for cid, s in (e._.get(cfg["kb_ents_attr"]) or [])[:self.top]]}
                for e in mention_spans(doc, cfg["spans_key"])]})
        return out

    def _mentions(self, record: Record):
        return record_mentions(record, self.linker.cfg["spans_key"])

    def _too_long(self, record: Record) -> str:
        return (f"{len(record['text']):,} characters, more than the pipeline's nlp.max_length "
                f"({self.nlp.max_length:,}): its NER did not read it")

    def _doc(self, record: Record, mentions: Optional[List[List[Any]]]):
        """The record's Doc with its placeable `mentions` (`_mentions`) where the linker
        reads them, and the others; (None, []) for a text longer than its NER reads."""
        from ..corpora.documents import tokens_aligned_to
        from ..pipeline.mentions import set_mentions

        if mentions is None:  # the pipeline's own NER finds the mentions
            if not self.finds_mentions:
                from ..pipeline.loading import check_mention_finders
                from ..pipeline.text import preview

                check_mention_finders(self.nlp, self.linker)  # E249: its NER writes elsewhere

                raise BioELError(Errors.E198.format(text=f"{record['id']}: {preview(record['text'])}", why=(
                    "the record has no \"entities\" and the pipeline no NER before its linker; "
                    "give each record its entities, or link with a pipeline that has an NER")))
            if len(record["text"]) > self.nlp.max_length:
                if self.strict:
                    raise BioELError(Errors.E248.format(where=_where(record), length=len(
                        record["text"]), max_length=self.nlp.max_length))
                return None, []
            return self.nlp.make_doc(record["text"]), []
        key = self.linker.cfg["spans_key"]  # a span group may hold overlapping mentions
        kept, missed = place(record["text"], mentions, overlaps=key is not None)
        missed = list(record.get("unplaced") or []) + missed  # their text is not at their offsets
        if missed and self.strict:
            start, end, _, problem = missed[0]
            raise BioELError(Errors.E234.format(where=_where(record), start=start, end=end,
                                                problem=problem))
        doc = tokens_aligned_to(self.nlp, record["text"], [b for s, e, _ in kept for b in (s, e)])
        ents = []
        for start, end, label in kept:
            span = doc.char_span(start, end, label=label)
            if span is None:  # pragma: no cover - tokens_aligned_to cuts at every bound
                missed.append([start, end, label, "not on token boundaries"])
            else:
                ents.append(span)
        set_mentions(doc, ents, key)
        return doc, missed

    def link_and_write(self, records: Sequence[Record]) -> Dict[str, Any]:
        """Link `records` and write them as one part file; RETURNS its summary
        (the skipped mentions per shard as JSON, so that Ray can carry it)."""
        linked = self.link(records)
        path = write_part(self.output_dir, linked, [r["origin"] for r in records])
        by_shard: Dict[str, int] = {}
        for record, out in zip(records, linked):
            if out["skipped"]:
                shard = record["origin"][0]
                by_shard[shard] = by_shard.get(shard, 0) + len(out["skipped"])
        return {"part": path.name, "documents": len(linked),
                "mentions": sum(len(r["entities"]) for r in linked),
                "skipped_documents": sum("skipped_document" in r for r in linked),
                "spans_key": json.dumps(self.linker.cfg["spans_key"]),
                "skipped": sum(by_shard.values()), "skipped_by_shard": json.dumps(by_shard),
                "worker": os.getpid(), "peak_rss_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process' peak resident memory in MB (Linux's VmHWM; elsewhere
    `ru_maxrss`, or 0 where neither exists)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    try:
        import resource

        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    except ImportError:  # pragma: no cover - Windows
        return 0.0


def summarize(summaries: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The counts of a run from its batches' summaries (`LinkWorker.link_and_write`)."""
    by_shard: Dict[str, int] = {}
    for summary in summaries:
        for shard, count in json.loads(summary["skipped_by_shard"]).items():
            by_shard[shard] = by_shard.get(shard, 0) + int(count)
    peaks: Dict[str, float] = {}  # per worker process, its largest peak
    for summary in summaries:
        if "worker" in summary:
            worker = str(summary["worker"])
            peaks[worker] = max(peaks.get(worker, 0.0), float(summary["peak_rss_mb"]))
    return {"documents": sum(int(s["documents"]) for s in summaries),
            "mentions": sum(int(s["mentions"]) for s in summaries),
            "skipped_documents": sum(int(s.get("skipped_documents", 0)) for s in summaries),
            # the span group the linker read (verify_output reads the input as it did)
            "spans_key": json.loads(summaries[0]["spans_key"]) if summaries else None,
            "skipped_mentions": sum(by_shard.values()), "skipped_by_shard": by_shard,
            "parts": len({s["part"] for s in summaries}),
            "peak_rss_mb_per_worker": sorted(peaks.values(), reverse=True)}


def _where(record: Record) -> str:
    shard, position = record["origin"]
    return f"{shard} (document {record['id']!r} at {position})"


def _num(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(float(value), 6)


def _load_package(name: str):
    import spacy

    return spacy.load(name)


__all__ = ["LinkWorker", "summarize", "peak_rss_mb"]

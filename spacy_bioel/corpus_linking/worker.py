"""A worker that loads a pipeline once and links batches of records: the local
engine holds one, and Ray Data builds one per actor of its pool."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .records import Record, write_part

logger = logging.getLogger(__name__)


class LinkWorker:
    """pipeline: a saved pipeline (path or installed package name) with a
    bioel_linker; output_dir: where part files go; top: candidates kept per
    mention; threads: torch / BLAS threads of this worker (0: leave as is)."""

    def __init__(self, pipeline: str, output_dir: str, top: int = 5, threads: int = 0,
                 batch_size: int = 64) -> None:
        from ..pipeline.loading import find_linker, load_pipeline

        self.nlp = load_pipeline(pipeline) if Path(pipeline).exists() else _load_package(pipeline)
        if threads:  # after loading: the libraries it caps are imported by then
            from ..encoders.threads import limit_threads

            limit_threads(threads)
        self.linker = find_linker(self.nlp)
        self.output_dir = Path(output_dir)
        self.top = int(top)
        self.batch_size = int(batch_size)
        logger.info("Worker %d loaded %s", os.getpid(), pipeline)

    def link(self, records: Sequence[Record]) -> List[Record]:
        """Linked output records, in input order."""
        from ..corpora.documents import tokens_aligned_to

        docs = []
        for record in records:
            if record["ents"] is None:  # the pipeline's own NER finds the mentions
                docs.append(self.nlp.make_doc(record["text"]))
                continue
            bounds = [b for start, end, _ in record["ents"] for b in (start, end)]
            doc = tokens_aligned_to(self.nlp, record["text"], bounds)
            spans = [doc.char_span(s, e, label=label) for s, e, label in record["ents"]]
            doc.ents = [span for span in spans if span is not None]
            docs.append(doc)
        cfg = self.linker.cfg
        out = []
        for record, doc in zip(records, self.nlp.pipe(docs, batch_size=self.batch_size)):
            out.append({"id": record["id"], "text": record["text"], "entities": [
                {"start": e.start_char, "end": e.end_char, "text": e.text, "label": e.label_,
                 "kb_id": e.kb_id_, "prob": _num(e._.get(cfg["probability_attr"])),
                 "is_nil": bool(e._.get(cfg["is_nil_attr"])),
                 "nil_score": _num(e._.get(cfg["nil_score_attr"])),
                 "candidates": [[cid, round(float(s), 6)]
                                for cid, s in (e._.get(cfg["kb_ents_attr"]) or [])[:self.top]]}
                for e in doc.ents]})
        return out

    def link_and_write(self, records: Sequence[Record]) -> Dict[str, Any]:
        """Link `records` and write them as one part file; RETURNS its summary."""
        linked = self.link(records)
        path = write_part(self.output_dir, linked)
        return {"part": path.name, "documents": len(linked),
                "mentions": sum(len(r["entities"]) for r in linked)}


def _num(value: Optional[float]) -> Optional[float]:
    return None if value is None else round(float(value), 6)


def _load_package(name: str):
    import spacy

    return spacy.load(name)


__all__ = ["LinkWorker"]

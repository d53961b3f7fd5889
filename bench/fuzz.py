"""Hostile-user runs over a linker pipeline: random documents (odd characters,
very long texts with thousands of entities), `n_process=2`, and byte flips in
every saved file. Each run returns counts; `python -m bench reliability`
writes them (docs/results/reliability.md).
"""
from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from spacy_bioel.errors import BioELError
from spacy_bioel.progress import progress_bar

ODD = ["\x00", "\u200b", "\u200d", "\ufeff", "\U0001F600", "\u0301", "\u202e", "\t", "\n",
       "\u00a0", "\u2026", "-", "(", ")", "\u00b2", "\u00df", "\u0130", "\ufb01", "\u0644\u0627",
       "\u4e2d\u6587", "\\", "\"", "'", "[M]", "[/M]", "[SEP]", "<s>", "&amp;", "%s", "{0}"]
WORDS = ["colon", "cancer", "heart", "attack", "asthma", "FAP", "(FAP)", "familial",
         "adenomatous", "polyposis", "type", "2", "diabetes", "mellitus", "of", "the", "in",
         "BRCA1", "tumour", "Wilms", "(WT1)", "syndrome", "disease"]
Snapshot = List[List[Tuple[Any, ...]]]


def random_doc(nlp: Language, rng: random.Random, n_tokens: int, ent_rate: float) -> Doc:
    """A document of `n_tokens` words and odd characters, a share `ent_rate` of
    its tokens starting a (non-overlapping, 1-3 token) entity."""
    words = []
    for _ in range(n_tokens):
        roll = rng.random()
        if roll < 0.6:
            words.append(rng.choice(WORDS))
        elif roll < 0.85:
            words.append(rng.choice(ODD))
        else:
            words.append("".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randint(1, 8))))
    doc = nlp.make_doc(" ".join(words))
    ents, position = [], 0
    while position < len(doc):
        if rng.random() < ent_rate:
            end = min(len(doc), position + rng.randint(1, 3))
            ents.append(Span(doc, position, end, label="Disease"))
            position = end
        position += 1
    doc.ents = ents
    return doc


def random_docs(nlp: Language, n: int, seed: int = 0, long_every: int = 1000,
                long_tokens: int = 20000) -> Iterator[Doc]:
    """`n` random docs: mostly short ones, and every `long_every`-th a long one
    (`long_tokens` tokens, about a quarter of them in entities)."""
    rng = random.Random(seed)
    for i in range(n):
        if long_every and i % long_every == long_every - 1:
            yield random_doc(nlp, rng, long_tokens, 0.25)
        else:
            yield random_doc(nlp, rng, rng.randint(1, 60), rng.random() * 0.5)


def snapshot(docs: Sequence[Doc], linker_names: Sequence[str] = ("kb_ents", "is_nil",
                                                                   "nil_score")) -> Snapshot:
    """Everything the linker wrote, per doc and entity (for equality checks)."""
    return [[(e.start_char, e.end_char, e.kb_id_) + tuple(getattr(e._, a) for a in linker_names)
             for e in doc.ents] for doc in docs]


def fuzz_documents(nlp: Language, n_docs: int, seed: int = 0, batch_size: int = 64,
                   kb_ids: Sequence[str] = (), n_process_docs: int = 200) -> Dict[str, Any]:
    """Link `n_docs` random docs. Counts: docs, entities, crashes, dropped or
    changed entities, links to ids outside the KB, docs whose repeat (same
    batches) differs, docs whose linked ids or top candidates change when linked
    one at a time, and (on the first `n_process_docs`) docs whose n_process=2
    predictions differ (ids, candidate order, NIL flags; scores beyond 1e-5)."""
    known = set(kb_ids)
    counts: Dict[str, Any] = {"documents": 0, "entities": 0, "max_doc_chars": 0,
                              "max_doc_entities": 0, "crashes": 0, "dropped_entities": 0,
                              "unknown_ids": 0, "nondeterministic_docs": 0,
                              "batching_changed_links": 0,
                              "n_process_mismatches": 0, "errors": []}
    start = time.perf_counter()
    docs = list(random_docs(nlp, n_docs, seed))
    n_repeat, n_subset = min(n_docs, 8 * batch_size), min(n_docs, n_process_docs)
    pristine = [d.copy() for d in docs[:max(n_repeat, n_subset)]]  # before linking writes on them
    spans = [{(e.start_char, e.end_char) for e in d.ents} for d in docs]  # before linking
    outputs = _link_in_batches(nlp, docs, batch_size, counts)
    for doc, want, got in zip(docs, spans, outputs):
        counts["documents"] += 1
        counts["entities"] += len(want)
        counts["max_doc_chars"] = max(counts["max_doc_chars"], len(doc.text))
        counts["max_doc_entities"] = max(counts["max_doc_entities"], len(want))
        counts["dropped_entities"] += len(want) - len([g for g in got if g[:2] in want])
        counts["unknown_ids"] += sum(1 for g in got if known and g[2] != "NIL" and g[2] not in known)
    # the same docs in the same batches again (another batch composition pads differently,
    # which moves scores in the 7th decimal: that is float arithmetic, not state)
    again = _link_in_batches(nlp, [d.copy() for d in pristine[:n_repeat]], batch_size, counts)
    counts["nondeterministic_docs"] = sum(a != b for a, b in zip(again, outputs))
    alone = _link_in_batches(nlp, [d.copy() for d in pristine[:n_repeat]], 1, counts)
    counts["batching_changed_links"] = sum(_links(a) != _links(b) for a, b in zip(alone, outputs))
    single = snapshot(list(nlp.pipe([d.copy() for d in pristine[:n_subset]], batch_size=16)))
    multi = snapshot(list(nlp.pipe([d.copy() for d in pristine[:n_subset]], batch_size=16,
                                   n_process=2)))
    # one call links with one mention cache across its batches, a worker with its own:
    # an entity decided in another batch carries that batch's float rounding (~1e-7)
    counts["n_process_mismatches"] = sum(not _same_predictions(a, b) for a, b in zip(single, multi)) \
        + abs(len(single) - len(multi))
    counts["n_process_max_score_difference"] = max(
        [abs(x - y) for a, b in zip(single, multi) for ea, eb in zip(a, b)
         for (_, x), (_, y) in zip(ea[3] or [], eb[3] or [])], default=0.0)
    counts["seconds"] = round(time.perf_counter() - start, 1)
    return counts


def _same_predictions(a: List[Tuple[Any, ...]], b: List[Tuple[Any, ...]],
                      tolerance: float = 1e-5) -> bool:
    """The same spans, linked ids, candidate ids in the same order and NIL flags,
    with scores equal to float rounding (see `snapshot` for the tuple)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x[:3] != y[:3] or x[4] != y[4] or [c for c, _ in x[3] or []] != [c for c, _ in y[3] or []]:
            return False
        scores = [abs(p - q) for (_, p), (_, q) in zip(x[3] or [], y[3] or [])]
        if any(d > tolerance for d in scores) or abs((x[5] or 0) - (y[5] or 0)) > tolerance:
            return False
    return True


def _links(doc_output: List[Tuple[Any, ...]]) -> List[Tuple[Any, Any]]:
    """The linked id and the top candidate id of each entity."""
    return [(e[2], e[3][0][0] if e[3] else None) for e in doc_output]


def _link_in_batches(nlp: Language, docs: Sequence[Doc], batch_size: int,
                     counts: Dict[str, Any]) -> Snapshot:
    """Link `docs` batch by batch; a batch that raises is counted as a crash."""
    outputs: Snapshot = []
    for first in progress_bar(range(0, len(docs), batch_size), desc="fuzz documents", unit=" batches"):
        batch = docs[first:first + batch_size]
        try:
            outputs.extend(snapshot(list(nlp.pipe(batch, batch_size=batch_size))))
        except Exception as err:  # noqa: BLE001 - counted, the point of the run
            counts["crashes"] += 1
            counts["errors"].append(f"{type(err).__name__}: {str(err)[:200]}")
            outputs.extend([[] for _ in batch])
    return outputs


def flip_saved_files(nlp: Language, probe: Sequence[Doc], flips_per_file: int = 5,
                     seed: int = 0) -> Dict[str, Any]:
    """Save the pipeline, then for every file of its linker flip one random bit
    (`flips_per_file` times, each on a fresh copy), load and link `probe`.
    Outcomes per flip: a coded error, the same links, different links (silent),
    or a crash."""
    import spacy

    rng = random.Random(seed)
    counts: Dict[str, Any] = {"flips": 0, "coded_error": 0, "same_links": 0, "silent_change": 0,
                              "crash": 0, "by_file": {}}
    with tempfile.TemporaryDirectory() as tmp:
        clean = Path(tmp) / "clean"
        nlp.to_disk(clean)
        want = snapshot(list(spacy.load(clean).pipe([d.copy() for d in probe])))
        linker_dirs = [p for p in clean.iterdir() if p.is_dir() and (p / "cfg").exists()]
        files = sorted(f for d in linker_dirs for f in d.rglob("*") if f.is_file() and f.stat().st_size)
        for file in progress_bar(files, desc="flip saved files", unit=" files"):
            name = file.relative_to(clean).as_posix()
            for _ in range(flips_per_file):
                work = Path(tmp) / "work"
                shutil.rmtree(work, ignore_errors=True)
                shutil.copytree(clean, work)
                target = work / file.relative_to(clean)
                data = bytearray(target.read_bytes())
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
                target.write_bytes(bytes(data))
                try:
                    got = snapshot(list(spacy.load(work).pipe([d.copy() for d in probe])))
                    outcome = "same_links" if got == want else "silent_change"
                except BioELError:
                    outcome = "coded_error"
                except Exception:  # noqa: BLE001 - counted
                    outcome = "crash"
                counts["flips"] += 1
                counts[outcome] += 1
                counts["by_file"].setdefault(name, {}).setdefault(outcome, 0)
                counts["by_file"][name][outcome] += 1
    return counts


__all__ = ["random_doc", "random_docs", "snapshot", "fuzz_documents", "flip_saved_files"]

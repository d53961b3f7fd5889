"""Across corpora (issue 46, item 3): each trained linker links the test set of
the other corpus against one KB (CTD 2017 for both), beside the untrained
encoder on the same KB.

A trained pipeline is restaged on the KB in memory: its KB replaced, every name
of the new KB encoded by its own concept tower (through the embedding cache
when the tower is the frozen base model, shared with the untrained encoder),
its kNN datastore kept (its training mentions resolved against the new KB).
Nothing is saved. Acc@1 and kb_id_ accuracy as `evaluate` counts them.

Ablations (`ABLATIONS`) say which part of a trained linker carries its corpus'
annotation habits to the other corpus: each adds a row per trained linker with
that part switched off in memory ('knn': the datastore of training mentions;
'defer': the shortcut's deference to training mentions, so every unique KB name
is linked by the shortcut; 'nil': the NIL stage, so kb_id_ is the top candidate;
'memory': the shortcut's training-mention memory, `ExactShortcut.v2`).
`retune` adds a row per trained linker and test set with a dev set given: the
linker tuned on that corpus' dev data first (`tune`: the kNN interpolation,
lambda 0 switching the datastore off, the shortcut's deference to the training
mentions, and the NIL stage), as README advises a user who links another corpus.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

logger = logging.getLogger(__name__)
UNTRAINED = "untrained"
ABLATIONS = ("knn", "defer", "nil", "memory")


def ablate(nlp, part: str) -> Callable[[], None]:
    """Switch `part` (one of `ABLATIONS`) of `nlp`'s linker off, in memory.
    RETURNS: a function that switches it back on. The linker's cache is
    cleared both ways (decisions kept across calls were made with the other setting)."""
    from spacy_bioel.pipeline.loading import find_linker

    linker = find_linker(nlp)
    if part == "knn":
        use_knn = linker.ranker.use_knn
        linker.ranker.set_params(use_knn=False)
        restore = lambda: linker.ranker.set_params(use_knn=use_knn)
    elif part in ("defer", "memory"):  # a shortcut parameter
        shortcut = linker.shortcut
        param, off = ("defer_to_training", False) if part == "defer" else ("min_training_count", 0)
        if shortcut is None:
            restore = lambda: None
        else:
            before = shortcut.get_params()[param]
            shortcut.set_params(**{param: off})
            restore = lambda: shortcut.set_params(**{param: before})
    elif part == "nil":
        threshold = linker.nil.threshold
        linker.nil.set_params(threshold=None)  # NIL only without candidates
        restore = lambda: linker.nil.set_params(threshold=threshold)
    else:
        raise ValueError(f"unknown ablation {part!r}: one of {', '.join(ABLATIONS)}")
    linker.model_changed()

    def undo() -> None:
        restore()
        linker.model_changed()
    return undo


def restage(nlp, kb, cache: Optional[Path]):
    """`nlp`'s linker on `kb`: names encoded by its concept tower (cached), datastore kept."""
    from spacy_bioel.pipeline.loading import find_linker

    linker = find_linker(nlp)
    if cache is not None:
        linker.index.embedding_cache = str(cache)
    linker.set_kb(kb)
    linker.refresh(force=True)
    return nlp


def retuned(nlp, dev_docs) -> Callable[[], None]:
    """Tune `nlp`'s linker on `dev_docs` in memory (`tune_linker`). RETURNS: a
    function that puts its ranker and NIL stage back as they were."""
    from spacy_bioel.pipeline.loading import find_linker
    from spacy_bioel.pipeline.tuning import tune_linker

    linker = find_linker(nlp)
    ranker, nil = linker.ranker.get_params(), linker.nil.get_params()
    shortcut = linker.shortcut.get_params() if linker.shortcut is not None else None
    linker.model_changed()
    tune_linker(linker, dev_docs)

    def undo() -> None:
        linker.ranker.set_params(**ranker)
        linker.nil.set_params(**nil)
        if shortcut is not None:  # tune may have switched its deference
            linker.shortcut.set_params(**shortcut)
        linker.model_changed()
    return undo


def cross_corpus(pipelines: Dict[str, str], tests: Dict[str, Path], kb_path: Path,
                 cache: Optional[Path] = None, encoder: str = "embedded:all-MiniLM-L6-v2",
                 ablations: Sequence[str] = (), retune: Optional[Dict[str, Path]] = None
                 ) -> Dict[str, object]:
    """Per (pipeline, test set): n, Acc@1, Acc@5, kb_id_ accuracy, right links
    answered NIL. `pipelines` maps a label to a saved pipeline, or to
    'untrained' for the base encoder as `add_pipe` gives it; each of `ablations`
    adds the rows of every saved pipeline with that part off ('LABEL -knn');
    `retune` maps a test label to its corpus' dev set: the row of every saved
    pipeline tuned on it first ('LABEL tuned on TEST dev')."""
    import spacy

    from spacy_bioel.cli import read_docs
    from spacy_bioel.evaluation.linkers import link_records
    from spacy_bioel.evaluation.metrics import linking_metrics
    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from spacy_bioel.pipeline.loading import find_linker, untrained_pipeline

    for test_label in retune or {}:
        if test_label not in tests:
            raise ValueError(f"--retune {test_label}: no --test of that label")
    for part in ablations:
        if part not in ABLATIONS:
            raise ValueError(f"unknown ablation {part!r}: one of {', '.join(ABLATIONS)}")
    kb = KnowledgeBase.from_disk(kb_path)
    # read once: linking works on fresh copies, tuning only reads the gold
    test_docs = {label: read_docs([Path(path)]) for label, path in tests.items()}
    dev_docs = {label: read_docs([Path(path)]) for label, path in (retune or {}).items()}
    rows: List[Dict[str, object]] = []

    def add_row(nlp, label: str, path: str, test_label: str, **extra: object) -> None:
        records = link_records(nlp, test_docs[test_label])[0]
        metrics = linking_metrics(records, n_bootstrap=0)
        rows.append({"linker": label, "pipeline": str(path), "test": test_label, **extra,
                     **{key: metrics[key] for key in ("n", "acc@1", "acc@5", "kb_id_acc",
                                                     "right_as_nil")}})
        logger.info("%s on %s: Acc@1 %.4f", label, test_label, metrics["acc@1"])

    for label, path in pipelines.items():
        nlp = untrained_pipeline(kb, encoder, None if cache is None else str(cache)) \
            if path == UNTRAINED else restage(spacy.load(path), kb, cache)
        for test_label in tests:
            add_row(nlp, label, path, test_label)
        if path == UNTRAINED:
            continue
        # each ablation and retuning on the same restaged linker (its names encoded once), undone after
        for part in ablations:
            undo = ablate(nlp, part)
            for test_label in tests:
                add_row(nlp, f"{label} -{part}", path, test_label)
            undo()
        for test_label, docs in dev_docs.items():
            undo = retuned(nlp, docs)
            ranker, shortcut = find_linker(nlp).ranker, find_linker(nlp).shortcut
            add_row(nlp, f"{label} tuned on {test_label} dev", path, test_label,
                    knn_lambda=ranker.knn_lambda if ranker.use_knn else 0.0,
                    **({"defer_to_training": shortcut.defer_to_training} if shortcut is not None else {}))
            undo()
    return {"kb": str(kb_path), "kb_name": kb.name, "rows": rows}


def markdown(result: Dict[str, object]) -> str:
    lines = [f"KB: {result['kb_name']} (`{result['kb']}`)", "",
             "| linker | test | n | Acc@1 | Acc@5 | kb_id_ acc | right as NIL |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for row in result["rows"]:
        label = row["linker"] + (f" (lambda {row['knn_lambda']:g}" + (
            "" if row.get("defer_to_training", True) else ", deference off") + ")"
            if "knn_lambda" in row else "")
        lines.append(f"| {label} | {row['test']} | {row['n']} | {100 * row['acc@1']:.2f} | "
                     f"{100 * row['acc@5']:.2f} | {100 * row['kb_id_acc']:.2f} | "
                     f"{100 * row['right_as_nil']:.2f} |")
    return "\n".join(lines) + "\n"


__all__ = ["cross_corpus", "restage", "ablate", "retuned", "markdown", "UNTRAINED", "ABLATIONS"]

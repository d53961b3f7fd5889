"""Dev's annotated mentions in the kNN datastore after tuning (issue 46): the
final fit of the anchors' protocol. BioSyn (Sung et al. 2020) and kNN-BioEL
report test after training and indexing on train + dev; our rows so far kept
only the training mentions in the datastore. `rebuild-datastore PIPELINE
TRAIN.spacy DEV.spacy` is the user's command for it.

Per tuned pipeline (its k, lambda, betas and NIL stage chosen on dev with the
training mentions in the datastore, and kept):
- dev, the check the dev rule allows: the datastore of all training documents
  against one built from a random part of them that leaves out the share dev's
  mentions would add (n_dev / (n_train + n_dev), at most half), so the step
  from part to all is the step from train to train + dev in proportion;
- test: the datastore of train (as tuned) against train + dev.
Acc@1, kb_id_ accuracy and right links answered NIL as `evaluate` counts them.
Nothing is saved.
"""
from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

logger = logging.getLogger(__name__)

KEYS = ("n", "acc@1", "acc@5", "kb_id_acc", "right_as_nil")


def _linkable(doc) -> int:
    from spacy_bioel.kb.ids import split_gold_ids

    return sum(1 for ent in doc.ents if split_gold_ids(ent.kb_id_))


def part_of(train: Sequence, share: float, seed: int) -> Tuple[List, int]:
    """The training documents left after dropping, in a seeded random order,
    whole documents until `share` of their linkable mentions is gone.
    RETURNS: (the documents kept, the mentions dropped)."""
    total = sum(_linkable(doc) for doc in train)
    order = list(range(len(train)))
    random.Random(seed).shuffle(order)
    dropped, gone = set(), 0
    for i in order:
        if gone >= share * total:
            break
        dropped.add(i)
        gone += _linkable(train[i])
    return [doc for i, doc in enumerate(train) if i not in dropped], gone


def _row(nlp, docs, datastore: int) -> Dict[str, Any]:
    from spacy_bioel.evaluation.linkers import link_records
    from spacy_bioel.evaluation.metrics import linking_metrics

    metrics = linking_metrics(link_records(nlp, docs)[0], n_bootstrap=0)
    return {"datastore": datastore, **{key: metrics[key] for key in KEYS}}


def probe(runs: Dict[str, Tuple[Path, Path, Path, Path]], seed: int = 0) -> Dict[str, Any]:
    """runs: LABEL -> (tuned pipeline, train, dev, test DocBins).
    RETURNS: per label the dev rows (part of train, all of train) and the test
    rows (train, train + dev)."""
    from spacy_bioel.cli import read_docs
    from spacy_bioel.pipeline.loading import find_linker, load_pipeline

    out: Dict[str, Any] = {}
    for label, (path, train_path, dev_path, test_path) in runs.items():
        nlp = load_pipeline(path)
        linker = find_linker(nlp, None)
        train, dev, test = (read_docs([p]) for p in (train_path, dev_path, test_path))
        n_train, n_dev = sum(map(_linkable, train)), sum(map(_linkable, dev))
        share = min(0.5, n_dev / (n_train + n_dev))
        kept, gone = part_of(train, share, seed)
        as_tuned = len(linker.datastore)
        run: Dict[str, Any] = {"pipeline": str(path), "train": str(train_path), "dev": str(dev_path),
                               "test": str(test_path), "n_train": n_train, "n_dev": n_dev,
                               "share_left_out": share, "left_out": gone}
        run["dev_all_train"] = _row(nlp, dev, as_tuned)
        run["test_train"] = _row(nlp, test, as_tuned)
        run["dev_part_train"] = _row(nlp, dev, linker.build_datastore(kept))
        run["test_train_dev"] = _row(nlp, test, linker.build_datastore(list(train) + list(dev)))
        out[label] = run
        logger.info("%s: dev %.4f -> %.4f (part -> all of train), test %.4f -> %.4f (train -> train + dev)",
                    label, run["dev_part_train"]["acc@1"], run["dev_all_train"]["acc@1"],
                    run["test_train"]["acc@1"], run["test_train_dev"]["acc@1"])
    return {"seed": seed, "runs": out}


def _pct(value) -> str:
    return "" if value is None else f"{100 * value:.2f}"


def _mean(values: List[float]) -> str:
    arr = 100 * np.asarray(values, dtype=float)
    return f"{arr.mean():+.2f} ± {arr.std(ddof=1) if len(arr) > 1 else 0.0:.2f}"


def markdown(result: Dict[str, Any]) -> str:
    lines = ["| pipeline | split | datastore | mentions | Acc@1 | kb_id_ acc | right as NIL |",
             "|---|---|---|---:|---:|---:|---:|"]
    rows = (("dev", "part of train", "dev_part_train"), ("dev", "all of train", "dev_all_train"),
            ("test", "train (as tuned)", "test_train"), ("test", "train + dev", "test_train_dev"))
    for label, run in result["runs"].items():
        for split, name, key in rows:
            row = run[key]
            lines.append(f"| {label} | {split} | {name} | {row['datastore']} | {_pct(row['acc@1'])} | "
                         f"{_pct(row['kb_id_acc'])} | {_pct(row['right_as_nil'])} |")
    runs = list(result["runs"].values())
    if runs:
        lines += ["", "Paired, mean ± std over the pipelines above (points):"]
        for metric in ("acc@1", "kb_id_acc"):
            dev = [r["dev_all_train"][metric] - r["dev_part_train"][metric] for r in runs]
            test = [r["test_train_dev"][metric] - r["test_train"][metric] for r in runs]
            lines.append(f"- {metric}: dev, all of train − part {_mean(dev)}; "
                         f"test, train + dev − train {_mean(test)}")
    return "\n".join(lines) + "\n"


__all__ = ["probe", "markdown", "part_of"]

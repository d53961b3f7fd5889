"""Tune a linker on dev exactly as it predicts: the kNN interpolation (k,
lambda, beta1, beta2 of kNN-BioEL eqs. 4-6), the hybrid generator's sparse
weight, and the NIL stage's calibration and threshold.

Everything is scored through the component's own `retrieve` (abbreviation
long forms, type filter and candidate stage included) and `decide` (the
ranker, the choice between a mention and its long form, the NIL stage): the
grid search replays `decide`'s choice of alternative for each kNN setting and
scores the ranker's top-1 with `grid_accuracy`, which equals `interpolate`'s.
The shortcut's deference to the training mentions is tried both ways when the
training mentions contradict a KB name. The tuned values are set on the
stages; save with `nlp.to_disk`.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from spacy.tokens import Doc

from ..datastore.interpolation import grid_accuracy
from ..kb.ids import split_gold_ids
from .linker import BioELLinker
from .decisions import prefers_later
from .mentions import has_alnum, mention_spans

logger = logging.getLogger(__name__)
DEFAULT_GRID = {"k": [1, 4, 8, 16, 32], "lambda": [0.0, 0.1, 0.2, 0.3, 0.5, 0.7],
                "beta1": [0.01, 0.05, 0.1, 0.2], "beta2": [0.1, 0.5, 1.0, 5.0]}


def _chosen(alternatives: List[Dict[str, Any]], use_knn: bool) -> Dict[str, Any]:
    """The alternative `decide` keeps (`prefers_later`; support: the best
    candidate cosine, and the nearest neighbour with kNN)."""
    def support(alt: Dict[str, Any]) -> float:
        near = alt["neighbours"][:1] if use_knn else []
        return max([sim for _, _, sim in alt["candidates"]] + [s for _, s in near], default=-1.0)
    best = alternatives[0]
    for alt in alternatives[1:]:
        best = alt if prefers_later(support(alt), support(best)) else best
    return best


def knn_grid(retrieved, gold: Sequence[set], grid: Dict[str, List[float]]) -> List[Dict[str, float]]:
    """Dev Acc@1 of every (k, lambda, beta1, beta2) over linkable mentions."""
    rows: List[Dict[str, float]] = []
    for use_knn, lambdas in ((False, [v for v in grid["lambda"] if v == 0]),
                             (True, [v for v in grid["lambda"] if v > 0])):
        if not lambdas:
            continue
        chosen = [_chosen(alternatives, use_knn) for alternatives in retrieved]
        rows += grid_accuracy([[(c, s) for c, s, _ in alt["candidates"]] for alt in chosen],
                              [alt["neighbours"] if use_knn else [] for alt in chosen], gold,
                              grid["k"] if use_knn else grid["k"][:1], lambdas, grid["beta1"],
                              grid["beta2"])
    return rows


def gold_mentions(linker: BioELLinker, docs: Sequence[Doc]) -> Tuple[List[Set[str]], List[int]]:
    """Per mention the linker links in `docs` (in order): its gold ids (empty:
    NIL), and the positions of the mentions the encoder reads (the others are
    NIL whatever the settings: `nil_without_alnum`)."""
    spans = [ent for doc in docs for ent in mention_spans(doc, linker.cfg["spans_key"])]
    encoded = [i for i, ent in enumerate(spans)
               if not linker.cfg["nil_without_alnum"] or has_alnum(ent.text)]
    return [set(split_gold_ids(ent.kb_id_)) for ent in spans], encoded


def _deference(linker: BioELLinker) -> Optional[bool]:
    """The shortcut's `defer_to_training`, or None where it has no say: no
    shortcut, none that defers, or no KB name the training mentions contradict
    either way (then both settings link alike)."""
    shortcut = linker.shortcut
    if shortcut is None or "defer_to_training" not in getattr(shortcut, "get_params", dict)():
        return None
    return shortcut.get_params()["defer_to_training"] if shortcut.contradicted else None


def _set_deference(linker: BioELLinker, defer: bool) -> None:
    linker.shortcut.set_params(defer_to_training=defer)
    linker.model_changed()


def tune_linker(linker: BioELLinker, docs: Sequence[Doc], grid: Optional[Dict[str, list]] = None,
                sparse_weights: Optional[Sequence[float]] = None) -> Dict[str, Any]:
    """Pick the ranker's values (and a hybrid generator's sparse weight, and
    whether the exact shortcut defers to the training mentions) for dev Acc@1,
    then fit the NIL stage on the decisions they give; set them on the stages.
    The deference is a habit of the training corpus, as the datastore is: on
    another corpus' dev, tuning may switch both off (lambda 0 and no deference).

    docs: dev docs with gold `kb_id_` on the spans the linker links (`doc.ents`
        or its `spans_key` group; never the test set).
    RETURNS (Dict[str, Any]): n, best, grid, sparse-weight rows, nil fit.
    """
    grid = {**DEFAULT_GRID, **(grid or {})}
    gold, encoded = gold_mentions(linker, docs)
    linkable = sorted({i for i, ids in enumerate(gold) if ids} & set(encoded))
    weights = list(sparse_weights or []) if hasattr(linker.candidates, "sparse_weight") else []
    configured = _deference(linker)
    trials = []
    for defer in ([configured, not configured] if configured is not None else [None]):
        if defer is not None:
            _set_deference(linker, defer)
        for weight in weights or [None]:
            if weight is not None:
                linker.candidates.set_params(sparse_weight=weight)
            retrieved = linker.retrieve(docs, knn_k=max(grid["k"]))
            rows = knn_grid([retrieved[i] for i in linkable], [gold[i] for i in linkable], grid)
            best = max(rows, key=lambda r: (r["acc@1"], -r["lambda"]))
            trials.append({"sparse_weight": weight, "defer_to_training": defer, "best": best,
                           "grid": rows, "retrieved": retrieved})
            logger.info("sparse_weight %s, defer_to_training %s: dev Acc@1 %.4f", weight, defer,
                        best["acc@1"])
    # ties keep the configured deference, then the smaller sparse weight
    trial = max(trials, key=lambda t: (t["best"]["acc@1"], t["defer_to_training"] == configured,
                                       -(t["sparse_weight"] or 0.0)))
    if trial["sparse_weight"] is not None:
        linker.candidates.set_params(sparse_weight=trial["sparse_weight"])
    if trial["defer_to_training"] is not None:
        _set_deference(linker, trial["defer_to_training"])
    best = trial["best"]
    linker.ranker.set_params(use_knn=best["lambda"] > 0, knn_k=best["k"],
                             knn_lambda=best["lambda"], beta1=best["beta1"], beta2=best["beta2"])
    decisions = linker.decide(trial["retrieved"])
    correct = [bool(decisions[i].candidates) and decisions[i].candidates[0][0] in gold[i]
               for i in encoded]
    nil = linker.nil.fit([decisions[i].support for i in encoded], correct,
                         [not gold[i] for i in encoded])
    return {"n": len(linkable), "n_mentions": len(gold),
            "n_without_alnum": len(gold) - len(encoded), "best": best, "grid": trial["grid"],
            "sparse_weights": [{"sparse_weight": t["sparse_weight"], "acc@1": t["best"]["acc@1"]}
                               for t in trials if t["sparse_weight"] is not None],
            "deference": [{"defer_to_training": t["defer_to_training"], "sparse_weight": t["sparse_weight"],
                           "acc@1": t["best"]["acc@1"]} for t in trials if t["defer_to_training"] is not None],
            "nil": nil, "stages": {"ranker": linker.ranker.get_params(),
                                   "nil": linker.nil.get_params(),
                                   **({"shortcut": linker.shortcut.get_params()} if configured is not None else {})}}


__all__ = ["tune_linker", "gold_mentions", "knn_grid", "DEFAULT_GRID"]

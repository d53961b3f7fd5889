"""One training step of the linker: sample names, encode, apply the loss (and
FGSM), and backpropagate through the bi-encoder in ONE backward pass.

Why one pass: thinc's PyTorch shim scales the output gradient, runs backward,
then unscales every parameter gradient. Two backprop calls through the same
shim (mentions, then names) unscale the first call's gradients twice, so with
mixed precision on CUDA the mention-side gradients came out divided by the
loss scale. Here a trained concept tower is encoded in the same forward as the
mentions (`segments`), and the step backpropagates once.

- Frozen concept tower: one mention forward; names come from the index
  (exact and current, as the tower never changes); FGSM names are constants.
- Trained concept tower: mention embeddings for sampling come from a
  no-gradient pass; mentions, names and FGSM names are then encoded in one
  training forward.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional

import numpy as np

from ..encoders.thinc_biencoder import concept_tower_trained
from ..index.name_index import NameIndex
from .negatives import NegativeSampler


@dataclass
class MentionBatch:
    texts: List[str]  # mention inputs (context markers included)
    gold: List[int]  # gold concept index per mention
    groups: List[int]  # document index per mention (triplet down-sampling)
    spans: Optional[Any] = None  # a contextual model's (docs, per-doc (start, end) offsets)

    def inputs(self, model) -> tuple:
        """The mention tower's input: the texts, or a contextual model's spans."""
        if self.spans is None:
            return (self.texts, "mention")
        from ..encoders.spans import span_input

        return (span_input(*self.spans, model.ops), "spans")


def train_step(model, loss_fn: Callable, batch: MentionBatch, index: NameIndex,
               sampler: NegativeSampler, fgsm: Optional[Any], rng: np.random.Generator) -> float:
    """Forward, loss and one backward pass; gradients are left for finish_update.
    `fgsm`: an adversary of the names (`research.fgsm.FGSM`: `epsilon`, `weight`,
    `perturb`, `encode_frozen`), or None.

    RETURNS (float): the loss value.
    """
    import torch
    from thinc.api import torch2xp, xp2torch

    size = len(batch.gold)
    fgsm = fgsm if fgsm is not None and fgsm.epsilon > 0 else None  # epsilon 0: off
    trained = concept_tower_trained(model)
    if trained:
        queries = model.ops.to_numpy(model.predict((batch.texts, "mention")))  # (batch, dim)
    else:
        output, backprop = model.begin_update(batch.inputs(model))
        queries = model.ops.to_numpy(output)  # (batch, dim)
        if batch.spans is not None:
            from ..encoders.spans import check_width

            check_width(model, queries)
    positives, negatives, p = sampler(queries, batch.gold, index, rng)
    rows = positives + negatives
    name_texts = [index.names.names[i] for i in rows]
    adversarial = None
    if trained:
        segments: list = [("mention", batch.texts), ("concept", name_texts)]
        if fgsm is not None:
            anchors = torch.from_numpy(queries)
            chunks, inverse = fgsm.perturb(model, anchors, name_texts, p)
            segments += [("concept", chunk) for chunk in chunks]
        output, backprop = model.begin_update((segments, "segments"))
        everything = xp2torch(output, requires_grad=True)
        m, n = everything[:size], everything[size:size + len(rows)]
        if fgsm is not None:
            adversarial = everything[size + len(rows):][inverse]
    else:
        everything = m = xp2torch(output, requires_grad=True)
        n = torch.from_numpy(index.vectors(rows)).to(m.device)
        if fgsm is not None:
            adversarial = fgsm.encode_frozen(model, m, name_texts, p)
    gold = torch.tensor(batch.gold, device=m.device)
    groups = torch.tensor(batch.groups, device=m.device)
    loss = loss_fn(m, n[:size], _hard(n, size, p), gold, groups)
    if adversarial is not None:
        loss = loss + fgsm.weight * loss_fn(m, adversarial[:size], _hard(adversarial, size, p),
                                            gold, groups)
    loss.backward()
    backprop(torch2xp(everything.grad))
    return float(loss.detach())


def _hard(names, size: int, p: int):
    """(batch, p, dim) sampled negatives, or None."""
    return names[size:].reshape(size, p, -1) if p else None


__all__ = ["train_step", "MentionBatch"]

"""One GraphPrompt training step of the linker (loss `spacy-bioel.GraphPromptLoss.v1`).

In ONE forward and ONE backward pass (see `training.step` for why one):
the batch's mentions (x_s, in the encoder's T0 prompt), the canonical names of
their gold concepts (x_v, for L_c), and freshly sampled T1 and T2 graph
templates (their [MASK] states, `BiEncoder.mask_states`). Every query is scored
against all cached name embeddings (the name index) and the loss combines the
terms of eq. 10 (`graphprompt_loss`).

References:
    Xu et al., GraphPrompt (paper 003), Secs. 4.2-5.3 and Appendix A.2.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ..encoders.common import span_of_input
from ..errors import BioELError, Errors
from ..index.name_index import NameIndex
from ..training.hooks import StepResult, Trainee, TrainingHook
from ..training.step import MentionBatch


class GraphPromptHook(TrainingHook):
    """GraphPrompt's training step for a linker whose loss uses the KB graph
    (`spacy-bioel.GraphPromptLoss.v1`): the loss's templates are built from the
    KB's relations and the linker's training mentions (never other data), again
    whenever the KB or those mentions change, then `graph_step` runs."""

    def step(self, linker: Trainee, batch: MentionBatch) -> Optional[StepResult]:
        if batch.spans is not None:
            raise BioELError(Errors.E212.format(what="GraphPrompt's templates", fix=(
                "Use spacy-bioel.BiEncoder.v1 with GraphPrompt.")))
        return graph_step(linker.model, self.prepared_loss(linker), batch, linker.index, linker.rng)

    @staticmethod
    def prepared_loss(linker: Trainee):
        """The linker's GraphPrompt loss module with templates for its current KB
        and training mentions."""
        from .graphprompt_templates import GraphTemplates

        loss = linker.loss.module
        if linker.fgsm is not None and linker.fgsm.epsilon > 0:
            raise BioELError(Errors.E192.format(
                what="FGSM", why="its perturbed names have no [MASK] token to pool",
                fix="Set [components.bioel_linker.fgsm] to null."))
        key = (id(linker.kb), id(linker.index.names), len(linker.train_mentions))
        if loss.templates is None or loss.templates_key != key:
            pairs = [(span_of_input(text), cid) for text, cid in linker.train_mentions]
            loss.prepare(GraphTemplates(linker.kb, linker.index.names.concept_ids, pairs,
                                        linker.model.attrs["tokenizer"].mask_token,
                                        loss.synonym_rate, loss.max_words), key)
        return loss


def graph_step(model, loss_fn, batch: MentionBatch, index: NameIndex,
               rng: np.random.Generator) -> Tuple[float, dict]:
    """Forward, eq. 10 and one backward pass; gradients are left for finish_update.

    RETURNS (Tuple[float, dict]): the loss value and each term's value.
    """
    import torch
    from thinc.api import torch2xp, xp2torch

    templates = loss_fn.templates
    concepts = sorted(set(batch.gold))
    names = index.names
    segments: list = [("mention", batch.texts),
                      ("concept", [names.names[int(names.offsets[c])] for c in concepts])]
    targets: List[int] = list(batch.gold) + concepts
    parts: List[int] = [0] * len(batch.gold) + [1] * len(concepts)
    for code, sampled in ((2, templates.first_order(rng, loss_fn.first_order)),
                          (3, templates.second_order(rng, loss_fn.second_order))):
        sampled = _fitting(model, sampled, loss_fn)
        if sampled:
            segments.append(("prompt", [text for text, _ in sampled]))
            for _, masked in sampled:
                targets += masked
                parts += [code] * len(masked)
    output, backprop = model.begin_update((segments, "segments"))
    queries = xp2torch(output, requires_grad=True)
    entities, owners = _entities(loss_fn, index, queries.device)
    device = queries.device
    loss, terms = loss_fn(queries, torch.tensor(targets, device=device),
                          torch.tensor(parts, device=device), entities, owners)
    loss.backward()
    loss_fn.step()
    backprop(torch2xp(queries.grad))
    return float(loss.detach()), terms


def _entities(loss_fn, index: NameIndex, device):
    """sg(x_v') of every name row and the concept owning each row, as tensors on
    `device`: built once per name-index refresh (the store is replaced then),
    not at every step."""
    import torch

    cached = loss_fn.entities
    if cached is None or cached[0] is not index.store or cached[1].device != device:
        # a copy: the vectors may be a read-only memory map (a loaded pipeline, the embedding cache)
        matrix = torch.from_numpy(np.array(index.vectors(slice(None)), dtype=np.float32)).to(device)
        cached = (index.store, matrix, torch.from_numpy(index.names.owners).to(device))
        loss_fn.entities = cached
    return cached[1], cached[2]


def _fitting(model, sampled: list, loss_fn) -> list:
    """The templates whose every [MASK] survives truncation to max_length; the
    others are counted in `loss_fn.counts['templates_truncated']`."""
    if not sampled:
        return sampled
    from ..encoders.thinc_biencoder import tokenize

    ids, _ = tokenize(model, [text for text, _ in sampled], "cpu", prompt=False)
    found = (ids == model.attrs["tokenizer"].mask_token_id).sum(dim=1).tolist()
    kept = [t for t, n in zip(sampled, found) if n == len(t[1])]
    loss_fn.counts["templates_truncated"] += len(sampled) - len(kept)
    return kept


__all__ = ["GraphPromptHook", "graph_step"]

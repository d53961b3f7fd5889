"""GraphPrompt's loss: the prompt loss over every entity, the contrastive
entity term, and the first- and second-order graph-template terms, on the
BatchNorm similarity.

References:
    Xu et al., GraphPrompt (paper 003):
    eq. 2   Q(x_v, x_s) = exp(BN(x_v^T x_s)), BN a trainable 1-d BatchNorm;
    eq. 6   L_p = - sum_(v,s) log Q(sg(x_v), x_s) / sum_(v' in V) Q(sg(x_v'), x_s);
    eq. 8   L_1 = - sum_(v_i,v_j) log P(x_vi | y_vi), y from a T1 template;
    L_2     = - sum (log P(x_vi | z_vi) + log P(x_vk | z_vk)
                     + log P(x_vj | z'_vj) + log P(x_vk | z'_vk)), z from T2;
    eq. 9   L_c = - sum_v log P(x_v | x_v);
    eq. 10  L = lambda_p L_p + lambda_c L_c + lambda_1 L_1 + lambda_2 L_2.
    P(x_v | q) is eq. 1 with Q of eq. 2 over all entities V, whose embeddings
    sg(x_v') are the linker's cached name index (refreshed each epoch and at
    spaCy's evaluation steps, as the paper caches and updates them). With
    several names per concept (a KB with synonyms), P sums the concept's rows.
    Terms are means over their queries (the paper's sums, divided by the count).

Inputs (`forward`):
    queries: (n, dim) embeddings with gradient: mentions, concept names,
        T1 and T2 [MASK] states, concatenated.
    targets: (n,) concept index of each query.
    parts: (n,) which term each query belongs to (0 p, 1 c, 2 first, 3 second).
    entities: (R, dim) name-row embeddings (no gradient); owners: (R,) concept of each row.
Output: (scalar loss, {term: value}).

Example:
    >>> loss, terms = GraphPromptLoss(lambda_1=1.0)(q, targets, parts, E, owners)
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, Tuple

import torch
from torch import nn

TERMS = ("p", "c", "1", "2")


class GraphPromptLoss(nn.Module):
    """Eq. 10 over eq. 2 similarities.

    lambda_p, lambda_c, lambda_1, lambda_2 (float): Term weights; 0 turns a
        term off (lambda_1 = lambda_2 = 0: the paper's "Prompt" model, T0 only).
    score_norm (bool): Eq. 2's BatchNorm on the scores (else scores / temperature).
    temperature (float): Divides the scores when score_norm is off.
    norm_lr (float): SGD step of the BatchNorm's scale (`step`): it shapes
        training only (eq. 1 ranks by x_v^T x_s), so it is not saved.
    first_order, second_order (int): Templates sampled per training step.
    synonym_rate (float): Chance that an unmasked template entity reads as one
        of its training synonyms.
    max_words (int): Names in a template are cut to this many words.
    """

    uses_graph = True  # the linker trains with `graphprompt_step`

    def __init__(self, lambda_p: float = 1.0, lambda_c: float = 1.0, lambda_1: float = 1.0,
                 lambda_2: float = 1.0, score_norm: bool = True, temperature: float = 0.05,
                 norm_lr: float = 0.01, first_order: int = 32, second_order: int = 16,
                 synonym_rate: float = 0.5, max_words: int = 8) -> None:
        super().__init__()
        self.weights = {"p": lambda_p, "c": lambda_c, "1": lambda_1, "2": lambda_2}
        self.temperature, self.norm_lr = temperature, norm_lr
        self.first_order = first_order if lambda_1 > 0 else 0
        self.second_order = second_order if lambda_2 > 0 else 0
        self.synonym_rate, self.max_words = synonym_rate, max_words
        # BN without its own affine part: the shift cancels in every softmax and the
        # scale is exp(log_scale) > 0, so eq. 2 ranks as eq. 1 does (a free BN scale
        # could turn negative and invert the ranking)
        self.norm = nn.BatchNorm1d(1, affine=False) if score_norm else None
        self.log_scale = nn.Parameter(torch.zeros(())) if score_norm else None
        self.templates = None  # GraphTemplates, set by `prepare`
        self.templates_key = None  # what they were built from (see `prepare`)
        self.entities = None  # (store, entity matrix, owners) of the last step (`graph_step`)
        self.counts: Counter = Counter()  # templates_truncated, ...

    def prepare(self, templates, key=None) -> None:
        """Use `templates` (a `graphprompt_templates.GraphTemplates`), built from
        `key` (any hashable naming their sources; a new key means rebuild)."""
        self.templates, self.templates_key = templates, key

    def similarity(self, scores: torch.Tensor) -> torch.Tensor:
        """log Q of eq. 2 (BatchNorm over every score of the batch) or scores / temperature."""
        if self.norm is None:
            return scores / self.temperature
        self.to(scores.device)
        normed = self.norm(scores.reshape(-1, 1)).reshape(scores.shape)
        return normed * self.log_scale.exp()

    def forward(self, queries: torch.Tensor, targets: torch.Tensor, parts: torch.Tensor,
                entities: torch.Tensor, owners: torch.Tensor
                ) -> Tuple[torch.Tensor, Dict[str, float]]:
        logits = self.similarity(queries @ entities.T)  # (n, R)
        log_p = torch.log_softmax(logits, dim=1)
        positive = owners.unsqueeze(0) == targets.unsqueeze(1)  # (n, R): the gold's name rows
        nll = -torch.logsumexp(log_p.masked_fill(~positive, float("-inf")), dim=1)  # (n,)
        total = queries.new_zeros(())
        terms: Dict[str, float] = {}
        for code, term in enumerate(TERMS):
            chosen = parts == code
            if self.weights[term] > 0 and bool(chosen.any()):
                value = nll[chosen].mean()
                total = total + self.weights[term] * value
                terms[term] = float(value.detach())
        return total, terms

    @torch.no_grad()
    def step(self) -> None:
        """One SGD step of the BatchNorm's scale (after backward); grad cleared."""
        if self.log_scale is not None and self.log_scale.grad is not None:
            self.log_scale -= self.norm_lr * self.log_scale.grad
            self.log_scale.grad = None


__all__ = ["GraphPromptLoss", "TERMS"]

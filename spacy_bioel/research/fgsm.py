"""FGSM on the concept tower's token input embeddings (the `fgsm` stage).

References:
    Wiatrak et al., Proxy-based Zero-Shot Entity Linking, eqs. 6-8:
    z+_adv = z+ - eps * sign(grad_z s(m, e+)) for each positive name and
    z-_adv = z- + eps * sign(grad_z s(m, e-)) for each negative; the loss on the
    names re-encoded from z_adv is added with weight lambda. z are the token
    input embeddings (perturbing them equals perturbing word + position +
    segment embeddings, which only add constants).

Each name's gradient depends on that name alone, so names are processed in
length-sorted chunks of `chunk` (less padding, same result). The gradient
w.r.t. z is taken with `torch.autograd.grad`, which leaves parameter
gradients untouched: the adversarial names then go through the model's one
training forward (a trained concept tower) or are encoded without a graph in
eval mode (a frozen one, like the cached clean names it is compared with).
"""
from __future__ import annotations

from typing import List, Tuple

from ..encoders.common import length_buckets
from ..encoders.thinc_biencoder import tokenize, torch_module


class FGSM:
    """epsilon (float): the step size; weight (float): lambda of eq. 8;
    chunk (int): names per length-sorted chunk."""

    def __init__(self, epsilon: float = 0.01, weight: float = 1.0, chunk: int = 32) -> None:
        self.epsilon = float(epsilon)
        self.weight = float(weight)
        self.chunk = int(chunk)

    def perturb(self, model, anchors, name_texts: List[str], p: int):
        """The perturbed token embeddings of the batch's names.

        model (Model): the bi-encoder. anchors (torch.Tensor): (batch, dim)
            mention embeddings (no gradient). name_texts: batch positives, then
            p negatives per mention. p (int): negatives per mention.
        RETURNS (Tuple[List[Tuple[Tensor, Tensor]], Tensor]): (z_adv, attention
            mask) per chunk, and the permutation that puts chunk rows back in
            input order.
        """
        import torch

        module = torch_module(model)
        device = next(module.parameters()).device
        batch = anchors.shape[0]
        mention_index = torch.arange(batch, device=device)
        owner = torch.cat([mention_index, mention_index.repeat_interleave(p)])  # mention of each name
        sign = torch.ones(len(name_texts), device=device)
        sign[:batch] = -1.0  # positives move to lower similarity, negatives to higher
        targets = anchors.detach()[owner]  # (n, dim)
        chunks: List[Tuple[object, object]] = []
        order: List[int] = []
        for indices in length_buckets(name_texts, self.chunk):
            ids, mask = tokenize(model, [name_texts[i] for i in indices], device)
            rows = torch.tensor(indices, device=device)
            z = module.concept_input_embeddings(ids).detach().requires_grad_(True)  # (c, seq, hidden)
            with torch.enable_grad():
                names = module.encode("concept", None, mask, z)  # (c, dim)
                similarity = (targets[rows] * names).sum(-1)  # (c,)
                (grad,) = torch.autograd.grad((sign[rows] * similarity).sum(), z)
            chunks.append(((z + self.epsilon * grad.sign()).detach(), mask))
            order.extend(indices)
        return chunks, torch.argsort(torch.tensor(order, device=device))

    def encode_frozen(self, model, anchors, name_texts: List[str], p: int):
        """Perturbed names through a frozen concept tower: eval mode, no graph.

        RETURNS (torch.Tensor): (len(name_texts), dim) in input order.
        """
        import torch

        tower = torch_module(model).tower("concept")
        was_training = tower.training
        tower.eval()
        try:
            chunks, inverse = self.perturb(model, anchors, name_texts, p)
            with torch.no_grad():
                encoded = [torch_module(model).encode("concept", None, mask, z) for z, mask in chunks]
        finally:
            tower.train(was_training)
        return torch.cat(encoded)[inverse]


__all__ = ["FGSM"]

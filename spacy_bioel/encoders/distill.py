"""A shallower mention tower distilled from a trained one (issue 45): the
student keeps some of the teacher's transformer layers and learns to give each
text the teacher's pooled, normalised embedding (loss 1 - cosine, AdamW). The
texts are the KB's names and the training mentions, so the student is taught
on the strings it will meet; the concept tower, the name index and the kNN
datastore are not touched (the student answers in the teacher's space).

The ONNX runtime serves the student (`OnnxRuntime.use_student`); the PyTorch
module stays the teacher, which training and a GPU use.

References:
    Sanh et al., DistilBERT, 2019 (a student initialised from every other
    layer of its teacher); Reimers & Gurevych, Making monolingual sentence
    embeddings multilingual using knowledge distillation, EMNLP 2020 (a student
    trained to the teacher's sentence embedding).

Example:
    >>> student, curve = distill_mention_tower(linker.model, texts, layers=[0, 2, 4], epochs=3)
"""
from __future__ import annotations

import copy
import logging
import random
from contextlib import contextmanager
from typing import Any, Iterator, List, Sequence, Tuple

from ..errors import BioELError, Errors

logger = logging.getLogger(__name__)
TARGET_BATCH = 256  # texts the teacher encodes per pass for the targets


def pooled(model: Any, encoder: Any, texts: Sequence[str]):
    """The embeddings of `texts` by `encoder` (a transformers model) in place of
    `model`'s mention tower: the module's own `encode` (tokenised, pooled and
    normalised as the mention tower is)."""
    import torch

    from .thinc_biencoder import tokenize, torch_module

    ids, mask = tokenize(model, list(texts), torch.device("cpu"))
    with mention_tower(model, encoder):
        return torch_module(model).encode("mention", ids, mask)


def student_of(teacher: Any, layers: Sequence[int]) -> Any:
    """A copy of `teacher` (a BERT-like transformers model) that keeps only the
    transformer layers `layers` (their indices, ascending), trainable."""
    import torch

    count = len(teacher.encoder.layer)
    if not layers or sorted(set(layers)) != list(layers) or layers[0] < 0 or layers[-1] >= count:
        raise BioELError(Errors.E175.format(
            name="layers", value=list(layers),
            expected=f"distinct ascending layer indices of the teacher's {count}"))
    student = copy.deepcopy(teacher)
    student.encoder.layer = torch.nn.ModuleList([student.encoder.layer[i] for i in layers])
    student.config.num_hidden_layers = len(layers)
    for parameter in student.parameters():
        parameter.requires_grad_(True)
    return student


def distill_mention_tower(model: Any, texts: Sequence[str], layers: Sequence[int],
                          epochs: float = 3.0, learn_rate: float = 1e-4, batch_size: int = 64,
                          seed: int = 0, progress: bool = True
                          ) -> Tuple[Any, List[Tuple[int, float]]]:
    """Distil `model`'s mention tower (a built `spacy-bioel.BiEncoder.v1`) into a
    student of `layers` on `texts`: the teacher's embeddings are computed once,
    then `epochs` passes of batches of `batch_size` texts (shuffled, `seed`).

    RETURNS: the student (eval mode) and the loss curve [(step, loss)] every 200
        steps and at the last.
    """
    import torch

    from ..progress import progress_bar
    from .thinc_biencoder import torch_module

    texts = list(texts)
    if not texts:
        raise BioELError(Errors.E175.format(name="texts", value=0, expected="at least one text"))
    torch.manual_seed(seed)
    rng = random.Random(seed)
    teacher = torch_module(model).mention_encoder
    was_training = teacher.training
    teacher.eval()
    with torch.no_grad():
        targets = torch.cat([pooled(model, teacher, texts[i:i + TARGET_BATCH])
                             for i in progress_bar(range(0, len(texts), TARGET_BATCH),
                                                   desc="Teacher embeddings", unit=" batches",
                                                   disable=not progress)])
    teacher.train(was_training)
    student = student_of(teacher, list(layers))
    optimizer = torch.optim.AdamW(student.parameters(), lr=learn_rate, weight_decay=0.01)
    per_epoch = max(1, len(texts) // batch_size)
    steps, order, curve = max(1, int(epochs * per_epoch)), list(range(len(texts))), []
    student.train()
    bar = progress_bar(total=steps, desc="Distilling", unit=" steps", disable=not progress)
    for step in range(steps):
        if step % per_epoch == 0:
            rng.shuffle(order)
        chosen = order[(step % per_epoch) * batch_size:(step % per_epoch + 1) * batch_size]
        loss = (1 - (pooled(model, student, [texts[i] for i in chosen])
                     * targets[chosen]).sum(-1)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        bar.update(1)
        if step % 200 == 0 or step == steps - 1:
            curve.append((step, round(loss.item(), 4)))
            bar.set_postfix(loss=f"{loss.item():.4f}")
    bar.close()
    student.eval()
    logger.info("Distilled layers %s of the mention tower on %d texts: loss %.4f -> %.4f",
                list(layers), len(texts), curve[0][1], curve[-1][1])
    return student, curve


@contextmanager
def mention_tower(model: Any, encoder: Any) -> Iterator[None]:
    """`encoder` in place of `model`'s mention tower meanwhile (to export it)."""
    from .thinc_biencoder import torch_module

    module = torch_module(model)
    teacher = module.mention_encoder
    module.mention_encoder = encoder
    try:
        yield
    finally:
        module.mention_encoder = teacher


__all__ = ["distill_mention_tower", "student_of", "pooled", "mention_tower"]

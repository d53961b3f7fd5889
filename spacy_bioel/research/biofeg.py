"""BioFEG's steps 2 and 3 on a `bioel_linker` (the `biofeg` training stage).

References:
    Sui et al., BioFEG (paper 001), Sec. 3.2: the retrieve phase repeats
    (1) retriever training, (2) GAN training, (3) fine-tuning the entity
    encoder. Step 1 is the linker's ordinary epoch (hard negatives after the
    first: the `negatives` stage). At the end of each of the first
    `iterations` epochs, `BioFEG.run`:
    - encodes each concept's description with a separate frozen encoder: y_d
      (Sec. 3.4; the definition where the KB has one, else a text built from
      the canonical name, synonyms and parent names);
    - takes the linker's mention-tower outputs for its training mentions as
      real features y_m; only training mentions define "seen" concepts;
    - trains the WGAN-GP of eq. 5 (`feature_gan`) on (y_m, y_d of its gold);
    - generates features for every unseen concept (no training mention) and
      fine-tunes the concept tower alone on (generated feature, unseen
      concept) pairs with hard negatives and the linker's own loss (eq. 4,
      Sec. 3.5); the mention tower is not touched;
    - re-encodes the KB's names once.
With `finetune_real_share` > 0 (not in the paper, where step 1 of the next
iteration retrains on real mentions), each fine-tuning batch also holds real
(mention feature, seen concept) pairs, which keep the seen concepts where the
retriever put them while the unseen ones move.
It also measures how realistic the generated features are: the share whose
nearest concept in the name index (or one of the 10 nearest) is the concept
they were generated for, for seen concepts the GAN trained on, for seen
concepts held out of it (`heldout_seen`: the dev measure GAN settings are
chosen on, as real mentions exist) and for unseen ones before and after
fine-tuning (`history`). `python -m bench biofeg` runs the same steps on
a trained pipeline.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence

import numpy as np
import srsly

from ..errors import BioELError, Errors, Warnings, warn
from ..training.hooks import Trainee, TrainingHook
from .feature_gan import GANSettings, generate_features, train_feature_gan

if TYPE_CHECKING:
    from ..kb.concept import Concept
    from ..kb.knowledge_base import KnowledgeBase

logger = logging.getLogger(__name__)


def description_text(concept: "Concept", kb: Optional["KnowledgeBase"], max_chars: int = 400,
                     max_synonyms: int = 5) -> str:
    """The text y_d is encoded from: 'name: definition' where the concept has a
    definition, else 'name; also: synonyms; a kind of: parent names'."""
    if concept.definition:
        return f"{concept.canonical_name}: {concept.definition}"[:max_chars]
    parts = [concept.canonical_name]
    if concept.synonyms:
        parts.append("also: " + ", ".join(concept.synonyms[:max_synonyms]))
    parents = [kb[p].canonical_name for p in concept.parents() if kb is not None and p in kb]
    if parents:
        parts.append("a kind of: " + ", ".join(parents))
    return "; ".join(parts)[:max_chars]


class BioFEG(TrainingHook):
    """The `biofeg` stage (`spacy-bioel.BioFEG.v1`): settings, the frozen
    description encoder (loaded on first use) and one record per iteration. It
    joins training as a hook (`training.hooks`): steps 2-3 at the end of each of
    the first `iterations` epochs.

    iterations (int): epochs after which steps 2-3 run (paper: 3).
    description_encoder (str): path or name of the frozen y_d encoder.
    gan (GANSettings): eq. 5's training settings (Sec. 4.2).
    features_per_concept (int): generated features per unseen concept.
    max_unseen (int): cap on the unseen concepts fine-tuned per iteration (0: all),
        drawn at random each iteration.
    finetune_epochs, finetune_learning_rate, finetune_batch_size: step 3.
    report (Optional[str]): a JSON file rewritten with `history` after each
        iteration (spacy train shows no INFO logs).
    heldout_seen (float): share of the seen concepts whose mentions the GAN
        does not train on, to measure the realism of features generated for
        concepts it never saw against real mentions (a dev measure; 0: none).
    finetune_real_share (float): share of each fine-tuning batch made of real
        (training mention feature, its concept) pairs, drawn at random (0: the
        paper's generated pairs alone).
    """

    def __init__(self, iterations: int = 3, description_encoder: str = "embedded:all-MiniLM-L6-v2",
                 gan: Optional[GANSettings] = None, features_per_concept: int = 1,
                 max_unseen: int = 0, finetune_epochs: int = 1,
                 finetune_learning_rate: float = 2e-5, finetune_batch_size: int = 64,
                 description_chars: int = 400, report: Optional[str] = None,
                 heldout_seen: float = 0.0, finetune_real_share: float = 0.0) -> None:
        self.iterations = int(iterations)
        self.description_encoder = description_encoder
        self.gan = gan or GANSettings()
        self.features_per_concept = int(features_per_concept)
        self.max_unseen = int(max_unseen)
        self.finetune_epochs = int(finetune_epochs)
        self.finetune_learning_rate = float(finetune_learning_rate)
        self.finetune_batch_size = int(finetune_batch_size)
        self.description_chars = int(description_chars)
        self.report = report
        self.heldout_seen = float(heldout_seen)
        self.finetune_real_share = float(finetune_real_share)
        self.history: List[Dict[str, float]] = []
        self._encoder = None  # (tokenizer, BiEncoder) of y_d, frozen
        self._descriptions: Dict[str, np.ndarray] = {}

    def due(self, epochs_done: int) -> bool:
        """Whether steps 2-3 run after epoch number `epochs_done` (1-based)."""
        return 1 <= epochs_done <= self.iterations

    def epoch_end(self, linker: Trainee, epoch: int, steps: int) -> None:
        """After epoch 1, W010 when spaCy evaluates dev less often than once an
        epoch (model-best could miss the loop); after each of the first
        `iterations` epochs, steps 2-3 (`run`), then the KB re-encoded once."""
        every = linker.steps.eval_frequency
        if epoch == 1 and self.iterations and every > steps:
            warn(Warnings.W010.format(name=linker.name, iterations=self.iterations,
                                      eval_frequency=every, steps=steps))
        if self.due(epoch):
            self.run(linker)

    # ------------------------------------------------------------------ y_d
    def describe(self, kb: "KnowledgeBase", concept_ids: Sequence[str]) -> np.ndarray:
        """(len(concept_ids), dim) y_d, encoded once per concept and kept."""
        missing = list(dict.fromkeys(c for c in concept_ids if c not in self._descriptions))
        if missing:
            from ..encoders.torch_biencoder import BiEncoder, encode_texts, load_transformer

            if self._encoder is None:
                tokenizer, transformer = load_transformer(self.description_encoder)
                self._encoder = (tokenizer, BiEncoder(transformer, pooling="mean"))
            tokenizer, encoder = self._encoder
            texts = [description_text(kb[cid], kb, self.description_chars) for cid in missing]
            vectors = encode_texts(encoder, tokenizer, texts, max_length=128, progress=True,
                                   desc="Encoding descriptions").numpy()
            self._descriptions.update(zip(missing, vectors))
        return np.stack([self._descriptions[cid] for cid in concept_ids])

    # ------------------------------------------------------------------ the steps
    def run(self, linker: Trainee, finetune: bool = True,
            real: Optional[tuple] = None) -> Dict[str, float]:
        """Steps 2-3 on `linker` (its name index must be current); RETURNS the
        record. `finetune=False`: step 2 and the realism of its features only.
        `real`: `real_features(linker)` when already computed."""
        record: Dict[str, float] = {"iteration": len(self.history) + 1}
        real = real or self.real_features(linker)
        gen, gan_record = self.fit_gan(linker, real)
        record.update(gan_record)
        ids = linker.index.names.concept_ids
        seen = {cid for _, cid in linker.train_mentions}
        unseen = [i for i, cid in enumerate(ids) if cid not in seen]
        record["unseen_concepts"] = len(unseen)
        if self.max_unseen and len(unseen) > self.max_unseen:
            unseen = sorted(linker.rng.choice(unseen, self.max_unseen, replace=False).tolist())
        record["unseen_finetuned"] = len(unseen) if finetune else 0
        if not unseen:
            logger.info("BioFEG: every concept has a training mention; nothing to fine-tune")
        if not unseen or not finetune:
            return self._record(record)
        record["generated_top1_unseen_before"], record["generated_top10_unseen_before"] = \
            self._realism(linker, gen, unseen)
        fake = self._generate(linker, gen, unseen)
        gold = np.repeat(np.asarray(unseen), self.features_per_concept)
        anchors = None
        if self.finetune_real_share > 0:  # training mentions' concepts come from the index
            anchors = (real[0], np.asarray([linker.concept_index[cid]
                                            for _, cid in linker.train_mentions]))
            record["finetune_real_pairs"] = len(anchors[1])
        started = time.perf_counter()
        record["finetune_loss"] = finetune_concept_tower(
            linker, fake, gold, self.finetune_epochs, self.finetune_batch_size,
            self.finetune_learning_rate, anchors=anchors, real_share=self.finetune_real_share)
        record["finetune_seconds"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        linker.index.stale = True  # the KB is re-encoded once after fine-tuning (Sec. 3.2)
        linker.refresh(datastore=False)
        record["reencode_seconds"] = round(time.perf_counter() - started, 1)
        record["generated_top1_unseen_after"], record["generated_top10_unseen_after"] = \
            self._realism(linker, gen, unseen)
        return self._record(record)

    def share_descriptions(self, other: "BioFEG") -> "BioFEG":
        """Use `other`'s y_d encoder and the descriptions it encoded (settings
        compared on one linker encode each description once); RETURNS self."""
        self._encoder, self._descriptions = other._encoder, other._descriptions
        return self

    def real_features(self, linker: Trainee) -> tuple:
        """The real mention features y_m of the linker's training mentions and,
        per mention, whether its own concept is the nearest in the name index
        (the realism scale). Valid until the mention tower or the index moves.

        RETURNS (Tuple[np.ndarray, List[bool]]).
        """
        from ..encoders.thinc_biencoder import embed_texts

        _require_trainable(linker)
        mentions = linker.train_mentions
        real = embed_texts(linker.model, [text for text, _ in mentions], "mention",
                           linker.cfg["encode_batch_size"])
        ids = linker.index.names.concept_ids
        hits = linker.index.search(real, k=1, names=False)
        return real, [bool(row) and ids[row[0][0]] == cid for row, (_, cid) in zip(hits, mentions)]

    def fit_gan(self, linker: Trainee, real: Optional[tuple] = None) -> tuple:
        """Step 2: the WGAN-GP on the linker's training mentions, less those of
        `heldout_seen` of the seen concepts (drawn with a fixed seed, so every
        setting compared on them sees the same ones), and the realism of its
        features: for seen concepts it trained on, and for the held-out ones
        (a dev measure: real mentions exist, the GAN never saw them).

        real (Optional[tuple]): `real_features(linker)`, when several settings
            are compared on one linker (None: computed here).
        RETURNS (Tuple[FeatureGenerator, Dict[str, float]]): G and its record.
        """
        import torch

        module = _require_trainable(linker)  # before the minutes of GAN training, not after
        started = time.perf_counter()
        mentions = linker.train_mentions
        seen = sorted({cid for _, cid in mentions})
        n_out = int(round(self.heldout_seen * len(seen)))
        heldout = set(np.random.default_rng(0).permutation(seen)[:n_out].tolist()) \
            if 0 < n_out < len(seen) else set()
        rows = [i for i, (_, cid) in enumerate(mentions) if cid not in heldout]
        record: Dict[str, float] = {"seen_concepts": len(seen), "heldout_concepts": len(heldout)}
        device = next(module.parameters()).device
        real, own = real or self.real_features(linker)
        conditions = self.describe(linker.kb, [cid for _, cid in mentions])
        record["describe_seconds"] = round(time.perf_counter() - started, 1)
        if self.gan.residual and conditions.shape[1] != real.shape[1]:
            raise BioELError(Errors.E197.format(description_dim=conditions.shape[1],
                                                feature_dim=real.shape[1]))
        gen, _, history = train_feature_gan(torch.from_numpy(real[rows]).to(device),
                                            torch.from_numpy(conditions[rows]).to(device),
                                            self.gan, progress=True)
        record.update({f"gan_{k}": v for k, v in history.summary().items()})
        record["real_top1_seen"] = float(np.mean(own))
        trained = [linker.concept_index[c] for c in seen if c not in heldout]
        record["generated_top1_seen"], record["generated_top10_seen"] = \
            self._realism(linker, gen, trained)
        if heldout:
            record["real_top1_heldout"] = float(np.mean(
                [hit for hit, (_, cid) in zip(own, mentions) if cid in heldout]))
            record["generated_top1_heldout"], record["generated_top10_heldout"] = \
                self._realism(linker, gen, [linker.concept_index[c] for c in sorted(heldout)])
        return gen, record

    def _record(self, record: Dict[str, float]) -> Dict[str, float]:
        self.history.append(record)
        logger.info("BioFEG iteration %d: %s", record["iteration"], record)
        if self.report:
            Path(self.report).parent.mkdir(parents=True, exist_ok=True)
            srsly.write_json(self.report, self.history)
        return record

    def _generate(self, linker: Trainee, gen, concepts: Sequence[int]) -> np.ndarray:
        """Generated features of `concepts` (index rows), L2-normalised for cosine."""
        import torch

        ids = linker.index.names.concept_ids
        device = next(gen.parameters()).device
        conditions = torch.from_numpy(self.describe(linker.kb, [ids[c] for c in concepts]))
        fake = generate_features(gen, conditions.to(device), self.features_per_concept)
        if linker.model.attrs.get("similarity", "cosine") == "cosine":
            fake = torch.nn.functional.normalize(fake, dim=1)
        return fake.float().cpu().numpy()

    def _realism(self, linker: Trainee, gen, concepts: Sequence[int]) -> tuple:
        """Shares of generated features whose own concept is their nearest, and
        among their 10 nearest, in the name index."""
        if not len(concepts):
            return float("nan"), float("nan")
        fake = self._generate(linker, gen, concepts)
        hits = linker.index.search(fake, k=10, names=False)
        gold = np.repeat(np.asarray(concepts), self.features_per_concept)
        top1 = [bool(row) and row[0][0] == g for row, g in zip(hits, gold)]
        top10 = [any(c == g for c, *_ in row) for row, g in zip(hits, gold)]
        return float(np.mean(top1)), float(np.mean(top10))


def _require_trainable(linker: Trainee):
    """E194 (shared towers), E195 (no training mentions), E192 (GraphPrompt);
    RETURNS the linker's torch module."""
    from ..encoders.thinc_biencoder import torch_module

    module = torch_module(linker.model)
    if module.shared:
        raise BioELError(Errors.E194.format(problem="the two towers share one transformer"))
    if not linker.train_mentions:
        raise BioELError(Errors.E195.format(name=linker.name))
    _require_plain_loss(linker)
    return module


def _require_plain_loss(linker: Trainee) -> None:
    if getattr(linker.loss, "uses_graph", False):
        raise BioELError(Errors.E192.format(
            what="BioFEG", why="generated features have no prompt template to fill",
            fix="Use an InfoNCE, proxy or triplet loss with [components.bioel_linker.biofeg]."))


def finetune_concept_tower(linker: Trainee, features: np.ndarray, gold: np.ndarray,
                           epochs: int, batch_size: int, learning_rate: float,
                           progress: bool = True, anchors: Optional[tuple] = None,
                           real_share: float = 0.0) -> float:
    """Fine-tune the concept tower alone on (generated feature, concept) pairs:
    the features stand in for mention embeddings, negatives come from the
    linker's `negatives` stage over the current index, the loss is the
    linker's (BioFEG eq. 4 with InfoNCE). A separate Adam over the concept
    tower's parameters, so the mention tower is never stepped. A concept
    tower frozen for the retriever's epochs (`train_concept_tower = false`,
    the CPU configs) is unfrozen for this step only.

    anchors (Optional[Tuple[np.ndarray, np.ndarray]]): real mention features
        and their concepts' index rows; `real_share` of each batch is drawn
        from them at random, the rest are generated pairs.
    progress (bool): a progress bar over the batches.
    RETURNS (float): the mean loss of the last epoch.
    """
    import torch
    from ..progress import progress_bar

    from ..encoders.thinc_biencoder import tokenize, torch_module

    _require_plain_loss(linker)
    module = torch_module(linker.model)
    tower = module.tower("concept")
    frozen = not linker.model.attrs.get("train_concept_tower", True)
    flags = [p.requires_grad for p in tower.parameters()]
    if frozen:  # frozen for the retriever's epochs (cheap on a CPU): BioFEG alone moves it
        for param in tower.parameters():
            param.requires_grad_(True)
    params = [p for p in tower.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=learning_rate)
    device = next(module.parameters()).device
    names = linker.index.names
    was_training = module.training
    module.train()
    losses: List[float] = []
    n_real = int(round(batch_size * real_share)) if anchors is not None else 0
    step = max(1, batch_size - n_real)  # generated pairs per batch
    try:
        for _ in range(max(1, epochs)):
            losses = []
            order = linker.rng.permutation(len(gold))
            for start in progress_bar(range(0, len(order), step), desc="Fine-tuning the concept "
                                      "tower", unit=" batches", disable=not progress):
                rows = order[start:start + step]
                queries, concepts = features[rows], gold[rows].tolist()
                if n_real:
                    picked = linker.rng.integers(0, len(anchors[1]), n_real)
                    queries = np.concatenate([queries, anchors[0][picked]])
                    concepts = concepts + anchors[1][picked].tolist()
                positives, negatives, p = linker.negatives(queries, concepts, linker.index,
                                                           linker.rng)
                ids, mask = tokenize(linker.model, [names.names[i] for i in positives + negatives],
                                     device)
                encoded = module.encode("concept", ids, mask)
                size = len(concepts)
                hard = encoded[size:].reshape(size, p, -1) if p else None
                m = torch.from_numpy(queries).to(device)
                loss = linker.loss(m, encoded[:size], hard, torch.tensor(concepts, device=device),
                                   torch.arange(size, device=device))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(float(loss.detach()))
    finally:
        module.train(was_training)
        for param, flag in zip(tower.parameters(), flags):
            param.grad = None
            param.requires_grad_(flag)
    linker.runtime.invalidate()
    linker.model_changed()
    return float(np.mean(losses)) if losses else float("nan")


__all__ = ["BioFEG", "description_text", "finetune_concept_tower"]

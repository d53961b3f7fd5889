"""The `bioel_linker` component: a trainable bi-encoder, a dense candidate store
over every concept name, a kNN datastore of training mentions, and NIL flags.

Staleness: the candidate index holds concept-name embeddings and the datastore
holds training-mention embeddings. After an `update` the mention tower has
changed (so the datastore is stale) and, when the concept tower is trained
(shared towers, or `train_concept_tower=True`), the index too. Both are
rebuilt lazily at defined moments: before `predict` (so every evaluation sees
fresh embeddings), before `to_disk`, and the index at the end of every epoch
of training (every time `update` has seen as many mentions as the training
set holds), which refreshes the dynamic hard negatives (kNN-BioEL Sec. 2.2).
"""

import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import srsly
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples
from spacy.util import ensure_path
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer
from tqdm import tqdm

from ..corpora.documents import split_gold_ids
from ..datastore.knn import DatastoreKNN, interpolate, model_distribution
from ..errors import BioELError, Errors
from ..index.dense import DenseCandidateStore
from ..index.names import NameTable
from ..kb.knowledge_base import NIL, KnowledgeBase
from .abbreviations import find_abbreviations

logger = logging.getLogger(__name__)
NEGATIVE_SAMPLING = ("hard", "random", "mixed")
FGSM_CHUNK = 32  # names per length-sorted chunk of the FGSM passes
Scored = List[Tuple[str, float]]

DEFAULT_MODEL = """
[model]
@architectures = "spacy-bioel.BiEncoder.v1"
encoder = "embedded:all-MiniLM-L6-v2"
pooling = "mean"
similarity = "cosine"
shared_towers = true
train_concept_tower = true
max_length = 25
mixed_precision = false
"""


def install_extensions(kb_ents_attr: str, is_nil_attr: str, nil_score_attr: str) -> None:
    """Span extensions, installed once each; default None (no shared mutable default)."""
    for attr in (kb_ents_attr, is_nil_attr, nil_score_attr):
        if not Span.has_extension(attr):
            Span.set_extension(attr, default=None)


class BioELLinker(TrainablePipe):
    """Link every `doc.ents` entry to a KB concept with a score, or flag it NIL.

    Writes `ent.kb_id_` (a concept id or 'NIL'), `ent._.<kb_ents_attr>` =
    [(concept_id, score), ...] best first (scispaCy's format; scores are the
    interpolated probabilities of kNN-BioEL eq. 6, or the model's eq. 4
    softmax when the datastore is off), `ent._.<is_nil_attr>` and
    `ent._.<nil_score_attr>` (1 - the best cosine similarity among the
    candidates and, when used, the retrieved neighbours).
    """

    def __init__(self, vocab: Vocab, model: Model, name: str = "bioel_linker", *,
                 loss: Callable, n_hard_negatives: int, negative_sampling: str = "hard",
                 hard_fraction: float = 0.5, fgsm_epsilon: float = 0.0, fgsm_weight: float = 1.0,
                 top_k: int, index_type: str,
                 index_backend: str, use_knn: bool, knn_k: int, knn_lambda: float,
                 knn_beta1: float, knn_beta2: float, nil_threshold: Optional[float],
                 context_window: int, abbreviations: bool, encode_batch_size: int,
                 embedding_cache: Optional[str] = None, kb_ents_attr: str, is_nil_attr: str,
                 nil_score_attr: str,
                 scorer: Optional[Callable]) -> None:
        self.vocab = vocab
        self.model = model
        self.name = name
        self.loss = loss
        self.scorer = scorer
        self.cfg: Dict[str, Any] = {
            "n_hard_negatives": n_hard_negatives, "negative_sampling": negative_sampling,
            "hard_fraction": hard_fraction, "fgsm_epsilon": fgsm_epsilon,
            "fgsm_weight": fgsm_weight, "top_k": top_k, "index_type": index_type,
            "index_backend": index_backend, "use_knn": use_knn, "knn_k": knn_k,
            "knn_lambda": knn_lambda, "knn_beta1": knn_beta1, "knn_beta2": knn_beta2,
            "nil_threshold": nil_threshold, "context_window": context_window,
            "abbreviations": abbreviations, "encode_batch_size": encode_batch_size,
            "embedding_cache": embedding_cache,
            "kb_ents_attr": kb_ents_attr, "is_nil_attr": is_nil_attr,
            "nil_score_attr": nil_score_attr, "epoch_seconds": [],
        }
        if negative_sampling not in NEGATIVE_SAMPLING or not 0.0 <= hard_fraction <= 1.0:
            raise BioELError(Errors.E165.format(name=name, sampling=negative_sampling,
                                                fraction=hard_fraction))
        install_extensions(kb_ents_attr, is_nil_attr, nil_score_attr)
        self._rng = np.random.default_rng()
        self.kb: Optional[KnowledgeBase] = None
        self.names: Optional[NameTable] = None
        self.store: Optional[DenseCandidateStore] = None
        self.datastore: Optional[DatastoreKNN] = None
        self.train_mentions: List[Tuple[str, str]] = []  # (mention text, gold concept id)
        self._name_embeddings: Optional[np.ndarray] = None
        self._concept_index: Dict[str, int] = {}
        self._index_stale = True
        self._datastore_stale = True
        self._seen_in_epoch = 0
        self.epochs_refreshed = 0
        self._epoch_start = 0.0
        self._epoch_end_due = False

    # ------------------------------------------------------------------ setup
    def set_kb(self, kb: KnowledgeBase) -> None:
        """Use `kb` (the index is rebuilt before the next prediction)."""
        self.kb = kb
        self.names = NameTable(kb)
        self._concept_index = {cid: i for i, cid in enumerate(self.names.concept_ids)}
        self._index_stale = True

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *,
                   nlp: Optional[Language] = None,
                   kb_loader: Optional[Callable[[], KnowledgeBase]] = None) -> None:
        """Load the KB and the encoder, encode every concept name into the
        index, and build the datastore from the training mentions.

        get_examples (Callable[[], Iterable[Example]]): Training examples (gold kb
            ids); may return none: the linker then works on the KB alone (no datastore).
        nlp (Language): The pipeline.
        kb_loader (Callable[[], KnowledgeBase]): e.g. `spacy-bioel.KBFromFile.v1`.
        """
        if not callable(get_examples):
            raise BioELError(Errors.E164.format(name=self.name, value=type(get_examples).__name__))
        if kb_loader is None and self.kb is None:
            raise BioELError(Errors.E160.format(name=self.name))
        if kb_loader is not None:
            self.set_kb(kb_loader())
        examples = list(get_examples())
        # negatives are sampled reproducibly: spaCy's [training] seed fixes numpy's global state
        self._rng = np.random.default_rng(np.random.randint(2 ** 31))
        self.model.initialize(X=([" "], "mention"))
        self.train_mentions = self._gold_mentions(examples)
        self._index_stale = self._datastore_stale = True
        self.refresh(force=True)

    def _gold_mentions(self, examples: Iterable[Example]) -> List[Tuple[str, str]]:
        """(mention input text, primary gold id) of linkable reference mentions."""
        return [(text, primary) for text, primary, _ in self._gold_mentions_by_doc(examples)]

    def _gold_mentions_by_doc(self, examples: Iterable[Example]) -> List[Tuple[str, str, int]]:
        """(mention input text, primary gold id, example index) of linkable mentions."""
        out = []
        for doc_index, eg in enumerate(examples):
            for ent in eg.reference.ents:
                primary = self._gold_primary(ent.kb_id_)
                if primary is not None:
                    out.append((self._mention_input(ent), primary, doc_index))
        return out

    def _gold_primary(self, kb_id: str) -> Optional[str]:
        for concept_id in split_gold_ids(kb_id):
            primary = self.kb.resolve(concept_id) if self.kb is not None else None
            if primary is not None and primary in self._concept_index:
                return primary
        return None

    # -------------------------------------------------------------- encoding
    def _mention_input(self, ent: Span) -> str:
        window = self.cfg["context_window"]
        if window <= 0:
            return ent.text
        doc = ent.doc
        left = doc[max(0, ent.start - window):ent.start].text
        right = doc[ent.end:ent.end + window].text
        return f"{left} [M] {ent.text} [/M] {right}".strip()

    def embed(self, texts: Sequence[str], tower: str, progress: bool = False) -> np.ndarray:
        """Embed texts in length-bucketed batches without gradients.

        RETURNS (np.ndarray): (len(texts), dim) float32.
        """
        size = self.cfg["encode_batch_size"]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.model.get_dim("nO")), dtype=np.float32)
        batches = [order[i:i + size] for i in range(0, len(order), size)]
        for indices in tqdm(batches, desc=f"Encoding {tower}s", unit=" batches",
                            disable=not progress):
            emb = self.model.predict(([texts[i] for i in indices], tower))
            out[indices] = self.model.ops.to_numpy(emb)
        return out

    def refresh(self, force: bool = False, datastore: bool = True) -> None:
        """Rebuild what is stale: the concept-name index, then (unless
        `datastore` is False) the kNN datastore."""
        if self.kb is None:
            raise BioELError(Errors.E160.format(name=self.name))
        if self._index_stale or force or self.store is None:
            logger.info("%s: encoding %d names of %d concepts", self.name, len(self.names),
                        len(self.names.concept_ids))
            self._name_embeddings = self._encode_names()
            self.store = DenseCandidateStore(self.names.concept_ids, self._name_embeddings.shape[1],
                                             index_type=self.cfg["index_type"],
                                             backend=self.cfg["index_backend"])
            self.store.add(self._name_embeddings, self.names.owners)
            self._index_stale = False
        if datastore and (self._datastore_stale or force or self.datastore is None):
            self.datastore = DatastoreKNN(self.model.get_dim("nO"))
            if self.train_mentions:
                keys = self.embed([t for t, _ in self.train_mentions], "mention")
                self.datastore.add(keys, [cid for _, cid in self.train_mentions])
            self._datastore_stale = False

    def _encode_names(self) -> np.ndarray:
        """Embed every KB name with the concept tower. A frozen concept tower
        gives the same embeddings in every run on the same KB, so with
        `embedding_cache` set they are read from (or written to) that folder,
        keyed by the names, the encoder settings and the tower's weights."""
        cache = self.cfg.get("embedding_cache")
        if not cache or self._concept_tower_trained():
            return self.embed(self.names.names, "concept", progress=True)
        path = Path(cache) / f"names-{self._name_cache_key()}.npy"
        if path.exists():
            embeddings = np.load(path)
            if embeddings.shape == (len(self.names), self.model.get_dim("nO")):
                logger.info("%s: read %d name embeddings from %s", self.name, len(embeddings), path)
                return embeddings
            logger.warning("%s: ignoring %s (shape %s)", self.name, path, embeddings.shape)
        embeddings = self.embed(self.names.names, "concept", progress=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(partial, embeddings)
        partial.replace(path)  # atomic: concurrent runs never read a half-written file
        return embeddings

    def _name_cache_key(self) -> str:
        """A digest of the names, the encoder settings and the concept tower's weights."""
        from ..encoders.thinc_biencoder import torch_module

        digest = hashlib.sha1()
        digest.update("\n".join(self.names.names).encode("utf-8"))
        attrs = self.model.attrs
        digest.update(repr([attrs.get(k) for k in ("pooling", "similarity", "max_length")]).encode())
        for name, tensor in torch_module(self.model).tower("concept").state_dict().items():
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()[:20]

    def build_datastore(self, docs: Iterable[Doc]) -> int:
        """Replace the datastore with the gold mentions of `docs` (e.g. a DocBin
        of train + dev). RETURNS (int): the number of keys."""
        self.train_mentions = self._gold_mentions(Example(d, d) for d in docs)
        self._datastore_stale = True
        self.refresh()
        return len(self.datastore)

    # ------------------------------------------------------------------ train
    def update(self, examples: Iterable[Example], *, drop: float = 0.0,
               sgd: Optional[Optimizer] = None, losses: Optional[Dict[str, float]] = None
               ) -> Dict[str, float]:
        """One step of the configured loss over the batch's linkable gold
        mentions: each mention against its gold concept's closest name, p
        sampled negative names (`negative_sampling`: dynamic hard negatives
        retrieved from the whole KB as in kNN-BioEL eq. 3, random, or mixed)
        and, per the loss, in-batch negatives. With `fgsm_epsilon` > 0 the
        loss is also applied to FGSM-perturbed names and added with weight
        `fgsm_weight` (Wiatrak et al. eqs. 6-8)."""
        import torch
        from thinc.api import torch2xp, xp2torch

        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        validate_examples(examples, "BioELLinker.update")
        examples = list(examples)
        mentions = self._gold_mentions_by_doc(examples)
        if not mentions:
            return losses
        self._ensure_name_embeddings()
        texts = [t for t, _, _ in mentions]
        gold = [self._concept_index[cid] for _, cid, _ in mentions]
        mention_emb, backprop_mentions = self.model.begin_update((texts, "mention"))
        queries = self.model.ops.to_numpy(mention_emb)  # (batch, dim)
        p = min(self.cfg["n_hard_negatives"], len(self.names.concept_ids) - 1)
        positives, negatives = self._select_names(queries, gold, p)
        m = xp2torch(mention_emb, requires_grad=True)
        name_texts = [self.names.names[i] for i in positives + negatives]
        if self._concept_tower_trained():
            name_emb, backprop_names = self.model.begin_update((name_texts, "concept"))
            n = xp2torch(name_emb, requires_grad=True)
        else:  # frozen concept tower: the indexed name embeddings are exact and current
            backprop_names = None
            n = torch.from_numpy(self._name_embeddings[positives + negatives]).to(m.device)
        batch = len(texts)
        hard = n[batch:].reshape(batch, p, -1) if p else None  # (batch, p, dim)
        gold_ids = torch.tensor(gold, device=m.device)
        groups = torch.tensor([doc for _, _, doc in mentions], device=m.device)
        loss = self.loss(m, n[:batch], hard, gold_ids, groups)
        if self.cfg["fgsm_epsilon"] > 0:
            adversarial = self._adversarial_names(m, name_texts, p)  # (batch * (1 + p), dim)
            adv_hard = adversarial[batch:].reshape(batch, p, -1) if p else None
            loss = loss + self.cfg["fgsm_weight"] * self.loss(m, adversarial[:batch], adv_hard,
                                                              gold_ids, groups)
        loss.backward()
        backprop_mentions(torch2xp(m.grad))
        if backprop_names is not None:
            backprop_names(torch2xp(n.grad))
        losses[self.name] += float(loss.detach())
        if self._seen_in_epoch == 0:
            self._epoch_start = time.perf_counter()
        self._seen_in_epoch += batch
        self._epoch_end_due = bool(self.train_mentions) and \
            self._seen_in_epoch >= len(self.train_mentions)
        if sgd not in (None, False):
            self.finish_update(sgd)
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        """Apply the optimizer, then mark the embeddings stale; at the end of an
        epoch re-encode what is stale (fresh hard negatives for the next epoch).
        spaCy's `Language.update` calls this after `update`, so the refresh sees
        the updated weights."""
        super().finish_update(sgd)
        self._datastore_stale = True
        if self._concept_tower_trained():
            self._index_stale = True
        if self._epoch_end_due:
            self._epoch_end_due = False
            self._seen_in_epoch = 0
            self.epochs_refreshed += 1
            # only the index feeds hard negatives; the datastore is rebuilt when predict needs it
            self.refresh(datastore=False)
            seconds = time.perf_counter() - self._epoch_start
            self.cfg.setdefault("epoch_seconds", []).append(round(seconds, 1))
            logger.info("%s: epoch %d took %.1fs (index refresh included)", self.name,
                        self.epochs_refreshed, seconds)

    def _concept_tower_trained(self) -> bool:
        attrs = self.model.attrs
        return bool(attrs.get("shared_towers", True) or attrs.get("train_concept_tower", True))

    def _closest_name(self, query: np.ndarray, concept: int) -> int:
        """The index of `concept`'s name most similar to `query`."""
        names = self.names
        start = names.offsets[concept]
        end = names.offsets[concept + 1] if concept + 1 < len(names.offsets) else len(names)
        return int(start + np.argmax(self._name_embeddings[start:end] @ query))

    def _select_names(self, queries: np.ndarray, gold: List[int], p: int
                      ) -> Tuple[List[int], List[int]]:
        """Positive: the gold concept's name closest to the mention. Negatives,
        p per mention (`negative_sampling`): 'hard', the best name of each of
        the top-p wrong concepts retrieved from the whole KB with the current
        mention embeddings (the index is refreshed every epoch; kNN-BioEL Sec.
        2.2); 'random', the closest name of p wrong concepts drawn uniformly;
        'mixed', round(p * hard_fraction) hard and the rest random (Wiatrak et
        al. Sec. 4, 'mixed-50%')."""
        positives = [self._closest_name(q, c) for q, c in zip(queries, gold)]
        negatives: List[int] = []
        if not p:
            return positives, negatives
        sampling = self.cfg["negative_sampling"]
        n_hard = {"hard": p, "random": 0}.get(sampling, int(round(p * self.cfg["hard_fraction"])))
        hits = self.store.search_names(queries, k=n_hard + 1) if n_hard else [[] for _ in gold]
        n_concepts = len(self.names.concept_ids)
        for query, row, concept in zip(queries, hits, gold):
            hard = [(owner, name) for owner, name, _ in row if owner != concept][:n_hard]
            taken = {concept} | {owner for owner, _ in hard}
            drawn: List[int] = []
            while len(drawn) < p - len(hard):
                candidate = int(self._rng.integers(n_concepts))
                if candidate not in taken:
                    taken.add(candidate)
                    drawn.append(candidate)
            negatives.extend([name for _, name in hard] +
                             [self._closest_name(query, c) for c in drawn])
        return positives, negatives

    def _adversarial_names(self, mentions, name_texts: List[str], p: int):
        """FGSM-perturbed concept-tower embeddings of the batch's names (Wiatrak
        et al. eqs. 6-7): z+_adv = z+ - eps * sign(grad s(m, e+)) for each
        positive and z-_adv = z- + eps * sign(grad s(m, e-)) for each negative,
        z being the token input embeddings of the concept tower (perturbing them
        equals perturbing the composite word + position + segment embeddings,
        which only add constants). The names are re-encoded from z_adv, and the
        adversarial loss term of eq. 8 trains the mention tower and, when it
        trains, the concept tower.

        Each name's gradient depends on that name alone, so the names are
        encoded in length-sorted chunks of FGSM_CHUNK (less padding, same
        result; an NCBI-NIL training step on one CPU thread: 10.2 s -> 6.1 s,
        against 1.6 s without FGSM).
        A frozen concept tower runs in eval mode, like the cached clean name
        embeddings it is compared with (the perturbation is then the only
        difference), and its second pass keeps no graph.

        mentions (torch.Tensor): (batch, dim) mention embeddings.
        name_texts (List[str]): batch positives, then p negatives per mention.
        p (int): negatives per mention.
        RETURNS (torch.Tensor): (len(name_texts), dim) perturbed name embeddings.
        """
        import torch

        from ..encoders.thinc_biencoder import tokenize, torch_module
        from ..encoders.torch_biencoder import length_buckets

        module = torch_module(self.model)
        device = next(module.parameters()).device
        batch = mentions.shape[0]
        mention_index = torch.arange(batch, device=device)
        owner = torch.cat([mention_index, mention_index.repeat_interleave(p)])  # mention of each name
        sign = torch.ones(len(name_texts), device=device)
        sign[:batch] = -1.0  # positives move to lower similarity, negatives to higher
        anchors = mentions.detach()[owner]  # (n, dim)
        trained = self._concept_tower_trained()
        tower = module.tower("concept")
        was_training = tower.training
        if not trained:
            tower.eval()
        order: List[int] = []
        chunks = []
        try:
            for indices in length_buckets(name_texts, FGSM_CHUNK):
                ids, mask = tokenize(self.model, [name_texts[i] for i in indices], device)
                rows = torch.tensor(indices, device=device)
                z = module.concept_input_embeddings(ids).detach().requires_grad_(True)  # (c, seq, hidden)
                with torch.enable_grad():
                    names = module(None, mask, tower="concept", inputs_embeds=z)  # (c, dim)
                    similarity = (anchors[rows] * names).sum(-1)  # (c,)
                    (grad,) = torch.autograd.grad((sign[rows] * similarity).sum(), z)
                z_adv = (z + self.cfg["fgsm_epsilon"] * grad.sign()).detach()
                with torch.set_grad_enabled(trained and torch.is_grad_enabled()):
                    chunks.append(module(None, mask, tower="concept", inputs_embeds=z_adv))
                order.extend(indices)
        finally:
            tower.train(was_training)
        return torch.cat(chunks)[torch.argsort(torch.tensor(order, device=device))]  # input order

    def get_loss(self, examples: Iterable[Example], scores: Any) -> Tuple[float, Any]:
        """The loss is computed inside `update` (it needs retrieval); not used."""
        raise NotImplementedError(Errors.E161.format(name=self.name))

    # -------------------------------------------------------------- predict
    def predict(self, docs: Iterable[Doc]) -> List[List[Dict[str, Any]]]:
        """Candidates, scores and NIL score for every entity of every doc.

        RETURNS (List[List[Dict[str, Any]]]): per doc, per ent: {'candidates':
            [(id, score)], 'nil_score': float}.
        """
        docs = list(docs)
        spans = [(i, ent) for i, doc in enumerate(docs) for ent in doc.ents]
        out: List[List[Dict[str, Any]]] = [[] for _ in docs]
        if not spans:
            return out
        self.refresh()
        texts = [self._mention_input(ent) for _, ent in spans]
        long_forms = self._long_forms(docs) if self.cfg["abbreviations"] else {}
        extra = [(k, long_forms[(i, ent.start_char, ent.end_char)])
                 for k, (i, ent) in enumerate(spans) if (i, ent.start_char, ent.end_char) in long_forms]
        all_texts = texts + [text for _, text in extra]
        embeddings = self.embed(all_texts, "mention")
        ranked = self._rank(embeddings)
        for (k, _), long_result in zip(extra, ranked[len(texts):]):
            if long_result["support"] > ranked[k]["support"]:
                ranked[k] = long_result
        for (i, _), result in zip(spans, ranked[:len(texts)]):
            out[i].append(result)
        return out

    def _rank(self, embeddings: np.ndarray) -> List[Dict[str, Any]]:
        cfg = self.cfg
        candidates = self.store.search(embeddings, k=min(cfg["top_k"], len(self.names.concept_ids)))
        use_knn = cfg["use_knn"] and self.datastore is not None and len(self.datastore)
        neighbours = self.datastore.search(embeddings, cfg["knn_k"]) if use_knn else \
            [[] for _ in candidates]
        results = []
        for cands, neigh in zip(candidates, neighbours):
            if use_knn:
                scored = interpolate(cands, neigh, cfg["knn_lambda"], cfg["knn_beta1"],
                                     cfg["knn_beta2"])[:cfg["top_k"]]
            else:
                probs = model_distribution(cands, cfg["knn_beta1"])
                scored = [(cid, probs[cid]) for cid, _ in cands]
            best_sim = max([s for _, s in cands[:1]] + [s for _, s in neigh[:1]], default=-1.0)
            results.append({"candidates": [(c, float(s)) for c, s in scored],
                            "nil_score": float(1.0 - best_sim), "support": best_sim})
        return results

    def _long_forms(self, docs: List[Doc]) -> Dict[Tuple[int, int, int], str]:
        """(doc index, start, end) of short-form entities -> their long form."""
        out = {}
        for i, doc in enumerate(docs):
            pairs = find_abbreviations(doc.text)
            if not pairs:
                continue
            for ent in doc.ents:
                long_form = pairs.get(ent.text)
                if long_form:
                    out[(i, ent.start_char, ent.end_char)] = long_form
        return out

    def set_annotations(self, docs: Iterable[Doc], predictions: List[List[Dict[str, Any]]]) -> None:
        """Write kb_id_, the scored candidate list and the NIL flags."""
        cfg = self.cfg
        threshold = cfg["nil_threshold"]
        for doc, doc_predictions in zip(docs, predictions):
            ents = list(doc.ents)
            if len(ents) != len(doc_predictions):
                raise BioELError(Errors.E162.format(n_ents=len(ents), n_pred=len(doc_predictions)))
            for ent, result in zip(ents, doc_predictions):
                candidates = result["candidates"]
                nil = not candidates or (threshold is not None and result["nil_score"] >= threshold)
                ent.kb_id_ = NIL if nil else candidates[0][0]
                ent._.set(cfg["kb_ents_attr"], candidates)
                ent._.set(cfg["is_nil_attr"], nil)
                ent._.set(cfg["nil_score_attr"], result["nil_score"])
            doc.ents = ents

    def canonical_name(self, concept_id: str) -> Optional[str]:
        """RETURNS (Optional[str]): the KB's canonical name of a concept."""
        concept = self.kb.get(concept_id) if self.kb is not None else None
        return concept.canonical_name if concept is not None else None

    # ------------------------------------------------------------- serialise
    def to_disk(self, path, *, exclude: Iterable[str] = tuple()) -> None:
        """Save cfg, KB, index, datastore, encoder config and weights (the index
        and datastore are refreshed first, so saved embeddings are current)."""
        from ..encoders.thinc_biencoder import save_encoder_config

        path = ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.refresh()
        cfg = dict(self.cfg, dim=self.model.get_dim("nO"),
                   encoder_attrs={k: v for k, v in self.model.attrs.items() if k != "tokenizer"})
        srsly.write_json(path / "cfg", cfg)
        self.kb.to_disk(path / "kb")
        (path / "index").write_bytes(self.store.to_bytes())
        (path / "datastore").write_bytes(self.datastore.to_bytes())
        srsly.write_msgpack(path / "train_mentions", self.train_mentions)
        save_encoder_config(self.model, path / "encoder")
        self.model.to_disk(path / "model")

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "BioELLinker":
        """Restore everything `to_disk` wrote. Raises E156 for a missing file,
        E157 for a config that does not match the saved weights, E154 for a
        corrupted index."""
        from ..encoders.thinc_biencoder import build_from_saved

        path = ensure_path(path)
        for part in ("cfg", "kb", "index", "datastore", "train_mentions", "encoder", "model"):
            if not (path / part).exists():
                raise BioELError(Errors.E156.format(path=path / part))
        saved = srsly.read_json(path / "cfg")
        attrs = saved.get("encoder_attrs", {})
        for key in ("pooling", "similarity", "shared_towers"):
            if key in attrs and attrs[key] != self.model.attrs.get(key):
                raise BioELError(Errors.E157.format(path=path, key=key, saved=attrs[key],
                                                    config=self.model.attrs.get(key)))
        # the embedding cache is a folder of the machine that trained: keep this config's
        self.cfg.update({k: v for k, v in saved.items() if k in self.cfg and k != "embedding_cache"})
        self.set_kb(KnowledgeBase.from_disk(path / "kb"))
        build_from_saved(self.model, path / "encoder")
        try:
            self.model.from_disk(path / "model")
        except (ValueError, RuntimeError, KeyError) as err:
            raise BioELError(Errors.E157.format(path=path, key="weights", saved=type(err).__name__,
                                                config=str(err)[:200]))
        if self.model.get_dim("nO") != saved["dim"]:
            raise BioELError(Errors.E157.format(path=path, key="dim", saved=saved["dim"],
                                                config=self.model.get_dim("nO")))
        self.store = DenseCandidateStore.from_bytes((path / "index").read_bytes(),
                                                    path=str(path / "index"))
        if len(self.store) != len(self.names):
            raise BioELError(Errors.E154.format(path=path / "index",
                                                problem="its name count differs from the KB's"))
        self._name_embeddings = None
        self.datastore = DatastoreKNN.from_bytes((path / "datastore").read_bytes())
        self.train_mentions = [tuple(x) for x in srsly.read_msgpack(path / "train_mentions")]
        self._index_stale = self._datastore_stale = False
        return self

    def _ensure_name_embeddings(self) -> None:
        if self._name_embeddings is None:
            self._index_stale = True
            self.refresh()


__all__ = ["BioELLinker", "install_extensions", "DEFAULT_MODEL"]

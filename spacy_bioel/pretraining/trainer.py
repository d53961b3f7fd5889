"""Self-alignment pre-training of a transformer on synonym pairs (SapBERT):
plain PyTorch and transformers, no spaCy, so it also runs where only those are
installed (a GPU machine).

References:
    Liu et al., Self-Alignment Pretraining for Biomedical Entity
    Representations (SapBERT), NAACL 2021, Sec. 2.2: a batch of synonym pairs
    is embedded by one encoder, and the multi-similarity loss with online hard
    pair mining (`losses.multi_similarity`, eq. 1) pulls each concept's names
    together and pushes other concepts' names apart. SapBERT trains 1 epoch
    with AdamW, lr 2e-5, weight decay 0.01, batch 512 and max length 25 over
    UMLS; pooling is [CLS] there, and here the pooling the linker will use
    (mean for the embedded MiniLM).

The output directory is a standard transformers model directory (config,
weights, tokenizer): `paths.encoder` of a linker config takes it unchanged.
`pretraining.json` beside them records the run; an interrupted run resumes
from `checkpoint/` in the same directory.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import torch

from ..encoders.torch_io import load_tensors
from ..errors import BioELError, Errors
from .synonyms import SynonymPair, pair_batches

logger = logging.getLogger(__name__)

RECORD_FILE = "pretraining.json"
CHECKPOINT_DIR = "checkpoint"
NOT_IDENTITY = ("checkpoint_every", "threads", "device", "length_chunks")


@dataclass
class PretrainSettings:
    """The settings of one pre-training run (those marked `run` must match to resume).

    base_model (str): A local model directory, the embedded default or a hub name.
    pooling (str): 'mean' or 'cls' (use the linker's).
    batch_size (int): Synonym pairs per step (2 x batch_size names).
    epochs (int): Passes over the pairs.
    learning_rate (float): AdamW learning rate.
    weight_decay (float): AdamW weight decay.
    max_length (int): Tokens per name.
    seed (int): Seed of the batch order and of the weights' dropout.
    max_steps (Optional[int]): Stop after this many steps (a budget), None: all epochs.
    freeze_layers (int): Keep the embeddings and this many bottom transformer
        layers fixed (faster on a CPU; 0 trains every weight).
    alpha, beta, base, epsilon (float): Multi-similarity loss and miner (SapBERT values).
    checkpoint_every (int): Steps between checkpoints (not part of the run's identity).
    length_chunks (Optional[int]): On a CPU, encode a step's names in this many
        sub-batches sorted by length, each padded only to its longest name (the
        same embeddings with less padding computed: faster steps,
        docs/results/speed.md); None: the BiEncoder's default (4). CUDA batches are
        encoded whole. Not part of the run's identity.
    threads (int): CPU threads (0: PyTorch's default).
    device (str): 'cpu', 'cuda' or 'cuda:N'.
    """

    base_model: str = "embedded:all-MiniLM-L6-v2"
    pooling: str = "mean"
    batch_size: int = 64
    epochs: int = 1
    learning_rate: float = 2e-5
    weight_decay: float = 0.01
    max_length: int = 25
    seed: int = 0
    max_steps: Optional[int] = None
    freeze_layers: int = 0
    alpha: float = 2.0
    beta: float = 50.0
    base: float = 0.5
    epsilon: float = 0.2
    checkpoint_every: int = 200
    length_chunks: Optional[int] = None
    threads: int = 0
    device: str = "cpu"

    def identity(self) -> Dict[str, Any]:
        """The settings a resumed run must share with the checkpoint."""
        return {k: v for k, v in asdict(self).items() if k not in NOT_IDENTITY}


def data_fingerprint(pairs: Sequence[SynonymPair]) -> str:
    """A hash of the pairs (strings and labels, in order)."""
    digest = hashlib.sha1()
    for pair in pairs:
        digest.update(f"{pair.first}\t{pair.second}\t{pair.label}\n".encode("utf-8"))
    return digest.hexdigest()[:20]


def pretrain(pairs: Sequence[SynonymPair], output_dir: Union[str, Path],
             settings: PretrainSettings, *, report: Optional[Dict[str, Any]] = None,
             restart: bool = False, progress: bool = True) -> Dict[str, Any]:
    """Pre-train `settings.base_model` on `pairs` and save it to `output_dir`.

    pairs (Sequence[SynonymPair]): From `make_pairs` (after the leakage rules).
    output_dir (Union[str, Path]): The model directory to write.
    settings (PretrainSettings): The run.
    report (Optional[Dict[str, Any]]): Data and leakage facts to keep in the record.
    restart (bool): Discard a checkpoint of another run instead of raising E182.
    progress (bool): Show a progress bar with the loss.
    RETURNS (Dict[str, Any]): The record written to pretraining.json (steps,
        names seen, seconds, names/s, mean loss of the first and last 10% of
        steps).
    """
    from ..progress import progress_bar

    from ..encoders.torch_biencoder import CPU_LENGTH_CHUNKS, BiEncoder, freeze_bottom, load_transformer
    from ..losses.multi_similarity import MultiSimilarityLoss

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if not pairs:
        raise BioELError(Errors.E183.format(pairs=0, concepts=(report or {}).get("concepts", 0)))
    identity = {"settings": settings.identity(), "data": data_fingerprint(pairs)}
    if settings.threads:
        torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)
    device = torch.device(settings.device)
    tokenizer, transformer = load_transformer(settings.base_model)
    freeze_bottom(transformer, settings.freeze_layers, settings.base_model)
    model = BiEncoder(transformer, pooling=settings.pooling, similarity="cosine",
                      cpu_length_chunks=settings.length_chunks or CPU_LENGTH_CHUNKS).to(device)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=settings.learning_rate, weight_decay=settings.weight_decay)
    loss_fn = MultiSimilarityLoss(settings.alpha, settings.beta, settings.base, settings.epsilon)
    state = resume(output_dir / CHECKPOINT_DIR, identity, model, optimizer, restart)
    steps_per_epoch = -(-len(pairs) // settings.batch_size)
    total = steps_per_epoch * settings.epochs
    if settings.max_steps is not None:
        total = min(total, settings.max_steps)
    losses: List[float] = state["losses"]
    step, seconds = state["step"], state["seconds"]
    resumed_at = step
    model.train()
    use_amp = device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    logger.info("Pre-training %s on %d synonym pairs (%d steps of %d pairs%s)",
                settings.base_model, len(pairs), total, settings.batch_size,
                f", resuming at step {step}" if step else "")
    bar = progress_bar(total=total, initial=step, desc="Pre-training", unit=" steps",
                       disable=not progress)
    started = time.perf_counter()
    names_this_run = 0
    batches, batches_epoch = [], -1
    try:
        while step < total:
            epoch, offset = divmod(step, steps_per_epoch)
            if epoch != batches_epoch:
                batches, batches_epoch = pair_batches(pairs, settings.batch_size, settings.seed,
                                                      epoch), epoch
            batch = batches[offset]
            texts = [pairs[i].first for i in batch] + [pairs[i].second for i in batch]
            labels = torch.tensor([pairs[i].label for i in batch] * 2, device=device)
            encoded = tokenizer(texts, padding=True, truncation=True,
                                max_length=settings.max_length, return_tensors="pt")
            with torch.autocast(device_type="cuda", enabled=use_amp):
                embeddings = model(encoded["input_ids"].to(device),
                                   encoded["attention_mask"].to(device), "mention")
            loss = loss_fn(embeddings.float(), labels)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(float(loss.detach()))
            step += 1
            names_this_run += len(texts)
            bar.update(1)
            elapsed = time.perf_counter() - started
            bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.4f}",
                            names_s=f"{names_this_run / max(elapsed, 1e-9):.0f}")
            if step % settings.checkpoint_every == 0 and step < total:
                _save_checkpoint(output_dir / CHECKPOINT_DIR, identity, model, optimizer, step,
                                 seconds + elapsed, losses)
    finally:
        bar.close()
    elapsed = time.perf_counter() - started
    seconds += elapsed
    transformer.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    tenth = max(1, len(losses) // 10)
    record = {
        "base_model": settings.base_model, "settings": asdict(settings),
        "data_fingerprint": identity["data"], "pairs": len(pairs), "steps": step,
        "steps_per_epoch": steps_per_epoch, "epochs_done": step / steps_per_epoch,
        "names_seen": 2 * (step // steps_per_epoch * len(pairs)
                           + min(step % steps_per_epoch * settings.batch_size, len(pairs))),
        "seconds": seconds, "resumed_at_step": resumed_at, "this_run_s": elapsed,
        "names_per_s": names_this_run / max(elapsed, 1e-9),
        "loss_first_10pct": sum(losses[:tenth]) / tenth if losses else None,
        "loss_last_10pct": sum(losses[-tenth:]) / tenth if losses else None,
        "device": str(device), "torch": torch.__version__, **(report or {})}
    (output_dir / RECORD_FILE).write_text(json.dumps(record, indent=2), encoding="utf-8")
    shutil.rmtree(output_dir / CHECKPOINT_DIR, ignore_errors=True)
    logger.info("Pre-trained %d steps in %.0f s (%.0f names/s this run); saved %s",
                step, seconds, record["names_per_s"], output_dir)
    return record


def _save_checkpoint(folder: Path, identity: Dict[str, Any], model, optimizer, step: int,
                     seconds: float, losses: List[float]) -> None:
    """Write the checkpoint to a temporary folder and rename it into place, so
    an interruption leaves the previous checkpoint intact."""
    partial = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
               partial / "state.pt")
    (partial / "meta.json").write_text(json.dumps(
        {"identity": identity, "step": step, "seconds": seconds, "losses": losses}), encoding="utf-8")
    old = folder.with_name(f".{folder.name}.{os.getpid()}.old")
    if folder.exists():
        os.replace(folder, old)
    os.replace(partial, folder)
    shutil.rmtree(old, ignore_errors=True)
    logger.debug("Checkpoint at step %d", step)


def resume(folder: Path, identity: Dict[str, Any], model, optimizer,
           restart: bool) -> Dict[str, Any]:
    """Load the checkpoint in `folder` if it is this run's (E182 if another's)."""
    fresh = {"step": 0, "seconds": 0.0, "losses": []}
    meta_path = folder / "meta.json"
    if not meta_path.exists():
        return fresh
    state = None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        problem = None if meta["identity"] == identity else _difference(meta["identity"], identity)
    except (ValueError, KeyError, TypeError) as err:
        problem = f"unreadable meta.json: {err}"
    if problem is None:
        try:
            state = load_tensors(folder / "state.pt")  # weights_only: a pickle runs no code
        except Exception as err:  # a damaged file: torch raises several types
            problem = f"state.pt unreadable: {type(err).__name__}"
    if problem is not None:
        if not restart:
            raise BioELError(Errors.E182.format(path=folder, problem=problem))
        logger.warning("Discarding the checkpoint in %s (%s)", folder, problem)
        shutil.rmtree(folder, ignore_errors=True)
        return fresh
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
    if state.get("cuda_rng") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    logger.info("Resuming pre-training from %s at step %d", folder, meta["step"])
    return {"step": int(meta["step"]), "seconds": float(meta["seconds"]),
            "losses": list(meta["losses"])}


def _difference(saved: Dict[str, Any], current: Dict[str, Any]) -> str:
    if saved.get("data") != current.get("data"):
        return "the synonym pairs differ"
    changed = sorted(k for k in set(saved["settings"]) | set(current["settings"])
                     if saved["settings"].get(k) != current["settings"].get(k))
    return "settings differ: " + ", ".join(
        f"{k} {saved['settings'].get(k)!r} -> {current['settings'].get(k)!r}" for k in changed)


__all__ = ["PretrainSettings", "pretrain", "data_fingerprint", "RECORD_FILE", "CHECKPOINT_DIR"]

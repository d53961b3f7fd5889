"""`pretrain-encoder`: self-alignment pre-training (SapBERT) of an encoder on
the synonyms of knowledge bases, with the leakage rules of zero-shot evaluation."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import List, Optional, Set, Tuple

import typer

from ._app import app, read_docs, setup_logging, split_csv, step_speed_rows, write_json, write_report

logger = logging.getLogger(__name__)


def read_exclusions(concept_files: List[Path], query_files: List[Path],
                    test_sets: List[Path]) -> Tuple[Set[str], Set[str]]:
    """Concept ids and query strings to hold out. A .spacy file gives its gold
    concept ids (--exclude-concepts), its mention texts (--exclude-queries) or
    both (--zero-shot-test); any other file is read as one entry per line
    (blank lines and lines starting with '#' skipped).
    RETURNS (Tuple[Set[str], Set[str]]): (concept ids, query strings)."""
    from spacy_bioel.kb.io import iter_lines

    concepts: Set[str] = set()
    strings: Set[str] = set()

    def from_docs(path: Path, ids: bool, texts: bool) -> None:
        for doc in read_docs([path]):
            for ent in doc.ents:
                if ids and ent.kb_id_ and ent.kb_id_ != "NIL":
                    concepts.update(part for part in ent.kb_id_.split("|") if part)
                if texts:
                    strings.add(ent.text)

    def from_lines(path: Path, into: Set[str]) -> None:
        for _, text in iter_lines(path):
            text = text.strip()
            if text and not text.startswith("#"):
                into.add(text)

    for path in concept_files:
        if path.suffix == ".spacy":
            from_docs(path, ids=True, texts=False)
        else:
            from_lines(path, concepts)
    for path in query_files:
        if path.suffix == ".spacy":
            from_docs(path, ids=False, texts=True)
        else:
            from_lines(path, strings)
    for path in test_sets:
        from_docs(path, ids=True, texts=True)
    return concepts, strings


@app.command("pretrain-encoder")
def pretrain_encoder(
    kb_paths: List[Path] = typer.Argument(..., help="Knowledge bases (.bioelkb, from `kb build`) "
                                                     "whose synonym sets are the training data, "
                                                     "then OUTPUT_DIR"),
    output_dir: Path = typer.Argument(..., help="The transformers model directory to write "
                                                "(paths.encoder takes it unchanged)"),
    base_model: str = typer.Option("embedded:all-MiniLM-L6-v2", "--base-model",
                                   help="Start from this local directory, the embedded MiniLM or "
                                        "a hub name (needs internet)"),
    pooling: str = typer.Option("mean", "--pooling", help="mean | cls: the linker's pooling"),
    max_names: Optional[int] = typer.Option(None, "--max-names-per-concept",
                                            help="Canonical name + a sample of the synonyms"),
    max_pairs: Optional[int] = typer.Option(50, "--max-pairs-per-concept",
                                            help="Synonym pairs sampled per concept (SapBERT: 50)"),
    batch_size: int = typer.Option(64, "--batch-size", help="Synonym pairs per step"),
    epochs: int = typer.Option(1, "--epochs"),
    learning_rate: float = typer.Option(2e-5, "--lr", help="AdamW learning rate"),
    max_length: int = typer.Option(25, "--max-length", help="Tokens per name"),
    seed: int = typer.Option(0, "--seed"),
    max_steps: int = typer.Option(0, "--max-steps",
                                  help="Stop after this many steps (a time budget; 0: all epochs)"),
    freeze_layers: int = typer.Option(0, "--freeze-layers", help="Keep the embeddings and this "
                                      "many bottom layers fixed (faster on a CPU)"),
    exclude_concepts: List[Path] = typer.Option([], "--exclude-concepts",
                                                help="Concept ids to hold out: a file of one id "
                                                     "per line, or a .spacy file's gold ids; "
                                                     "repeatable"),
    exclude_queries: List[Path] = typer.Option([], "--exclude-queries",
                                               help="Drop every name equal to one of these "
                                                    "query strings (a file of one per line, or "
                                                    "a .spacy file's mentions); repeatable"),
    zero_shot_test: List[Path] = typer.Option([], "--zero-shot-test",
                                              help="A zero-shot test DocBin: both its concepts "
                                                   "and its mention strings are held out; "
                                                   "repeatable"),
    checkpoint_every: int = typer.Option(200, "--checkpoint-every", help="Steps between checkpoints"),
    restart: bool = typer.Option(False, "--restart", help="Discard a checkpoint of another run"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report the pairs and what the leakage "
                                                          "rules drop; train nothing"),
    length_chunks: int = typer.Option(0, "--length-chunks",
                                      help="On a CPU, encode a step's names in this many "
                                           "sub-batches sorted by length (less padding; 0: "
                                           "4); a GPU encodes them whole"),
    threads: int = typer.Option(0, "--threads", help="CPU threads (0: PyTorch's default)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="CUDA device (-1: CPU)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks"),
) -> None:
    """Pre-train an encoder on a KB's synonyms, the self-alignment recipe of
    SapBERT (Liu and others, 2021): every pair of names of one concept is pulled
    together and other concepts' names pushed apart by the multi-similarity loss
    with online hard-pair mining. For a
    zero-shot evaluation, hold out its test concepts and query strings
    (--zero-shot-test); the command reports what it dropped and why. Resumes
    an interrupted run from OUTPUT_DIR/checkpoint."""
    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from spacy_bioel.pretraining.synonyms import apply_leakage_rules, collect_synonym_sets, make_pairs
    from spacy_bioel.pretraining.trainer import PretrainSettings, pretrain
    from spacy_bioel.validation import as_choice, as_float, as_int

    setup_logging(verbose)
    settings = PretrainSettings(
        base_model=base_model, pooling=as_choice("--pooling", pooling, ("mean", "cls")),
        batch_size=as_int("--batch-size", batch_size, 2), epochs=as_int("--epochs", epochs, 1),
        learning_rate=as_float("--lr", learning_rate, 0, exclusive_minimum=True),
        max_length=as_int("--max-length", max_length, 2), seed=seed,
        max_steps=as_int("--max-steps", max_steps, 0) or None,
        freeze_layers=as_int("--freeze-layers", freeze_layers, 0),
        checkpoint_every=as_int("--checkpoint-every", checkpoint_every, 1),
        length_chunks=as_int("--length-chunks", length_chunks, 0) or None,
        threads=as_int("--threads", threads, 0),
        device="cpu" if gpu_id < 0 else f"cuda:{gpu_id}")
    if max_names is not None:
        max_names = as_int("--max-names-per-concept", max_names, 2)
    if max_pairs is not None:
        max_pairs = as_int("--max-pairs-per-concept", max_pairs, 1)
    kbs = [KnowledgeBase.from_disk(path) for path in kb_paths]
    sets = collect_synonym_sets(kbs)
    concepts, strings = read_exclusions(exclude_concepts, exclude_queries, zero_shot_test)
    kept, leakage = apply_leakage_rules(sets, concepts, strings, kbs)
    pairs = make_pairs(kept, max_names_per_concept=max_names, max_pairs_per_concept=max_pairs,
                       seed=seed)
    typer.echo(f"Synonym sets: {len(sets)} concepts, {sum(len(s.names) for s in sets)} names "
               f"from {len(kbs)} KB(s)")
    typer.echo(f"Leakage rules ({len(concepts)} held-out ids, {len(strings)} query strings):")
    for line in leakage.lines():
        typer.echo(f"  {line}")
    singletons = sum(1 for s in kept if len(s.names) < 2)
    typer.echo(f"Training pairs: {len(pairs)} ({len(kept) - singletons} concepts with 2+ names; "
               f"{singletons} with one name give no pair)")
    report = {"kbs": [str(p) for p in kb_paths], "kb_names": [kb.name for kb in kbs],
              "concepts": len(sets), "names": sum(len(s.names) for s in sets),
              "concepts_with_pairs": len(kept) - singletons, "single_name_concepts": singletons,
              "max_names_per_concept": max_names, "max_pairs_per_concept": max_pairs,
              "leakage": leakage.to_dict(),
              "held_out_inputs": {"concepts": [str(p) for p in exclude_concepts],
                                  "queries": [str(p) for p in exclude_queries],
                                  "zero_shot_test": [str(p) for p in zero_shot_test]}}
    if dry_run:
        return
    record = pretrain(pairs, output_dir, settings, report=report, restart=restart)
    typer.echo(f"Pre-trained {record['steps']} steps ({record['epochs_done']:.2f} epochs) in "
               f"{record['seconds']:.0f} s, {record['names_per_s']:.0f} names/s; loss "
               f"{record['loss_first_10pct']:.4f} -> {record['loss_last_10pct']:.4f}. "
               f"Saved {output_dir}")


@app.command("pretrain-table")
def pretrain_table(
    untrained: Path = typer.Argument(..., help="Folder of `evaluate` reports of the untrained "
                                               "encoder, one JSON per dataset"),
    pretrained: Path = typer.Argument(..., help="Folder of one sub-folder per pre-training seed "
                                                "(s0, s1, ...), each with the same datasets' "
                                                "reports"),
    encoders: Optional[Path] = typer.Option(None, "--encoders", help="Folder of the pre-trained "
                                            "encoders (s0, s1, ...): their pretraining.json "
                                            "gives the cost"),
    output: Path = typer.Option(Path("metrics/pretrain/zeroshot.md"), "--output",
                                help="Markdown table (a .json beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks"),
) -> None:
    """Zero-shot Acc@1 (no corpus training) of the untrained and the pre-trained
    encoder per dataset: mean +- std over the pre-training seeds and the paired
    difference, plus the pre-training cost."""
    from ..pretrain_report import pretrain_summary

    setup_logging(verbose)
    summary = pretrain_summary(untrained, pretrained, encoders)
    write_json(output.with_suffix(".json"), summary["data"])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(summary["markdown"], encoding="utf-8")
    typer.echo(summary["markdown"])


@app.command("pretrain-speed")
def pretrain_speed(
    kb_paths: List[Path] = typer.Argument(..., help="Knowledge bases (.bioelkb) whose synonym "
                                                     "pairs are trained on"),
    chunks: str = typer.Option("1,4", "--chunks", help="Comma-separated --length-chunks "
                                                       "settings to compare (the first is the "
                                                       "baseline)"),
    steps: int = typer.Option(20, "--steps", help="Steps per run (the same batches in each)"),
    repeats: int = typer.Option(2, "--repeats", help="Runs per setting, interleaved"),
    base_model: str = typer.Option("embedded:all-MiniLM-L6-v2", "--base-model"),
    batch_size: int = typer.Option(64, "--batch-size", help="Synonym pairs per step"),
    max_pairs: int = typer.Option(50, "--max-pairs-per-concept"),
    seed: int = typer.Option(0, "--seed", help="The pairs' sample and the batch order"),
    threads: int = typer.Option(0, "--threads", help="CPU threads (0: PyTorch's default)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="CUDA device (-1: CPU)"),
    output: Path = typer.Option(Path("metrics/pretrain/speed.json"), "--output",
                                help="JSON report (a markdown table beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks"),
) -> None:
    """Pre-training steps per second with each --length-chunks setting: the same
    pairs, batches and start weights in every run, settings interleaved, model
    loading not timed. Writes the median seconds a step and the speed-up over
    the first setting."""
    import tempfile

    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from spacy_bioel.pretraining.synonyms import collect_synonym_sets, make_pairs
    from spacy_bioel.pretraining.trainer import PretrainSettings, pretrain
    from spacy_bioel.validation import as_int

    setup_logging(verbose)
    settings_list = [as_int("--chunks", value, 1) for value in split_csv(chunks)]
    steps, repeats = as_int("--steps", steps, 2), as_int("--repeats", repeats, 1)
    sets = collect_synonym_sets([KnowledgeBase.from_disk(path) for path in kb_paths])
    pairs = make_pairs(sets, max_pairs_per_concept=as_int("--max-pairs-per-concept", max_pairs, 1),
                       seed=seed)
    seconds: dict = {value: [] for value in settings_list}
    with tempfile.TemporaryDirectory(prefix="bioel-pretrain-speed-") as tmp:
        for repeat in range(repeats):
            for value in settings_list:
                settings = PretrainSettings(
                    base_model=base_model, batch_size=as_int("--batch-size", batch_size, 2),
                    seed=seed, max_steps=steps, length_chunks=value, checkpoint_every=10 ** 9,
                    threads=as_int("--threads", threads, 0),
                    device="cpu" if gpu_id < 0 else f"cuda:{gpu_id}")
                record = pretrain(pairs, Path(tmp) / f"c{value}_r{repeat}", settings,
                                  progress=False)
                seconds[value].append(record["this_run_s"] / record["steps"])
                typer.echo(f"length_chunks {value}, run {repeat + 1}: "
                           f"{seconds[value][-1]:.3f} s a step")
    rows, table = step_speed_rows(
        seconds, "length_chunks",
        f"Pre-training speed: {len(pairs)} pairs from {len(kb_paths)} KB(s), {steps} steps of "
        f"{batch_size} pairs, {repeats} run(s) a setting, threads {threads or 'default'}",
        names_per_step=2 * batch_size)
    write_report(output, {"pairs": len(pairs), "steps": steps, "batch_size": batch_size,
                          "repeats": repeats, "threads": threads, "base_model": base_model,
                          "kbs": [str(p) for p in kb_paths], "rows": rows},
                 table)

"""`benchmark PIPELINE DATA.spacy`: one pipeline's load time, linking throughput
and peak memory; `side-by-side`: pipelines against scispaCy's linker, each in a
fresh process of its own environment (see `evaluation.sidebyside`). JSON and
markdown tables, never a timed test."""
from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import List, Optional

import typer

from ._app import (app, labelled, load_pipeline, read_docs, setup_logging, split_csv,
                   step_speed_rows, write_json, write_report)


@app.command("benchmark")
def benchmark(
    pipeline: Path = typer.Argument(..., help="A saved pipeline with a linker"),
    data: Path = typer.Argument(..., help="DocBin with gold spans"),
    output: Path = typer.Option(Path("benchmark.json"), "--output", help="JSON (a .md beside it)"),
    batch_size: int = typer.Option(64, "--batch-size"),
    repeats: int = typer.Option(1, "--repeats", help="Linking passes over the data"),
    settings: List[str] = typer.Option([], "--set", help="Linker option STAGE.PARAM=VALUE, or reranker.OPTION=VALUE (e.g. reranker.gate=null, reranker.top_k=8), repeatable"),
    label: str = typer.Option("", "--label", help="Row label (default: the pipeline path)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Measure load time, mentions per second (gold spans given) and peak RSS;
    with a bioel_reranker, also the share of mentions it reranked."""
    setup_logging(verbose)
    from spacy_bioel.evaluation.linkers import apply_overrides, find_reranker, reranker_shares
    from spacy_bioel.training.readers import gold_spans_doc
    from spacy_bioel.cli.evaluate import parse_settings

    start = time.perf_counter()
    nlp = load_pipeline(pipeline)
    load_seconds = time.perf_counter() - start
    apply_overrides(nlp, parse_settings(settings))
    reranker = find_reranker(nlp)
    references = read_docs([data])
    inputs = [gold_spans_doc(nlp, d) for d in references]
    n_mentions = sum(len(d.ents) for d in inputs)
    list(nlp.pipe([d.copy() for d in inputs[:2]]))  # warm-up
    before = dict(reranker.counts) if reranker is not None else {}
    start = time.perf_counter()
    for _ in range(repeats):
        for _doc in nlp.pipe([d.copy() for d in inputs], batch_size=batch_size):
            pass
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"pipeline": str(pipeline), "data": str(data), "docs": len(inputs),
              "mentions": n_mentions, "repeats": repeats, "load_seconds": round(load_seconds, 2),
              "link_seconds": round(seconds, 2),
              "mentions_per_second": round(n_mentions * repeats / seconds, 1),
              "peak_rss_mb": round(peak_mb, 1), "settings": list(settings), "label": label}
    reranked = "–"
    if reranker is not None:
        result["reranker"] = {"top_k": reranker.cfg["top_k"], "gate": reranker.cfg["gate"],
                              "share_reranked": reranker_shares(reranker, before)["share_reranked"]}
        reranked = f"{100 * result['reranker']['share_reranked']:.1f}%"
    write_json(output, result)
    table = ("| pipeline | mentions | load (s) | mentions/s | reranked | peak RSS (MB) |\n"
             "|---|---:|---:|---:|---:|---:|\n"
             f"| {label or pipeline} | {n_mentions} | {result['load_seconds']} | "
             f"{result['mentions_per_second']} | {reranked} | {result['peak_rss_mb']} |\n")
    output.with_suffix(".md").write_text(table, encoding="utf-8")
    typer.echo(table)


@app.command("side-by-side")
def side_by_side_command(
    data: Path = typer.Argument(..., help="DocBin with gold spans and ids (e.g. NCBI test)"),
    kb_path: Path = typer.Option(..., "--kb", help="The KB the pipelines link to; scispaCy's index is built over its names"),
    pipelines: List[str] = typer.Option(..., "--pipeline", help="LABEL=PIPELINE or LABEL=PIPELINE@PYTHON (another environment), repeatable"),
    doors: List[str] = typer.Option([], "--door", help="LABEL=DOOR: how that pipeline was made (add_pipe defaults, configs/linker_cpu.cfg, default_pipeline(), a package), recorded with its rows; repeatable"),
    scispacy_python: Optional[str] = typer.Option(None, "--scispacy-python", help="Python of scispaCy's environment (none: no scispaCy row)"),
    scispacy_index: Optional[Path] = typer.Option(None, "--scispacy-index", help="scispaCy index folder (built there once, reused after)"),
    repeats: str = typer.Option("1", "--repeat", help="Input sizes: the docs repeated N times, comma-separated (1,10,100)"),
    rounds: int = typer.Option(3, "--rounds", help="Alternating rounds (>= 3 for min and median)"),
    dataset: str = typer.Option("", "--dataset", help="Label of the data in the table"),
    threshold: float = typer.Option(0.7, "--scispacy-threshold", help="scispaCy's candidate threshold (its default 0.7)"),
    build: bool = typer.Option(True, "--build/--no-build", help="Time each system's build"),
    build_only: List[str] = typer.Option([], "--build-only", help="Time the build of these systems only (labels; 'scispaCy linker' for scispaCy's), repeatable: variants made by set-stage share their source pipeline's build"),
    output: Path = typer.Option(Path("metrics/benchmark/side_by_side.json"), "--output", help="JSON (a .md beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """scispaCy's linker and bioel_linker pipelines over the same KB names and gold
    mentions, each run in a fresh process of its own environment, alternately for
    --rounds rounds at each input size: build s, load s, mentions/s (min and
    median), peak RSS, Acc@1 and the ratios, as JSON and a markdown table."""
    setup_logging(verbose)
    from spacy_bioel.errors import BioELError, Errors
    from ..sidebyside import SCISPACY, System, check_same_code, parse_system, side_by_side, summary_table
    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from spacy_bioel.kb.scispacy_jsonl import write_scispacy_jsonl
    from spacy_bioel.validation import as_int

    systems = [parse_system(spec) for spec in pipelines]
    for system in systems:  # a stale install elsewhere would time other code
        check_same_code(system)
    door_of = labelled(doors, "DOOR", "--door") if doors else {}
    unknown_doors = sorted(set(door_of) - {s.label for s in systems})
    if unknown_doors:
        raise BioELError(Errors.E175.format(name="--door", value=", ".join(unknown_doors),
                                            expected="the LABEL of a --pipeline"))
    for system in systems:
        system.door = door_of.get(system.label)
    workdir = output.with_suffix("")
    workdir.mkdir(parents=True, exist_ok=True)
    if scispacy_python:
        index = scispacy_index or workdir / "scispacy_index"
        kb_jsonl = index.with_name(index.name + ".kb.jsonl")
        if not kb_jsonl.exists():
            index.parent.mkdir(parents=True, exist_ok=True)
            write_scispacy_jsonl(KnowledgeBase.from_disk(kb_path), kb_jsonl)
        systems.insert(0, System("scispaCy linker", SCISPACY, scispacy_python,
                                 kb_jsonl=str(kb_jsonl), index_dir=str(index)))
    sizes = [as_int("--repeat", v, 1) for v in split_csv(repeats)]
    unknown = sorted(set(build_only) - {s.label for s in systems})
    if unknown:
        raise BioELError(Errors.E175.format(name="--build-only", value=", ".join(unknown),
                                            expected="labels of the systems: " + ", ".join(
                                                s.label for s in systems)))
    result = side_by_side(systems, read_docs([data]), sizes, as_int("--rounds", rounds, 1),
                          workdir, build=build, threshold=threshold, build_only=build_only or None)
    result.update({"dataset": dataset or data.stem, "data": str(data), "kb": str(kb_path)})
    write_report(output, result, summary_table([result]))


@app.command("side-by-side-table")
def side_by_side_table(
    results: List[Path] = typer.Argument(..., help="JSON files written by side-by-side"),
    output: Path = typer.Option(Path("metrics/benchmark/side_by_side.md"), "--output", help="Markdown table"),
    figure: Optional[Path] = typer.Option(None, "--figure", help="PNG: Acc@1 against mentions/s (needs the plots extra)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """One table (and a figure) from several side-by-side runs."""
    import srsly

    from ..sidebyside import accuracy_speed_figure, summary_table

    setup_logging(verbose)
    loaded = [srsly.read_json(path) for path in results]
    table = summary_table(loaded)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(table, encoding="utf-8")
    if figure is not None:
        accuracy_speed_figure(loaded, figure)
    typer.echo(table)


@app.command("benchmark-index")
def benchmark_index_command(
    pipeline: Path = typer.Argument(..., help="A saved pipeline: its concept tower encodes the KB's names"),
    kb_path: Path = typer.Argument(..., help="A large KB (e.g. `kb synth ... --names 3000000`)"),
    queries: List[Path] = typer.Option(..., "--queries", help="DocBins whose mention texts are the queries, repeatable"),
    cache_dir: Path = typer.Option(Path("training/embedding_cache"), "--cache-dir", help="Where the name vectors are kept (float16; an interrupted encoding resumes)"),
    sample: int = typer.Option(2000, "--sample", help="Distinct mention texts to query"),
    k: int = typer.Option(64, "--k", help="Recall@k against exact search"),
    indexes: str = typer.Option("hnsw_sq8,ivf_sq8", "--indexes", help="Index types to build and measure, comma-separated: hnsw_sq8 (M=32; efSearch 128/256/512) | ivf_sq8 (4 sqrt(n) lists; nprobe 32/128/512)"),
    encode_with: str = typer.Option("torch", "--encode-with", help="How the names are encoded: torch (the pipeline's concept tower) | onnx | onnx-int8 (the tower exported and quantised: about 2x faster on a CPU)"),
    output: Path = typer.Option(Path("metrics/scale/index.json"), "--output", help="JSON (a .md beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """The index at UMLS scale: encode every name of KB_PATH (once; resumable),
    build HNSW (8-bit vectors) and IVF (8-bit vectors) indexes over them and
    report build time, memory, search time and recall@k against exact search."""
    setup_logging(verbose)
    from spacy_bioel.evaluation import scale
    from spacy_bioel.index.names import NameTable
    from spacy_bioel.kb.knowledge_base import KnowledgeBase
    from spacy_bioel.errors import BioELError, Errors
    from spacy_bioel.pipeline.loading import find_linker
    from spacy_bioel.validation import as_int

    wanted = split_csv(indexes)
    settings = [s for s in scale.DEFAULT_SETTINGS if s["build"]["index_type"] in wanted]
    if not settings or len(settings) != len(wanted):
        raise BioELError(Errors.E175.format(name="--indexes", value=repr(indexes), expected=", ".join(
            s["build"]["index_type"] for s in scale.DEFAULT_SETTINGS)))
    if encode_with not in scale.ENCODERS:
        raise BioELError(Errors.E175.format(name="--encode-with", value=repr(encode_with),
                                            expected=" | ".join(scale.ENCODERS)))
    start = time.perf_counter()
    kb = KnowledgeBase.from_disk(kb_path)
    names = NameTable(kb)
    logger_rss = scale.rss_mb()
    linker = find_linker(load_pipeline(pipeline))
    encoded = scale.encode_names(linker, names, cache_dir, encode_with=encode_with)
    texts = scale.mention_queries(linker, read_docs(list(queries)), as_int("--sample", sample, 1))
    vectors = linker.runtime.encode(linker.model, texts, linker.cfg["encode_batch_size"])
    result = scale.benchmark_index(encoded["vectors"], names, vectors, settings,
                                   as_int("--k", k, 1))
    result.update({"kb": kb.name, "kb_path": str(kb_path), "names": len(names),
                   "concepts": len(names.concept_ids), "pipeline": str(pipeline),
                   "encoding": encoded["record"], "rss_after_kb_mb": logger_rss,
                   "peak_rss_mb": scale.peak_rss_mb(), "seconds": time.perf_counter() - start})
    write_report(output, result, scale.table(result))


@app.command("distill-probe")
def distill_probe(
    pipeline: Path = typer.Argument(..., help="A saved pipeline whose mention tower is the teacher (separate towers, mean pooling)"),
    train: Path = typer.Argument(..., help="Training DocBin: its mention texts join the KB's names as distillation texts"),
    dev: Path = typer.Argument(..., help="Dev DocBin with gold kb_id_: Acc@1 of teacher and student"),
    layers: str = typer.Option("0,2,4", "--layers", help="The teacher's layers the student keeps, comma-separated"),
    epochs: float = typer.Option(2.0, "--epochs", help="Passes over the distillation texts"),
    output: Path = typer.Option(Path("metrics/distill_probe.json"), "--output", help="Result JSON"),
    served: Path = typer.Option(None, "--served", help="The same weights as the default saves them (ONNX int8, int8 scan, shortcut): dev Acc@1 and ONNX Runtime time with the student's int8 graph in place of the teacher's"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """A shallower mention tower distilled from the trained one, scored on dev in memory
    (issue 45's next lever; only the student's int8 graph is written, with --served)."""
    setup_logging(verbose)
    from ..distill_probe import probe

    result = probe(pipeline, train, dev, [int(x) for x in layers.split(",") if x.strip()], epochs,
                   served=served, output=output)
    write_json(output, result)
    if served is not None:
        typer.echo(f"served: teacher dev Acc@1 {100 * result['served']['teacher_dev_acc@1']:.2f}, "
                   f"student {100 * result['served']['student_dev_acc@1']:.2f}; ONNX Runtime "
                   f"{result['served']['onnx_s']}")
    typer.echo(f"teacher dev Acc@1 {100 * result['teacher_dev_acc@1']:.2f}, student "
               f"{100 * result['student_dev_acc@1']:.2f} (layers {result['layers']}); encoding "
               f"{result['timed_texts']} texts: teacher {result['encode_s_per_tower']['teacher']} s, "
               f"student {result['encode_s_per_tower']['student']} s")


@app.command("embedded-default")
def embedded_default_command(
    output: Path = typer.Argument(Path("results/natural/embedded_default.json"), help="JSON (a .md beside it)"),
    kb_path: str = typer.Option("embedded:doid", "--kb", help="The KB `link` links to"),
    encoder: str = typer.Option("embedded:all-MiniLM-L6-v2", "--encoder"),
    calls: int = typer.Option(3, "--calls", help="Calls per path (the first builds)", min=2),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks for errors"),
) -> None:
    """Time `link` with no trained pipeline: the first call and the later ones, for
    the saved default pipeline (ONNX, int8 scan) against the untrained PyTorch one."""
    setup_logging(verbose)
    from ..embedded_default import run, table

    result = run(kb_path, encoder, calls)
    write_report(output, result, table(result))


@app.command("scan-probe")
def scan_probe(
    pipeline: Path = typer.Argument(..., help="A saved pipeline whose name index is int8 or flat_int8"),
    data: Path = typer.Argument(..., help="DocBin: its distinct gold mention texts are the queries"),
    output: Path = typer.Option(Path("metrics/scan_probe.json"), "--output", help="JSON (a .md beside it)"),
    call: int = typer.Option(64, "--call", min=1, help="Queries a scan call (the store's own default)"),
    pool: int = typer.Option(256, "--pool", min=1, help="Names proposed a query"),
    repeats: int = typer.Option(3, "--repeats", min=1),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """The int8 name scan on a pipeline's own mentions: its time, its agreement with the
    exact search, and whether a query's answer moves with the queries beside it."""
    setup_logging(verbose)
    from ..scan_probe import markdown, probe

    result = probe(pipeline, data, call=call, pool=pool, repeats=repeats)
    write_report(output, result, markdown(result))


@app.command("tower-probe")
def tower_probe(
    data: Path = typer.Argument(..., help="DocBin: its distinct gold mention texts are encoded"),
    reference: Path = typer.Option(..., "--reference", help="The pipeline whose embeddings are the reference (e.g. restaged with spacy-bioel.TorchRuntime.v1)"),
    pipelines: List[str] = typer.Option(..., "--pipeline", help="LABEL=PIPELINE, repeatable"),
    output: Path = typer.Option(Path("metrics/tower_probe.json"), "--output", help="JSON (a .md beside it)"),
    repeats: int = typer.Option(3, "--repeats", min=1),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Mention towers on the same texts: cosine to a reference tower, texts a second,
    and whether a text's embedding moves with the texts encoded beside it."""
    setup_logging(verbose)
    from ._app import labelled
    from ..tower_probe import markdown, probe

    result = probe(data, reference, {k: Path(v) for k, v in labelled(pipelines, "PIPELINE", "--pipeline").items()},
                   repeats=repeats)
    write_report(output, result, markdown(result))


@app.command("int8-variant", context_settings={"allow_extra_args": True,
                                                 "ignore_unknown_options": True})
def int8_variant(
    ctx: typer.Context,
    variant: str = typer.Argument(..., help="w7 (7-bit weights) or a7 (7-bit activations)"),
    config: Path = typer.Argument(..., help="The config init-pipeline builds, e.g. configs/linker_cpu.cfg"),
    output: Path = typer.Argument(..., help="Directory for the pipeline"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """`python -m spacy_bioel init-pipeline CONFIG OUTPUT --paths.x y` with the
    mention tower's int8 export narrowed to 7 bits on one side (bench/int8_variant.py)."""
    from spacy.cli._util import parse_config_overrides

    from ..int8_variant import init_pipeline

    setup_logging(verbose)
    init_pipeline(variant, config, output, parse_config_overrides(ctx.args))
    typer.echo(f"Saved the {variant} pipeline to {output}")


@app.command("int8-variant-export")
def int8_variant_export(
    variant: str = typer.Argument(..., help="w8 (the package's export), w7 or a7"),
    pipeline: Path = typer.Argument(..., help="A trained pipeline (model-last)"),
    output: Path = typer.Argument(..., help="Directory for the pipeline"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """A trained pipeline with its mention tower exported again as VARIANT, the
    rest as saved (bench/int8_variant.py)."""
    from ..int8_variant import export_variant

    setup_logging(verbose)
    count = export_variant(variant, pipeline, output)
    typer.echo(f"Saved {pipeline} with {count} mention tower(s) exported as {variant} to {output}")


@app.command("int8-variants-seeds")
def int8_variants_seeds(
    folder: Path = typer.Argument(..., help="Where evaluate wrote {corpus}_s{seed}_dev_{variant}.json"),
    corpus: str = typer.Option("ncbi", "--corpus"),
    seeds: str = typer.Option("0,1,2", "--seeds", help="Comma-separated seeds"),
    variants: str = typer.Option("w8,a7", "--variants", help="Comma-separated; the first is the baseline"),
    output: Path = typer.Option(..., "--output", help="JSON to write (and a .md beside it)"),
) -> None:
    """Each int8 export's dev Acc@1 per seed, mean ± std, and paired against the
    first variant (bench/int8_variant.py, `int8-variants-trained`)."""
    from ..int8_variant import read_seed_reports, seeds_markdown, seeds_summary

    names = [v.strip() for v in variants.split(",") if v.strip()]
    reports = read_seed_reports(folder, corpus, [int(s) for s in seeds.split(",")], names)
    summary = seeds_summary(reports, baseline=names[0])
    write_report(output, summary, seeds_markdown(
        summary, f"Trained linkers ({corpus}) with their mention tower exported as {', '.join(names)}"))


@app.command("train-step-speed", context_settings={"allow_extra_args": True,
                                                     "ignore_unknown_options": True})
def train_step_speed(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., help="A training config (configs/linker_cpu.cfg); "
                                                 "spaCy-style overrides after it, e.g. "
                                                 "--paths.train T.spacy"),
    chunks: str = typer.Option("1,4", "--chunks", help="Comma-separated model.cpu_length_chunks "
                                                       "settings to compare (the first is the "
                                                       "baseline)"),
    steps: int = typer.Option(30, "--steps", help="Training steps a run"),
    repeats: int = typer.Option(3, "--repeats", help="Runs a setting, interleaved"),
    component: str = typer.Option("bioel_linker", "--component"),
    output: Path = typer.Option(Path("metrics/train_speed.json"), "--output",
                                help="JSON report (a markdown table beside it)"),
    verbose: bool = typer.Option(False, "--verbose", "-V", help="Debug logging; tracebacks"),
) -> None:
    """Seconds a training step of the bi-encoder with each cpu_length_chunks
    setting, in one process: the pipeline is initialised once (the name index
    encoded once), then the settings take turns on the config's first training
    batches, each run `steps` updates. Steps change the weights, so later runs
    start from a further-trained model: the runs are interleaved so that every
    setting meets the same drift."""
    from itertools import islice

    from spacy.cli._util import parse_config_overrides
    from spacy.schemas import ConfigSchemaTraining
    from spacy.training.initialize import init_nlp
    from spacy.util import load_config, registry, resolve_dot_names

    from spacy_bioel.encoders.thinc_biencoder import torch_module
    from spacy_bioel.validation import as_int

    setup_logging(verbose)
    settings = [as_int("--chunks", value, 1) for value in split_csv(chunks)]
    steps, repeats = as_int("--steps", steps, 1), as_int("--repeats", repeats, 1)
    config = load_config(config_path, overrides=parse_config_overrides(ctx.args),
                         interpolate=False)
    nlp = init_nlp(config)
    interpolated = nlp.config.interpolate()
    training = registry.resolve(interpolated["training"], schema=ConfigSchemaTraining)
    (train_corpus,) = resolve_dot_names(interpolated, [training["train_corpus"]])
    batches = list(islice(training["batcher"](train_corpus(nlp)), steps))
    module = torch_module(nlp.get_pipe(component).model)
    optimizer = training["optimizer"]
    seconds: dict = {value: [] for value in settings}
    for repeat in range(repeats):
        for value in settings:
            module.cpu_length_chunks = value
            started = time.perf_counter()
            for batch in batches:
                nlp.update(batch, drop=training["dropout"], sgd=optimizer, losses={})
            seconds[value].append((time.perf_counter() - started) / len(batches))
            typer.echo(f"cpu_length_chunks {value}, run {repeat + 1}: "
                       f"{seconds[value][-1]:.3f} s a step")
    rows, table = step_speed_rows(
        seconds, "cpu_length_chunks",
        f"Training step speed: {config_path}, {len(batches)} batches "
        f"({sum(len(b) for b in batches)} docs), {repeats} run(s) a setting, interleaved")
    write_report(output, {"config": str(config_path), "overrides": ctx.args,
                          "batches": len(batches), "repeats": repeats, "rows": rows},
                 table)

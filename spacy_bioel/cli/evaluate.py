"""`evaluate LINKER DATA.spacy --kb KB`: the one evaluation harness."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import List

import typer

from ._app import app, read_docs, setup_logging, write_json

logger = logging.getLogger(__name__)


def parse_settings(settings: List[str]) -> dict:
    """KEY=VALUE strings -> dict with JSON-parsed values ('false' -> False, '0.1' -> 0.1)."""
    from ..errors import BioELError, Errors

    out = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BioELError(Errors.E175.format(name="--set", value=repr(item),
                                                expected="KEY=VALUE, e.g. ranker.use_knn=false"))
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


TUNED_KEYS = ("linker_weight", "gate", "nil_threshold")


def tuned_settings(path: Path, row: str) -> dict:
    """The reranker settings of one row ('best' or 'best_ungated') of a
    `tune-reranker` JSON, as reranker.OPTION overrides (E175 when absent)."""
    import srsly

    from ..errors import BioELError, Errors

    try:
        chosen = srsly.read_json(path).get(row)
    except (ValueError, OSError, AttributeError) as err:
        raise BioELError(Errors.E175.format(name="--tuned", value=str(path),
                                            expected=f"a tune-reranker JSON ({err})"))
    if not isinstance(chosen, dict) or not all(key in chosen for key in TUNED_KEYS):
        raise BioELError(Errors.E175.format(name="--tuned-row", value=f"{row!r} in {path}",
                                            expected="'best' or 'best_ungated' of tune-reranker"))
    return {f"reranker.{key}": chosen[key] for key in (*TUNED_KEYS, "use_nil_option")
            if key in chosen}  # use_nil_option: rows tuned since it exists


@app.command("evaluate")
def evaluate(
    linker: str = typer.Argument(..., help="A saved pipeline directory, or a baseline: exact | tfidf"),
    data: Path = typer.Argument(..., help="Test DocBin (.spacy) with gold kb_id_ on doc.ents"),
    kb_path: Path = typer.Option(..., "--kb", help="The KB (.bioelkb)"),
    train: List[Path] = typer.Option([], "--train", help="Train/dev DocBins: seen/unseen, refined split, and the kb+train dictionary"),
    dictionary: str = typer.Option("kb", "--dictionary", help="kb (KB names only) | kb+train (plus --train mention strings)"),
    output: Path = typer.Option(Path("metrics.json"), "--output", help="Metrics JSON (a .md table is written beside it)"),
    k: int = typer.Option(64, "--k", help="Candidates per mention (recall@k uses this k)"),
    n_bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for 95% intervals"),
    dataset: str = typer.Option("", "--dataset", help="Dataset label for tables"),
    label: str = typer.Option("", "--label", help="Linker label for tables (default: the linker name)"),
    kb_ents_attr: str = typer.Option("kb_ents", "--kb-ents-attr", help="Span extension a pipeline writes"),
    settings: List[str] = typer.Option([], "--set", help="bioel_linker stage parameter STAGE.PARAM=VALUE (e.g. ranker.use_knn=false, nil.threshold=0.4), repeatable"),
    tuned: Path = typer.Option(None, "--tuned", help="A tune-reranker JSON: evaluate with the reranker settings of its --tuned-row (before any --set)"),
    tuned_row: str = typer.Option("best", "--tuned-row", help="best (as tuned) | best_ungated (the best setting that reranks every mention)"),
    held_out_knn: bool = typer.Option(False, "--held-out-knn", help="Leave each document's own mentions out of the kNN datastore (how the linker does on its own training documents as if unseen: the reranker's training candidates)"),
    hierarchy_kb: Path = typer.Option(None, "--hierarchy-kb", help="A KB whose is_a relations classify wrong answers as ancestor / descendant / sibling of the gold (default: --kb; e.g. CTD diseases for MEDIC 2012, which has no parents)"),
    n_errors: int = typer.Option(0, "--errors", help="List this many most frequent errors in the .md (the JSON always has 20)"),
    word_weight: float = typer.Option(0.25, "--word-weight", help="tfidf: weight of word unigrams (0.25: chosen on NCBI and BC5CDR dev, see README)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Link gold mentions and report Acc@k, MAP, subsets, NIL and failure stages."""
    from ..encoders.int8_exact import int8_split_here
    from ..errors import BioELError, Errors
    from ..pipeline.mentions import HELD_OUT_KNN, has_alnum
    from ..evaluation.linkers import link_linker, training_names
    from ..evaluation.metrics import evaluate_records
    from ..evaluation.records import annotate_subsets
    from ..evaluation.report import metrics_table
    from ..evaluation.linkers import BASELINES
    from ..kb.knowledge_base import KnowledgeBase

    from ..outputs import protect_inputs

    setup_logging(verbose)
    protect_inputs("evaluate --output", [output, output.with_suffix(".md")],
                   [data, kb_path, tuned, hierarchy_kb, *train], [linker])
    if dictionary not in ("kb", "kb+train"):
        raise BioELError(Errors.E106.format(value=dictionary))
    if dictionary == "kb+train" and not train:
        raise BioELError(Errors.E107)
    kb = KnowledgeBase.from_disk(kb_path)
    docs = read_docs([data])
    if held_out_knn:
        for doc in docs:
            doc.user_data[HELD_OUT_KNN] = True
    if not any(e.kb_id_ for d in docs for e in d.ents):
        raise BioELError(Errors.E100.format(path=data))
    train_docs = read_docs(list(train)) if train else []
    start = time.perf_counter()
    extra, parsed = [], None
    if linker in BASELINES:
        extra = training_names(train_docs) if dictionary == "kb+train" else []
    elif Path(linker).is_dir():
        parsed = {**(tuned_settings(tuned, tuned_row) if tuned else {}),
                  **parse_settings(settings)}
        settings = [f"{key}={json.dumps(value)}" for key, value in parsed.items()]
        use_knn = parsed.get("ranker.use_knn", parsed.get("use_knn", True))
        dictionary = "kb + kNN datastore" if use_knn else "kb (model only)"
    records, reranking, build_seconds = link_linker(linker, docs, kb, extra, k=k,
                                                    word_weight=word_weight,
                                                    kb_ents_attr=kb_ents_attr, overrides=parsed)
    seconds = time.perf_counter() - start
    written = max((len(r.candidates) for r in records), default=0)
    if parsed is not None and 0 < written < k:  # e.g. top_k = 16: recall@64 would read as recall@16
        logger.info("The linker wrote at most %d candidates per mention: recall@%d is reported, "
                    "not recall@%d (raise its top_k and retrieve_k to see more)", written, written, k)
        k = written
    annotate_subsets(records, kb, train_docs)
    report = evaluate_records(records, recall_k=k, n_bootstrap=n_bootstrap,
                              kb=KnowledgeBase.from_disk(hierarchy_kb) if hierarchy_kb else kb)
    report["meta"] = {
        "linker": label or (Path(linker).name if Path(linker).is_dir() else linker),
        "data": str(data), "dataset": dataset or data.stem, "kb": str(kb_path),
        "kb_name": kb.name, "kb_concepts": len(kb), "dictionary": dictionary,
        "train": [str(p) for p in train], "k": k, "settings": list(settings), "n_bootstrap": n_bootstrap,
        "held_out_knn": held_out_knn, "hierarchy_kb": str(hierarchy_kb or kb_path),
        "index_build_seconds": round(build_seconds, 2), "total_seconds": round(seconds, 2),
        "mentions_per_second": round(len(records) / max(seconds - build_seconds, 1e-9), 1),
        # NIL without encoding in bioel_linker (nil_without_alnum); no baseline matches them
        "mentions_without_alnum": sum(1 for r in records if not has_alnum(r.text)),
        # whether this CPU's int8 graphs ran split into exact halves (slower; None: no onnxruntime)
        "int8_split": int8_split_here(),
    }
    if reranking is not None:
        report["reranker"] = reranking
    write_json(output, report)
    title = f"{report['meta']['dataset']} | {report['meta']['linker']} | dictionary={dictionary}"
    table = metrics_table(report, title)
    if n_errors > 0 and report["frequent_errors"]:
        table += (f"\nMost frequent errors (of {sum(report['failure_stages'].values()) - report['failure_stages']['correct']} "
                  "wrong linkable mentions):\n\n| count | mention | gold | predicted | stage | gold rank |\n"
                  "|---:|---|---|---|---|---:|\n")
        for error in report["frequent_errors"][:n_errors]:
            table += (f"| {error['count']} | {error['text']} | {error['gold']} | {error['predicted']} | "
                      f"{error['stage']} | {error['gold_rank'] or '–'} |\n")
    if reranking is not None:
        k = reranking["top_k"]
        table += (f"\nReranker `{reranking['name']}`: top {k} candidates fed, their recall@{k} "
                  f"{100 * reranking[f'candidate_recall@{k}']:.1f} (its ceiling); "
                  f"{100 * reranking['share_reranked']:.1f}% of the mentions reranked, "
                  f"{100 * reranking['share_gated']:.1f}% left to the linker by the gate.\n")
    output.with_suffix(".md").write_text(table, encoding="utf-8")
    typer.echo(table)

"""The side-by-side benchmark: bioel_linker pipelines and scispaCy's linker over
the same KB names and the same gold mentions, each run in a fresh process of its
own environment, alternately, for several rounds and input sizes.

Per system and input size it reports the build time (once: scispaCy's TF-IDF +
HNSW index over the KB's aliases; for a pipeline, its name index, datastore and
exported encoder from the KB and the weights), the load time, mentions/s (min
and median over rounds), the peak RSS of the process and Acc@1 on the gold
mentions, with ratios against scispaCy. Every number is read off one
invocation; nothing is asserted on timing.

Acc@1 counts a mention as right when the system's top candidate (the first
`Span._.kb_ents` entry, as `evaluate` reads it; for scispaCy none above its
threshold counts as wrong) is one of the mention's gold ids.
"""
from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from spacy.tokens import Doc

from spacy_bioel.errors import BioELError, Errors
from spacy_bioel.kb.ids import split_gold_ids
from spacy_bioel.progress import progress_bar

from .machine import where_line

logger = logging.getLogger(__name__)
WORKERS = Path(__file__).parent
SCISPACY = "scispacy"


@dataclass
class System:
    """A linker in the benchmark.

    label (str): Its name in the tables.
    kind (str): 'bioel' (a saved pipeline) or 'scispacy'.
    python (str): The interpreter of its environment.
    pipeline (Optional[str]): The pipeline folder (bioel).
    kb_jsonl, index_dir (Optional[str]): scispaCy's KB file and index folder.
    """
    label: str
    kind: str
    python: str
    pipeline: Optional[str] = None
    kb_jsonl: Optional[str] = None
    index_dir: Optional[str] = None
    build: Dict[str, Any] = field(default_factory=dict)
    door: Optional[str] = None  # how the pipeline was made (add_pipe, a config, a package, ...)


def parse_system(spec: str) -> System:
    """'LABEL=PIPELINE' or 'LABEL=PIPELINE@PYTHON' (the interpreter of another
    environment, e.g. one without PyTorch); E175 for another form."""
    label, sep, rest = spec.partition("=")
    path, _, python = rest.partition("@")
    if not sep or not label or not path:
        raise BioELError(Errors.E175.format(name="--pipeline", value=repr(spec),
                                            expected="LABEL=PIPELINE or LABEL=PIPELINE@PYTHON"))
    return System(label, "bioel", python or sys.executable, pipeline=path)


def check_same_code(system: System, timeout: float = 120) -> None:
    """E181 when `system` runs in another environment whose installed spacy_bioel is
    not this checkout's (a base install built before the last change would time
    other code): every .py file of the package is compared."""
    import hashlib
    import tempfile

    import spacy_bioel

    if system.kind != "bioel" or os.path.abspath(system.python) == os.path.abspath(sys.executable):
        return
    probe = "import spacy_bioel, os; print(os.path.dirname(spacy_bioel.__file__))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as neutral:  # not this checkout's folder on sys.path
        python = os.path.abspath(system.python) if os.sep in system.python else system.python
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=neutral)
    command = f"{system.python} (import spacy_bioel)"
    if done.returncode != 0:
        raise BioELError(Errors.E181.format(command=command, problem=done.stderr[-800:]))

    def digests(folder: Path) -> Dict[str, str]:
        return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*.py")) if "__pycache__" not in p.parts}

    theirs = digests(Path(done.stdout.strip().splitlines()[-1]))
    ours = digests(Path(spacy_bioel.__file__).parent)
    differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
    if differ:
        raise BioELError(Errors.E181.format(command=command, problem=(
            f"its spacy_bioel ({done.stdout.strip()}) is not this checkout's: {len(differ)} of "
            f"{len(ours)} source files differ ({', '.join(differ[:3])}); install this checkout "
            "there again (spacy project run deploy-venv)")))


def write_inputs(docs: Sequence[Doc], repeats: Sequence[int], folder: Path
                 ) -> Dict[int, Path]:
    """One DOCS.jsonl per input size: the docs repeated `r` times, each as its
    tokens ("words", "spaces") and entities as token spans ("spans"), so that
    every system links exactly the same mentions whatever its own tokenizer
    would make of the text (BC5CDR has mentions that share a token once
    re-tokenised); "text" and character "ents" are kept for reading."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"text": doc.text, "words": [token.text for token in doc],
                         "spaces": [bool(token.whitespace_) for token in doc],
                         "spans": [[e.start, e.end, e.label_] for e in doc.ents],
                         "ents": [[e.start_char, e.end_char, e.label_] for e in doc.ents]})
             for doc in docs]
    paths = {}
    for r in repeats:
        paths[r] = folder / f"docs_x{r}.jsonl"
        paths[r].write_text("\n".join(lines * r) + "\n", encoding="utf-8")
    return paths


def run_worker(command: List[str], out: Path, timeout: float) -> Dict[str, Any]:
    """Run a worker process; E181 with its last output when it fails."""
    out.unlink(missing_ok=True)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    # bytecode written and read, as for installed packages (pip compiles them): a worker
    # running this checkout's sources would otherwise time their compilation at every import
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise BioELError(Errors.E181.format(command=" ".join(command), problem=f"over {timeout} s"))
    if done.returncode != 0 or not out.exists():
        raise BioELError(Errors.E181.format(command=" ".join(command),
                                            problem=(done.stderr or done.stdout)[-1500:]))
    return json.loads(out.read_text(encoding="utf-8"))


def build_system(system: System, workdir: Path, timeout: float) -> Dict[str, Any]:
    """Build scispaCy's index (unless `index_dir` already holds one: its build.json
    is reused) or time the rebuild of a pipeline's derived parts (in this
    environment: building encodes with PyTorch, which a serving environment
    may not have)."""
    if system.kind == SCISPACY:
        index, record = Path(system.index_dir), Path(system.index_dir) / "build.json"
        if record.exists() and (index / "nmslib_index.bin").exists():
            return {**json.loads(record.read_text(encoding="utf-8")), "reused": True}
        result = run_worker([system.python, str(WORKERS / "scispacy_worker.py"), "build",
                             system.kb_jsonl, str(index), str(workdir / "build.json")],
                            workdir / "build.json", timeout)
        record.write_text(json.dumps(result), encoding="utf-8")
        return result
    return run_worker([sys.executable, str(WORKERS / "bioel_worker.py"), "build", system.pipeline,
                       str(workdir / "build.json")], workdir / "build.json", timeout)


def link_command(system: System, docs: Path, out: Path, threshold: float) -> List[str]:
    if system.kind == SCISPACY:
        return [system.python, str(WORKERS / "scispacy_worker.py"), "link", system.kb_jsonl,
                system.index_dir, str(docs), str(out), "--threshold", str(threshold)]
    return [system.python, str(WORKERS / "bioel_worker.py"), "link", system.pipeline, str(docs),
            str(out)]


def accuracy(predictions: Sequence[str], gold: Sequence[List[str]],
             scored: Optional[Sequence[bool]] = None) -> Optional[float]:
    """Acc@1 over the mentions with gold ids, and with `scored` only those it
    marks (None when there are none)."""
    marks = scored if scored is not None else [True] * len(gold)
    right = [p in g for p, g, m in zip(predictions, gold, marks) if g and m]
    return sum(right) / len(right) if right else None


def on_test_part(docs: Sequence[Doc]) -> Optional[List[bool]]:
    """Per mention, whether its document comes from a test split, when the docs
    record their source (`natural-corpus`: user_data "bioel_source", e.g.
    "ncbi/test"): a trained linker's kNN datastore holds the training mentions,
    so Acc@1 is read on the test part only. None when no doc records one."""
    from .natural import SOURCE_KEY

    if not any(SOURCE_KEY in doc.user_data for doc in docs):
        return None
    return [str(doc.user_data.get(SOURCE_KEY, "")).endswith("/test") for doc in docs for _ in doc.ents]


def side_by_side(systems: List[System], docs: Sequence[Doc], repeats: Sequence[int], rounds: int,
                 workdir: Path, *, build: bool = True, threshold: float = 0.7,
                 timeout: float = 3600.0, build_only: Optional[Sequence[str]] = None
                 ) -> Dict[str, Any]:
    """Run every system on every input size, `rounds` times, alternating the
    order each round; RETURNS the raw runs and the summary (see `summarize`).
    With `build_only` (labels), only those systems' builds are timed."""
    workdir.mkdir(parents=True, exist_ok=True)
    inputs = write_inputs(docs, repeats, workdir / "inputs")
    gold = [split_gold_ids(e.kb_id_) for doc in docs for e in doc.ents]
    scored = on_test_part(docs)
    if build:
        to_build = [s for s in systems if build_only is None or s.label in build_only]
        for system in progress_bar(to_build, desc="Building", unit=" systems"):
            system.build = build_system(system, workdir, timeout)
            logger.info("%s: built in %.1f s", system.label, system.build["build_s"])
    runs = []
    total = rounds * len(repeats) * len(systems)
    with progress_bar(total=total, desc="Linking", unit=" runs") as bar:
        for round_ in range(rounds):
            order = systems if round_ % 2 == 0 else systems[::-1]
            for r in repeats:
                for system in order:
                    out = workdir / "run.json"
                    result = run_worker(link_command(system, inputs[r], out, threshold), out, timeout)
                    predictions = result.pop("predictions")
                    if len(predictions) != len(gold) * r:
                        raise BioELError(Errors.E181.format(
                            command=system.label, problem=f"{len(predictions)} predictions for "
                            f"{len(gold) * r} mentions"))
                    runs.append({"round": round_, "repeat": r, "system": system.label,
                                 **result, "mentions_per_s": result["mentions"] / result["link_s"],
                                 "acc@1": accuracy(predictions, gold * r,
                                                   None if scored is None else scored * r)})
                    bar.update(1)
    return {"systems": [asdict(s) for s in systems], "repeats": list(repeats), "rounds": rounds,
            "mentions": len(gold), "documents": len(docs),
            "acc_scope": "all mentions" if scored is None else
            f"the {sum(scored):,} mentions of the test documents",
            "runs": runs, "summary": summarize(runs, systems)}


def summarize(runs: List[Dict[str, Any]], systems: List[System]) -> List[Dict[str, Any]]:
    """Per (input size, system): build s, median load s, min and median mentions/s,
    the largest peak RSS, Acc@1 (equal in every round, else the median and a
    flag) and ratios against scispaCy's row of the same input size."""
    rows = []
    builds = {s.label: s.build.get("build_s") for s in systems}
    for r in sorted({run["repeat"] for run in runs}):
        scispacy = None
        for system in systems:
            mine = [run for run in runs if run["repeat"] == r and run["system"] == system.label]
            if not mine:
                continue
            accs = [run["acc@1"] for run in mine]
            row = {"repeat": r, "system": system.label, "kind": system.kind,
                   "mentions": mine[0]["mentions"], "build_s": builds[system.label],
                   "load_s": statistics.median(run["load_s"] for run in mine),
                   "import_s": statistics.median(run["import_s"] for run in mine),
                   # what a fresh process waits for: each worker splits import and
                   # load its own way (scispaCy's imports its linker modules first,
                   # ours reaches the plugin through spacy.load's entry points)
                   "start_s": statistics.median(run["import_s"] + run["load_s"] for run in mine),
                   "mentions_per_s_min": min(run["mentions_per_s"] for run in mine),
                   "mentions_per_s_median": statistics.median(run["mentions_per_s"] for run in mine),
                   "peak_rss_mb": max(run["peak_rss_mb"] for run in mine),
                   "rss_after_import_mb": max(run["rss_after_import_mb"] for run in mine),
                   "acc@1": statistics.median(a for a in accs if a is not None) if any(
                       a is not None for a in accs) else None,
                   "acc_same_every_round": len(set(accs)) == 1, "rounds": len(mine),
                   "counts": mine[-1].get("counts", {}),
                   "stage_shares": stage_shares(mine),
                   "where": {**mine[-1].get("where", {}), "door": system.door}}
            if system.kind == SCISPACY:
                scispacy = row
            rows.append(row)
        for row in rows:
            if row["repeat"] == r and scispacy is not None and row is not scispacy:
                row["speed_x_scispacy"] = row["mentions_per_s_median"] / scispacy["mentions_per_s_median"]
                row["rss_x_scispacy"] = row["peak_rss_mb"] / scispacy["peak_rss_mb"]
                row["load_x_scispacy"] = row["load_s"] / scispacy["load_s"]
                row["start_minus_scispacy_s"] = row["start_s"] - scispacy["start_s"]
    return rows


# (label, how its seconds are read from a run's `timings` and link_s)
STAGES = (
    ("tokenisation", lambda t, link: t.get("tokenize", 0.0)),
    ("encoder", lambda t, link: t.get("encode", 0.0) - t.get("tokenize", 0.0)),
    ("name search", lambda t, link: t.get("search", 0.0)),
    ("kNN", lambda t, link: t.get("knn", 0.0)),
    ("rank + NIL", lambda t, link: t.get("decide", 0.0)),
    ("shortcut + abbreviations", lambda t, link: t.get("early", 0.0)),
    ("rest of the linker", lambda t, link: t.get("linker", 0.0) - sum(
        t.get(k, 0.0) for k in ("encode", "search", "knn", "decide", "early"))),
    ("spaCy and the doc stream", lambda t, link: link - t.get("linker", 0.0)),
)


def stage_shares(runs: Sequence[Dict[str, Any]]) -> Optional[Dict[str, float]]:
    """The share of the linking time per stage (median over the rounds), from
    the linker's `timings` (None for a system that records none, scispaCy's)."""
    timed = [run for run in runs if run.get("timings")]
    if not timed:
        return None
    return {label: statistics.median(max(0.0, read(run["timings"], run["link_s"])) / run["link_s"]
                                     for run in timed) for label, read in STAGES}


def stage_table(results: Sequence[Dict[str, Any]]) -> str:
    """A markdown table of the share of linking time per stage of every system
    that records it (one row per data, input size and system)."""
    lines = ["| data | system | " + " | ".join(label for label, _ in STAGES) + " |",
             "|---|---|" + "---:|" * len(STAGES)]
    for result in results:
        for row in result["summary"]:
            shares = row.get("stage_shares")
            if shares:
                lines.append(f"| {(result.get('dataset', '') + ' x' + str(row['repeat'])).strip()} | "
                             f"{row['system']} | " +
                             " | ".join(f"{100 * shares[label]:.0f}%" for label, _ in STAGES) + " |")
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def summary_table(results: Sequence[Dict[str, Any]]) -> str:
    """A markdown table of one or more `side_by_side` results (their 'dataset' labels)."""
    lines = ["| data | mentions | system | build s | load s | import + load s | mentions/s min "
             "| mentions/s median | peak RSS MB | Acc@1 | speed x scispaCy | RSS x scispaCy |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def number(value, digits=1):
        return "-" if value is None else f"{value:,.{digits}f}"

    for result in results:
        for row in result["summary"]:
            lines.append(
                f"| {(result.get('dataset', '') + ' x' + str(row['repeat'])).strip()} | {row['mentions']:,} | "
                f"{row['system']} | {number(row['build_s'])} | {number(row['load_s'], 2)} | "
                f"{number(row.get('start_s'), 2)} | {number(row['mentions_per_s_min'], 0)} | "
                f"{number(row['mentions_per_s_median'], 0)} | "
                f"{number(row['peak_rss_mb'], 0)} | "
                f"{number(None if row['acc@1'] is None else 100 * row['acc@1'])}"
                f"{'' if row['acc_same_every_round'] else '*'} | "
                f"{number(row.get('speed_x_scispacy'), 2)} | {number(row.get('rss_x_scispacy'), 2)} |")
    scopes = [f"Acc@1 of {r.get('dataset', '')}: {r['acc_scope']}." for r in results
              if r.get("acc_scope", "all mentions") != "all mentions"]
    stages = stage_table(results)
    ran = where_lines(results)
    return "\n".join(lines + ([""] + scopes if scopes else []) + ran) + "\n" + (
        "\nShare of the linking time per stage (median over the rounds):\n\n" + stages if stages else "")


def where_lines(results: Sequence[Dict[str, Any]]) -> List[str]:
    """'Where each system ran' lines (CPU, install, threads, door), once per
    distinct system and place."""
    seen: Dict[str, None] = {}
    for result in results:
        for row in result["summary"]:
            line = where_line(row.get("where"))
            if line:
                seen.setdefault(f"- {row['system']}: {line}", None)
    return (["", "Where each system ran:", ""] + list(seen)) if seen else []


def accuracy_speed_figure(results: Sequence[Dict[str, Any]], path: Path) -> None:
    """Acc@1 against median mentions/s (log scale), one panel per dataset, one
    point per system and input size (needs the `plots` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5), squeeze=False)
    for ax, result in zip(axes[0], results):
        systems = list(dict.fromkeys(row["system"] for row in result["summary"]))
        for i, label in enumerate(systems):
            rows = [row for row in result["summary"] if row["system"] == label]
            xs = [row["mentions_per_s_median"] for row in rows]
            ys = [100 * (row["acc@1"] or 0) for row in rows]
            ax.plot(xs, ys, marker="o" if rows[0]["kind"] == SCISPACY else "s", linestyle=":",
                    label=label, color=f"C{i}")
            for row, x, y in zip(rows, xs, ys):
                ax.annotate(f"x{row['repeat']}", (x, y), textcoords="offset points",
                            xytext=(4, 4), fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel("mentions/s (median of rounds; log scale)")
        ax.set_ylabel("Acc@1 (%)")
        ax.set_title(result.get("dataset", ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


__all__ = ["System", "parse_system", "side_by_side", "summarize", "summary_table", "stage_shares",
           "stage_table", "STAGES",
           "accuracy_speed_figure", "write_inputs", "accuracy", "on_test_part"]

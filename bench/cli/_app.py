"""The lab's Typer application (`python -m bench`): the helpers are the user
CLI's, so both print errors and progress the same way."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import typer

from spacy_bioel.cli import (load_pipeline, read_docs, run_app, save_tuning,  # noqa: F401
                                  setup_logging, split_csv, write_json)

app = typer.Typer(name="bench", add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="The spacy-bioel lab: measurements and experiments behind docs/results.md "
                       "(tables, benchmarks, ablations, reliability, pre-training, BioFEG). "
                       "Run from a checkout; project.yml calls these commands. The library's "
                       "own commands are 'python -m spacy_bioel'.")
kb_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Lab knowledge bases.")
app.add_typer(kb_app, name="kb")


def labelled(values: List[str], what: str, hint: str) -> Dict[str, str]:
    """LABEL=VALUE arguments as {LABEL: VALUE}; BadParameter names a malformed one."""
    out = {}
    for value in values:
        label, sep, rest = value.partition("=")
        if not sep or not label or not rest:
            raise typer.BadParameter(f"{value!r}: give LABEL={what}", param_hint=hint)
        out[label] = rest
    return out


def fields(value: str, form: str, hint: Optional[str] = None) -> List[str]:
    """`value` split at '=' into the non-empty fields `form` names (e.g.
    "LABEL=PIPELINE=TEST.spacy"); BadParameter naming `form` otherwise."""
    parts = value.split("=")
    if len(parts) != form.count("=") + 1 or not all(parts):
        raise typer.BadParameter(f"{value!r}: give {form}", param_hint=hint)
    return parts


def write_report(output: Path, result: Any, table: str) -> None:
    """`result` as JSON at `output`, its markdown `table` beside it (.md), and the table printed."""
    write_json(output, result)
    output.with_suffix(".md").write_text(table, encoding="utf-8")
    typer.echo(table)


def step_speed_rows(seconds: Dict[int, List[float]], setting: str, title: str,
                    names_per_step: Optional[int] = None) -> Tuple[List[dict], str]:
    """Rows {setting, seconds_per_step, median_seconds_per_step, speedup (over
    the first setting)[, names_per_s]} of timed runs, and their markdown table."""
    import statistics

    baseline = statistics.median(next(iter(seconds.values())))
    rows = []
    for value, runs in seconds.items():
        median = statistics.median(runs)
        row = {setting: value, "seconds_per_step": runs, "median_seconds_per_step": median,
               "speedup": baseline / median}
        if names_per_step:
            row["names_per_s"] = names_per_step / median
        rows.append(row)
    header = [setting, "s a step (median)"] + (["names/s"] if names_per_step else []) + ["speed-up"]
    lines = [title, "", "| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    for row in rows:
        cells = [str(row[setting]), f"{row['median_seconds_per_step']:.3f}"]
        cells += [f"{row['names_per_s']:.0f}"] if names_per_step else []
        lines.append("| " + " | ".join(cells + [f"{row['speedup']:.2f}x"]) + " |")
    return rows, "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> None:
    """Run the lab CLI: coded errors print as one line, as in `python -m spacy_bioel`."""
    run_app(app, argv, "python -m bench")

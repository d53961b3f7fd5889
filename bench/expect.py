"""The README's "What to expect" table (issue 75): one row per pipeline a user
gets, its accuracy, speed and memory, read from the benchmark and result files
the project commands write (never typed in by hand). `python -m bench
expect-table` writes it into README.md between the markers; a test checks that
the README's table is the one these files give."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

BEGIN = "<!-- what-to-expect: written by `python -m bench expect-table` from the result files -->"
END = "<!-- /what-to-expect -->"

# the files each row reads, relative to the repository root
SOURCES = {
    "default": "results/out_of_the_box/out_of_the_box.json",
    "add_pipe_ncbi": "results/benchmark/defaults_ncbi_x1.json",
    "add_pipe_natural": "results/benchmark/defaults_natural.json",
    "add_pipe_ncbi_avx2": "results/benchmark/defaults_avx2/defaults_ncbi_x1.json",
    "add_pipe_natural_avx2": "results/benchmark/defaults_avx2/defaults_natural.json",
    "add_pipe_ncbi_amd_vnni": "results/benchmark/defaults_amd_vnni/defaults_ncbi_x1.json",
    "add_pipe_natural_amd_vnni": "results/benchmark/defaults_amd_vnni/defaults_natural.json",
    "train_ncbi": "results/accuracy/final_fit/ncbi_seeds.json",
    "train_bc5cdr": "results/accuracy/final_fit/bc5cdr_seeds.json",
    "text_ncbi": "results/e2e/text_pipeline/ncbi_test_seeds.json",
    "text_bc5cdr": "results/e2e/text_pipeline/bc5cdr_test_seeds.json",
    "text_speed_ncbi": "results/e2e/text_pipeline/ncbi_text_e2e.json",
    "text_speed_bc5cdr": "results/e2e/text_pipeline/bc5cdr_text_e2e.json",
    "text_memory_ncbi": "results/e2e/text_pipeline/ncbi_memory.json",
    "text_memory_bc5cdr": "results/e2e/text_pipeline/bc5cdr_memory.json",
}
TEXT_NER = "MiniLM 3 layers in context, joint"  # the text pipeline's NER in text-ner-table
# the add_pipe default's rows on the other CPU kinds measured: (suffix of SOURCES' keys, what the row says)
OTHER_CPUS = (("_avx2", "the same on an AVX2-only CPU (no VNNI): "),
              ("_amd_vnni", "the same on another CPU with VNNI: "))


def _load(root: Path) -> Dict[str, Any]:
    return {key: json.loads((root / path).read_text(encoding="utf-8")) for key, path in SOURCES.items()}


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _seeds(report: Dict[str, Any], system: str, metric: str) -> str:
    row = next(r for r in report["rows"] if r["system"] == system)
    return f"{_pct(row[metric]['mean'])} ± {_pct(row[metric]['std'])}"


def _streamed(*reports: Dict[str, Any]) -> str:
    """Peak RSS of `bench e2e-memory` reports (the test texts streamed through
    `nlp.pipe` in a fresh process of each install): base install, then with PyTorch."""
    def peaks(torch: bool) -> str:
        rows = [next(r for r in rep["installs"].values() if r["torch_imported"] is torch)
                for rep in reports]
        return " / ".join(f"{row['peak_rss_mb']:.0f}" for row in rows)
    return f"{peaks(False)} MB streaming the test texts (with PyTorch installed {peaks(True)})"


def _summary(report: Dict[str, Any], system: str) -> Dict[str, Any]:
    return next(r for r in report["summary"] if r["system"] == system)


def _add_pipe_row(f: Dict[str, Any], suffix: str, what: str) -> List[str]:
    """The add_pipe default against scispaCy (`benchmark-defaults`) from the files
    of `suffix` ("": the headline CPU; one of OTHER_CPUS: that CPU, named in `what`)."""
    ours = {k: _summary(f[f"add_pipe_{k}{suffix}"], "default, base install") for k in ("ncbi", "natural")}
    theirs = {k: _summary(f[f"add_pipe_{k}{suffix}"], "scispaCy linker") for k in ("ncbi", "natural")}
    speed = {k: ours[k]["mentions_per_s_median"] for k in ours}
    ratio = {k: speed[k] / theirs[k]["mentions_per_s_median"] for k in ours}
    if suffix:
        what += f"{ours['ncbi']['where']['cpu']}"
    return [what, "mentions you give",
            f"Acc@1 {_pct(ours['ncbi']['acc@1'])} on NCBI (scispaCy {_pct(theirs['ncbi']['acc@1'])})",
            f"{speed['ncbi']:,.0f} mentions/s, {ratio['ncbi']:.2f}x scispaCy's; distinct abstracts "
            f"{speed['natural']:,.0f}, {ratio['natural']:.2f}x",
            f"{ours['ncbi']['peak_rss_mb']:.0f} MB (scispaCy {theirs['ncbi']['peak_rss_mb']:.0f})"]


def rows(root: Path) -> List[List[str]]:
    """[what you run, what it reads, accuracy, speed, memory] per pipeline."""
    f = _load(root)
    default = f["default"]
    ncbi, bc5 = default["corpora"]["ncbi"], default["corpora"]["bc5cdr"]
    later = [c for calls in default["link_calls"]["installs"].values() for c in calls[1:]]
    headline = _summary(f["add_pipe_ncbi"], "default, base install")["where"]["cpu"]
    # the default's speed names its CPU where it was measured on another than the headline's
    elsewhere = f" (on {default['where']['cpu']})" if default["where"]["cpu"] != headline else ""
    return [
        ["`python -m spacy_bioel link TEXT`, `spacy_bioel.default_pipeline()`: the shipped NER, "
         "the untrained linker, the embedded DOID", "plain text",
         f"NER F1 {_pct(ncbi['default']['ner']['f'])} / {_pct(bc5['default']['ner']['f'])}; "
         f"document F1 in MeSH {_pct(ncbi['default']['documents']['f'])} / "
         f"{_pct(bc5['default']['documents']['f'])}",
         f"{ncbi['docs_per_s']:.1f} / {bc5['docs_per_s']:.1f} docs/s; a later `link` "
         f"{min(c['seconds'] for c in later):.1f} s{elsewhere}",
         f"{max(c['peak_rss_mb'] for c in later):.0f} MB (`link`)"],
        _add_pipe_row(f, "", '`nlp.add_pipe("bioel_linker")` (`configs/linker_cpu.cfg`, untrained) '
                             "over MEDIC, base install"),
        *(_add_pipe_row(f, suffix, what) for suffix, what in OTHER_CPUS),
        ["`spacy project run train`: that linker trained, tuned and final, 3 seeds",
         "mentions you give",
         f"Acc@1 {_seeds(f['train_ncbi'], 'final', 'Acc@1')} / "
         f"{_seeds(f['train_bc5cdr'], 'final', 'Acc@1')}", "as above", "as above"],
        ["`spacy project run train-text`: the shipped NER before the trained linker, 3 seeds of "
         "the NER", "plain text",
         f"NER F1 {_seeds(f['text_ncbi'], TEXT_NER, 'NER F1')} / "
         f"{_seeds(f['text_bc5cdr'], TEXT_NER, 'NER F1')}; document F1 "
         f"{_seeds(f['text_ncbi'], TEXT_NER, 'document F1')} / "
         f"{_seeds(f['text_bc5cdr'], TEXT_NER, 'document F1')}",
         f"{f['text_speed_ncbi']['speed']['docs_per_s']:.1f} / "
         f"{f['text_speed_bc5cdr']['speed']['docs_per_s']:.1f} docs/s",
         _streamed(f["text_memory_ncbi"], f["text_memory_bc5cdr"])],
    ]


def table(root: Path) -> str:
    """The block written into the README, markers included."""
    cpu = _summary(_load(root)["add_pipe_ncbi"], "default, base install")["where"]["cpu"]
    lines = [BEGIN, "", "| what you run | reads | accuracy, test (NCBI / BC5CDR) | speed | memory, peak |",
             "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows(root)]
    lines += ["", f"Measured on {cpu} (each other CPU's row: its CPU); files: " + ", ".join(f"`{p}`" for p in SOURCES.values()) + ".",
              "", END]
    return "\n".join(lines)


def readme_block(readme: str) -> str:
    """The README's block between the markers (markers included); '' when absent."""
    if BEGIN not in readme or END not in readme:
        return ""
    return readme[readme.index(BEGIN):readme.index(END) + len(END)]


def write_readme(readme_path: Path, root: Path) -> bool:
    """Replace the README's block with the table the files give. RETURNS whether it changed."""
    readme = readme_path.read_text(encoding="utf-8")
    old, new = readme_block(readme), table(root)
    if not old:
        raise ValueError(f"{readme_path} has no '{BEGIN}' ... '{END}' block")
    if old == new:
        return False
    readme_path.write_text(readme.replace(old, new), encoding="utf-8")
    return True


__all__ = ["BEGIN", "END", "SOURCES", "rows", "table", "readme_block", "write_readme"]

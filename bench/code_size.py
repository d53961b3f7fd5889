"""What a newcomer has to read (issue 75), measured from a checkout's files alone
(nothing is imported, so an older commit's checkout is measured the same way):
library lines (core and `spacy_bioel/research` apart), the `bioel_linker`
factory's arguments, the settings of its default config, project.yml's lines and
longest line, private imports of the library from the lab, and the longest row of
docs/results.md's summary."""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, Dict, List

import srsly


def library_lines(root: Path) -> Dict[str, int]:
    """Lines of the package's modules: the core and the research package apart."""
    package = root / "spacy_bioel"
    counts = {"core": 0, "research": 0}
    for path in package.rglob("*.py"):
        part = "research" if path.relative_to(package).parts[0] == "research" else "core"
        counts[part] += len(path.read_text(encoding="utf-8").splitlines())
    return counts


def factory_arguments(root: Path) -> List[str]:
    """The `bioel_linker` factory's arguments (nlp and name left out)."""
    tree = ast.parse((root / "spacy_bioel/pipeline/factory.py").read_text(encoding="utf-8"))
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                    and n.name == "make_bioel_linker")
    return [a.arg for a in function.args.args if a.arg not in ("nlp", "name")]


def default_settings(root: Path) -> List[str]:
    """The keys of the default config's SETTINGS block (`pipeline/defaults.py`)."""
    tree = ast.parse((root / "spacy_bioel/pipeline/defaults.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        target = getattr(node, "target", None) or (node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "SETTINGS" and isinstance(node.value, ast.Dict):
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    return []


def private_lab_imports(root: Path) -> List[str]:
    """`file:line name` of every import in bench/ of a private module or name of the library."""
    found = []
    for path in sorted((root / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spacy_bioel"):
                private = [p for p in node.module.split(".") if p.startswith("_") and p != "__main__"]
                private += [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {', '.join(private)}")
    return found


def longest_summary_row(root: Path) -> int:
    """Characters of the longest table row of docs/results.md's first section."""
    text = (root / "docs/results.md").read_text(encoding="utf-8")
    section = re.split(r"\n## ", text.split("\n## ", 1)[-1])[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return max((len(row) for row in rows), default=0)


def project_commands(path: Path) -> int:
    """The commands a project file defines."""
    return len(srsly.read_yaml(path).get("commands") or [])


def code_size(root: Path) -> Dict[str, Any]:
    """Every measure of one checkout."""
    project = (root / "project.yml").read_text(encoding="utf-8").splitlines()
    lab = root / "bench" / "project.yml"  # the lab's experiments (issue 75), when apart
    lab_lines = lab.read_text(encoding="utf-8").splitlines() if lab.is_file() else []
    lines = library_lines(root)
    return {"root": str(root), "library_lines": lines, "factory_arguments": len(factory_arguments(root)),
            "default_settings": default_settings(root),
            "project_yml_lines": len(project), "project_yml_longest_line": max(map(len, project)),
            "project_yml_commands": project_commands(root / "project.yml"),
            "lab_project_yml_lines": len(lab_lines),
            "lab_project_yml_commands": project_commands(lab) if lab.is_file() else 0,
            "private_lab_imports": private_lab_imports(root),
            "results_summary_longest_row": longest_summary_row(root)}


def code_size_table(reports: Dict[str, Dict[str, Any]]) -> str:
    """A markdown table, one column per checkout."""
    labels = list(reports)
    rows = [("library lines, core", lambda r: r["library_lines"]["core"]),
            ("library lines, research", lambda r: r["library_lines"]["research"]),
            ("factory arguments", lambda r: r["factory_arguments"]),
            ("settings in the default config", lambda r: len(r["default_settings"])),
            ("project.yml lines", lambda r: r["project_yml_lines"]),
            ("project.yml longest line", lambda r: r["project_yml_longest_line"]),
            ("project.yml commands", lambda r: r.get("project_yml_commands", 0)),
            ("bench/project.yml lines", lambda r: r.get("lab_project_yml_lines", 0)),
            ("bench/project.yml commands", lambda r: r.get("lab_project_yml_commands", 0)),
            ("private imports from the lab", lambda r: len(r["private_lab_imports"])),
            ("docs/results.md longest summary row", lambda r: r["results_summary_longest_row"])]
    out = ["| measure | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    out += [f"| {name} | " + " | ".join(f"{get(reports[l]):,}" for l in labels) + " |" for name, get in rows]
    return "\n".join(out) + "\n"


__all__ = ["code_size", "code_size_table"]

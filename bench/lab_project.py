"""The lab's project file, `bench/project.yml`, run over the root's (issue 75).

The root `project.yml` holds a user's doors; the lab's experiments live apart so
that the root file reads in one sitting. `python -m bench project NAME` joins the
two (the lab's vars, commands and workflows added to the root's, none named
twice) and runs NAME from the repository root with spaCy's project rules, through
weasel's own functions: missing deps stop the run, a command whose deps, outputs
and script are unchanged is skipped (`project.lock`, shared with `spacy project
run`), `--vars.x y` overrides a var, `--force` reruns.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import srsly
from wasabi import msg

LAB_FILE = Path("bench") / "project.yml"


def lab_project(root: Path, overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): the root project.yml with the lab's vars,
    commands and workflows added, validated and its variables substituted.
    Exits with a message naming the file when either does not parse, or when a
    name is defined in both."""
    from weasel.schemas import ProjectConfigSchema, validate
    from weasel.util import substitute_project_variables, validate_project_commands

    user, lab = (_read(root / name) for name in (Path("project.yml"), LAB_FILE))
    joined = dict(user)
    for key in ("vars", "workflows"):
        both = set(user.get(key) or {}) & set(lab.get(key) or {})
        if both:
            msg.fail(f"{LAB_FILE} defines {key} the root project.yml has: {sorted(both)}; "
                     "rename them in one of the two", exits=1)
        joined[key] = {**(user.get(key) or {}), **(lab.get(key) or {})}
    names = [c["name"] for c in (user.get("commands") or []) + (lab.get("commands") or [])]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        msg.fail(f"Commands named twice in project.yml and {LAB_FILE}: {twice}", exits=1)
    joined["commands"] = (user.get("commands") or []) + (lab.get("commands") or [])
    errors = validate(ProjectConfigSchema, joined)
    if errors:
        msg.fail(f"project.yml with {LAB_FILE} does not validate", "\n".join(errors), exits=1)
    validate_project_commands(joined)
    return substitute_project_variables(joined, dict(overrides or {}))


def _read(path: Path) -> Dict[str, Any]:
    if not path.is_file():
        msg.fail(f"No {path}: run `python -m bench project` from the repository root", exits=1)
    try:
        return srsly.read_yaml(path) or {}
    except ValueError as err:
        msg.fail(f"{path} is no valid YAML", str(err), exits=1)
    return {}


def lab_steps(config: Dict[str, Any], name: str) -> List[Dict[str, Any]]:
    """RETURNS (List[Dict[str, Any]]): the commands a command or workflow NAME
    runs, in order; exits listing what exists when NAME is neither."""
    commands = {c["name"]: c for c in config.get("commands", [])}
    workflows = config.get("workflows", {})
    if name in workflows:
        return [commands[step] for step in workflows[name]]
    if name in commands:
        return [commands[name]]
    msg.fail(f"No command or workflow '{name}' in project.yml or {LAB_FILE}",
             "`python -m bench project` lists them", exits=1)
    return []


def run_lab(root: Path, name: str, overrides: Optional[Dict[str, Any]] = None,
            force: bool = False, dry: bool = False) -> None:
    """Run the command or workflow NAME of the joined project from `root`."""
    from weasel.cli.run import check_rerun, run_commands, update_lockfile
    from weasel.util import working_dir

    config = lab_project(root, overrides)
    for directory in config.get("directories", []):
        (root / directory).mkdir(parents=True, exist_ok=True)
    for command in lab_steps(config, name):
        missing = [dep for dep in command.get("deps", []) if not (root / dep).exists()]
        if missing:
            msg.fail(f"Missing dependency of '{command['name']}': {missing[0]}",
                     "Run the command that makes it first (its workflow runs them in order)",
                     exits=1 if not dry else None)
        with working_dir(root) as here:
            msg.divider(command["name"])
            if not force and not check_rerun(here, command):
                msg.info(f"Skipping '{command['name']}': nothing changed")
                continue
            run_commands(command["script"], dry=dry)
            if not dry:
                update_lockfile(here, command)


def lab_listing(root: Path) -> str:
    """RETURNS (str): the lab's commands and workflows, one line each (its help's first sentence)."""
    lab = _read(root / LAB_FILE)
    lines = [f"{lab.get('title', LAB_FILE)}", "", "Workflows (python -m bench project NAME):"]
    lines += [f"  {n}: {' -> '.join(steps)}" for n, steps in (lab.get("workflows") or {}).items()]
    lines += ["", "Commands:"]
    for command in lab.get("commands") or []:
        first = " ".join(str(command.get("help", "")).split()).split(". ")[0]
        lines.append(f"  {command['name']}: {first[:150]}")
    return "\n".join(lines)


__all__ = ["LAB_FILE", "lab_project", "lab_steps", "run_lab", "lab_listing"]

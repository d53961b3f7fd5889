"""`project`: the lab's project file (bench/project.yml) run over the root's."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._app import app


@app.command("project", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def project(
    ctx: typer.Context,
    name: Optional[str] = typer.Argument(None, help="A command or workflow of bench/project.yml or project.yml (none: list the lab's)"),
    force: bool = typer.Option(False, "--force", "-F", help="Run even when nothing changed"),
    dry: bool = typer.Option(False, "--dry", "-D", help="Print the commands, run nothing"),
) -> None:
    """Run a lab experiment as `spacy project run` runs a user's command, from the
    repository root: `python -m bench project NAME [--vars.x y]`."""
    from weasel.util import parse_config_overrides

    from ..lab_project import lab_listing, run_lab

    root = Path.cwd()
    if name is None:
        typer.echo(lab_listing(root))
        return
    run_lab(root, name, parse_config_overrides(ctx.args), force=force, dry=dry)

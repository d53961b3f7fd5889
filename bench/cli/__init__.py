"""`python -m bench ...`: the lab's commands (project.yml calls them)."""
from ._app import app, main
from . import ablate, benchmark, biofeg, compare, data, e2e, predictions, pretrain, project, reliability, stats, table  # noqa: F401  (register commands)

__all__ = ["app", "main"]

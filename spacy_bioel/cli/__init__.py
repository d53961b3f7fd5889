"""`python -m spacy_bioel ...`: the command-line interface used by project.yml."""
from ._app import app, main
from . import kb, convert, prepare, package, visualize, link_corpus, evaluate, stats, table, link, linker, benchmark, ablate, reliability, pretrain, reranker, biofeg, compare  # noqa: F401  (register commands)

__all__ = ["app", "main"]

"""`python -m spacy_bioel ...`: the command-line interface used by project.yml."""
from ._app import app, main
from . import kb, convert, prepare, package, visualize, link_corpus, evaluate, link, linker, reranker, distill  # noqa: F401  (register commands)

__all__ = ["app", "main"]

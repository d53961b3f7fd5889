"""`python -m spacy_bioel ...`: the command-line interface used by project.yml."""
from ._app import app, main
from . import (kb, convert, prepare, package, visualize, link_corpus, evaluate, link, linker,  # noqa: F401
               reranker, distill, retrain, ner_onnx, add_ner)  # (register commands)

__all__ = ["app", "main"]

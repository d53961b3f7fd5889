"""`python -m spacy_bioel ...`: the command-line interface used by project.yml."""
from ._app import (app, load_pipeline, main, read_docs, run_app, save_tuning, setup_logging,
                   split_csv, write_json)
from . import (kb, convert, prepare, package, visualize, link_corpus, evaluate, link, linker,  # noqa: F401
               reranker, distill, retrain, ner_onnx, add_ner)  # (register commands)

# the helpers the lab's commands share with these (`python -m bench`)
__all__ = ["app", "main", "load_pipeline", "read_docs", "run_app", "save_tuning", "setup_logging",
           "split_csv", "write_json"]

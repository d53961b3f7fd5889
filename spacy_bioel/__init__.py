"""spacy-bioel: biomedical entity linking for spaCy.

Importing this package is light: torch, transformers and faiss are imported
only by the modules that need them.
"""
from .about import __version__
from .errors import BioELError, Errors
from .kb.concept import Concept
from .kb.knowledge_base import NIL, KnowledgeBase

__all__ = ["__version__", "BioELError", "Errors", "Concept", "KnowledgeBase", "NIL",
           "default_pipeline"]


def __getattr__(name: str):
    """`default_pipeline` (plain text in, linked concepts out: the shipped NER before
    the linker on the embedded KB), imported on first use so that importing the
    package stays light."""
    if name == "default_pipeline":
        from .pipeline.embedded_default import default_pipeline

        return default_pipeline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

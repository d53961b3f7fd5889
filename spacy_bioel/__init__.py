"""spacy-bioel: biomedical entity linking for spaCy.

Importing this package is light: torch, transformers and faiss are imported
only by the modules that need them.
"""
from .about import __version__
from .errors import BioELError, Errors
from .kb.concept import Concept
from .kb.knowledge_base import NIL, KnowledgeBase

__all__ = ["__version__", "BioELError", "Errors", "Concept", "KnowledgeBase", "NIL"]

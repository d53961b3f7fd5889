"""Knowledge bases: concept records, the KB, normalisation and loaders per format."""
from .concept import Concept
from .embedded import EMBEDDED_KBS, load_embedded_kb
from .knowledge_base import KB_FORMAT_VERSION, NIL, KnowledgeBase
from .normalize import normalize_text
from .loaders import KB_FORMATS, load_kb

__all__ = ["Concept", "KnowledgeBase", "NIL", "KB_FORMAT_VERSION", "normalize_text",
           "KB_FORMATS", "load_kb", "EMBEDDED_KBS", "load_embedded_kb"]

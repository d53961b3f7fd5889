"""Looking at links: displaCy entity pages with concept URLs, candidates and NIL
scores (`render`), the URL of a concept id (`urls`), and the streamlit page of
`python -m spacy_bioel visualize` (`app`)."""
from .render import link_records_of, render_html
from .urls import DEFAULT_URLS, concept_url

__all__ = ["DEFAULT_URLS", "concept_url", "link_records_of", "render_html"]

"""The streamlit page of `python -m spacy_bioel visualize PIPELINE`: paste text
(mentions in [brackets], or found by the pipeline's NER) and see its entities
linked to their concepts' pages, the candidates with scores, NIL flags and
scores. Run as `streamlit run app.py -- PIPELINE [--top N] [--url PREFIX=TEMPLATE]`
(the `visualize` command does this)."""
from __future__ import annotations

import argparse
import sys

SAMPLE = ("Germline mutations of the APC gene cause [familial adenomatous polyposis] (FAP), an "
          "autosomal dominant predisposition to [colorectal carcinomas]; a few carriers present "
          "with [hepatoblastoma] or [quixotic zebra fever].")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="spacy_bioel visualize")
    parser.add_argument("pipeline")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--url", action="append", default=[])
    parser.add_argument("--text", default=SAMPLE)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    import streamlit as st

    from spacy_bioel.errors import BioELError
    from spacy_bioel.pipeline.loading import find_linker, load_pipeline
    from spacy_bioel.pipeline.text import link_text
    from spacy_bioel.visualize.render import link_records_of, render_doc
    from spacy_bioel.visualize.urls import parse_url_options

    args = parse_args(sys.argv[1:] if argv is None else argv)
    templates = parse_url_options(args.url)

    @st.cache_resource
    def load(path: str):
        return load_pipeline(path)

    st.set_page_config(page_title="spacy-bioel", layout="wide")
    st.title("spacy-bioel: entity links")
    nlp = load(args.pipeline)
    linker = find_linker(nlp)
    st.caption(f"Pipeline {args.pipeline}: {', '.join(nlp.pipe_names)}; KB {linker.kb.name} "
               f"({len(linker.kb):,} concepts). Mark mentions in [brackets], or let the "
               "pipeline's NER find them. Hover a mention for its candidates.")
    text = st.text_area("Text", args.text, height=120)
    if not text.strip():
        return
    try:
        doc = link_text(nlp, text)
    except BioELError as err:
        st.warning(str(err))
        return
    st.html(render_doc(doc, linker.kb, linker.cfg, args.top, templates))
    records = link_records_of(doc, linker.kb, linker.cfg, args.top, templates)
    with st.expander("As data"):
        st.json(records)


if __name__ == "__main__":
    main()

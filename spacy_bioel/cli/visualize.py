"""`visualize PIPELINE`: a page to look at links (streamlit), or a static HTML file."""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ._app import app, resolve_pipeline, setup_logging

logger = logging.getLogger(__name__)


@app.command("visualize")
def visualize(
    pipeline: str = typer.Argument(..., help="A saved pipeline with a bioel_linker, or bioel: the default pipeline (the shipped disease NER and the untrained linker over --kb), built into the cache on first use"),
    html_path: Optional[Path] = typer.Option(None, "--html", help="Write a static page of --text / --input here instead of serving one"),
    text: Optional[str] = typer.Option(None, "--text", help="Text to show (mentions in [brackets], or found by the pipeline's NER)"),
    input_path: Optional[Path] = typer.Option(None, "--input", help="--html: a DocBin (.spacy) whose gold mentions are linked (first --limit docs)"),
    limit: int = typer.Option(5, "--limit", help="--input: documents shown"),
    top: int = typer.Option(5, "--top", help="Candidates shown per mention"),
    urls: List[str] = typer.Option([], "--url", help="PREFIX=TEMPLATE concept URL ({id}: local part, {curie}: whole id), repeatable"),
    port: int = typer.Option(8501, "--port", help="Port of the streamlit page"),
    kb_path: Optional[str] = typer.Option(None, "--kb", help="bioel: the KB file, or embedded:doid (the Disease Ontology KB shipped in the package; the default)"),
    verbose: bool = typer.Option(False, "--verbose", "-V"),
) -> None:
    """Look at links. Without --html, serve a streamlit page (the `viz` extra)
    where you paste text and see its mentions linked to their concepts' pages
    (MeSH, OMIM, UMLS, DOID, HP, any OBO prefix), NIL mentions marked, the top
    candidates with scores as a tooltip and in a table, and NIL scores. With
    --html, write the same view of --text (or of --input's documents) as one
    HTML file."""
    from ..pipeline.loading import find_linker
    from ..visualize.app import SAMPLE
    from ..visualize.urls import parse_url_options

    setup_logging(verbose)
    templates = parse_url_options(urls)  # a bad --url fails here, before a server starts
    name, pipeline = pipeline, resolve_pipeline(pipeline, kb_path, "visualize")  # name: the page's title
    if html_path is None:
        try:
            import streamlit  # noqa: F401
        except ImportError:
            raise typer.BadParameter("the page needs streamlit: pip install 'spacy-bioel[viz]' "
                                     "(or write a static page with --html OUT.html)")
        from ..visualize import app as page

        command = [sys.executable, "-m", "streamlit", "run", page.__file__,
                   "--server.port", str(port), "--server.headless", "true",
                   "--browser.gatherUsageStats", "false", "--", str(pipeline), "--top", str(top)]
        command += [f"--url={u}" for u in urls] + ([f"--text={text}"] if text else [])
        typer.echo(f"Serving http://localhost:{port} (Ctrl+C stops)")
        sys.stdout.flush()
        os.execv(sys.executable, command)  # streamlit replaces this process: one to stop
    from ..pipeline.loading import load_pipeline
    from ..pipeline.text import link_text
    from ..visualize.render import render_html
    from ._app import read_docs

    from ..outputs import protect_inputs

    protect_inputs("visualize --html", [html_path], [input_path], [pipeline])
    nlp = load_pipeline(pipeline)
    linker = find_linker(nlp)
    if input_path is not None:
        from ..pipeline.mentions import for_linker

        docs = list(nlp.pipe(for_linker(d, linker.cfg["spans_key"])
                             for d in read_docs([input_path])[:limit]))
    else:
        docs = [link_text(nlp, text or SAMPLE)]
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text(render_html(docs, linker.kb, linker.cfg, top, templates,
                                     title=f"spacy-bioel links: {name}"), encoding="utf-8")
    from ..pipeline.mentions import mention_spans

    n = sum(len(mention_spans(d, linker.cfg["spans_key"])) for d in docs)
    typer.echo(f"Wrote {html_path}: {len(docs)} document(s), {n} mentions")

"""Looking at links: concept URLs per prefix, the displaCy page (links, NIL,
tooltips, side table), the `visualize --html` command, the streamlit page run
headless, and the rendered page in a real browser (headless Chromium; skipped
where none is installed: `apt-get install chromium`)."""
import html
import re
import shutil
import subprocess

import pytest
import spacy
from typer.testing import CliRunner

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.cli import app
from spacy_bioel.visualize.render import link_records_of, render_html
from spacy_bioel.visualize.urls import concept_url, parse_url_options

from ..utils import save_linker_pipeline

KB_IDS = [("D003110", "colonic neoplasms"), ("DOID:9256", "colorectal cancer"),
          ("HP:0003002", "breast carcinoma"), ("OMIM:175100", "familial adenomatous polyposis")]


@pytest.mark.parametrize("cid,url", [
    ("D003110", "https://meshb.nlm.nih.gov/record/ui?ui=D003110"),
    ("C535575", "https://meshb.nlm.nih.gov/record/ui?ui=C535575"),
    ("MESH:C000656484", "https://meshb.nlm.nih.gov/record/ui?ui=C000656484"),
    ("C0009402", "https://uts.nlm.nih.gov/uts/umls/concept/C0009402"),
    ("OMIM:175100", "https://omim.org/entry/175100"),
    ("DOID:9256", "http://purl.obolibrary.org/obo/DOID_9256"),
    ("HP:0003002", "http://purl.obolibrary.org/obo/HP_0003002"),
    ("MONDO:0005575", "http://purl.obolibrary.org/obo/MONDO_0005575"),  # any OBO prefix
    ("NIL", None), ("12345", None), ("", None)])
def test_concept_urls(cid, url):
    assert concept_url(cid) == url


def test_user_templates_override_and_extend():
    templates = parse_url_options(["omim=https://example.org/omim/{id}",
                                   "AAP=https://example.org/{curie}"])
    assert concept_url("OMIM:1", templates) == "https://example.org/omim/1"
    assert concept_url("AAP:7", templates) == "https://example.org/AAP:7"
    with pytest.raises(Exception) as err:
        parse_url_options(["OMIM=https://example.org/"])  # no {id}
    assert err.value.code == "E175"


@pytest.fixture
def linked_doc():
    """A Doc as a linker leaves it: two linked mentions and one NIL."""
    from spacy_bioel.pipeline.extensions import DEFAULT_ATTRS, install_extensions

    install_extensions(DEFAULT_ATTRS)
    kb = KnowledgeBase(name="toy")
    for cid, name in KB_IDS:
        kb.add(Concept(cid, name))
    nlp = spacy.blank("en")
    doc = nlp.make_doc("Colon cancer in FAP carriers and quixotic fever.")
    decisions = [("DOID:9256", [("DOID:9256", 0.8), ("D003110", 0.2)], False, 0.1),
                 ("OMIM:175100", [("OMIM:175100", 0.9)], False, 0.05),
                 ("NIL", [("HP:0003002", 0.4), ("D003110", 0.3)], True, 0.9)]
    doc.ents = [doc.char_span(s, e, "Disease", kb_id=d[0])
                for (s, e), d in zip([(0, 12), (16, 19), (33, 47)], decisions)]
    for ent, (kb_id, candidates, nil, nil_score) in zip(doc.ents, decisions):
        ent._.kb_ents = candidates
        ent._.is_nil, ent._.nil_score, ent._.kb_prob, ent._.kb_similarity = nil, nil_score, 1 - nil_score, 0.7
    return doc, kb


def test_records_and_page(linked_doc):
    doc, kb = linked_doc
    records = link_records_of(doc, kb)
    assert [r["kb_id"] for r in records] == ["DOID:9256", "OMIM:175100", "NIL"]
    assert records[0]["name"] == "colorectal cancer" and records[2]["url"] is None
    assert records[2]["candidates"][0] == {"id": "HP:0003002", "name": "breast carcinoma",
                                           "score": 0.4,
                                           "url": "http://purl.obolibrary.org/obo/HP_0003002"}
    page = render_html([doc], kb)
    marks = re.findall(r'<mark title="([^"]*)" data-kb-id="([^"]*)" data-nil="(\w+)"', page)
    assert [(m[1], m[2]) for m in marks] == [("DOID:9256", "false"), ("OMIM:175100", "false"),
                                            ("NIL", "true")]
    assert "1. HP:0003002 breast carcinoma (0.40)" in html.unescape(marks[2][0])
    # the inline links are the concepts' pages; the NIL mention has none
    assert 'href="http://purl.obolibrary.org/obo/DOID_9256"' in page
    assert 'href="https://omim.org/entry/175100"' in page
    nil_mark = page.split('data-kb-id="NIL"')[1].split("</mark>")[0]
    assert "href" not in nil_mark and "NIL" in nil_mark
    assert page.count('<tr class="nil">') == 1 and page.count('<tr class="linked">') == 2


# ids hold no white space (the KB refuses it, E250): markup that needs none
@pytest.mark.parametrize("cid", ['MESH:"><script>alert(1)</script>', "<img/src=x/onerror=alert(1)>",
                                 "DOID:1\"/onmouseover=\"alert(1)"])
def test_markup_in_a_concept_id_or_label_stays_text(cid):
    from spacy_bioel.pipeline.extensions import DEFAULT_ATTRS, install_extensions

    install_extensions(DEFAULT_ATTRS)
    kb = KnowledgeBase(name="evil")
    kb.add(Concept(cid, "<b>bold</b> name"))
    doc = spacy.blank("en").make_doc("Colon cancer here.")
    doc.ents = [doc.char_span(0, 12, "<i>Dis</i>", kb_id=cid)]
    ent = doc.ents[0]
    ent._.kb_ents, ent._.is_nil, ent._.nil_score, ent._.kb_prob = [(cid, 0.9)], False, 0.1, 0.9
    page = render_html([doc], kb)
    body = page.split("<body", 1)[1]
    assert "<script" not in body and "<img" not in body and "<b>" not in body and "<i>" not in body
    assert "onmouseover=\"" not in body and " onerror=" not in body.replace("onerror=alert", "")
    assert html.escape(cid) in body or html.escape(cid, quote=True) in body
    assert all(href.startswith(("http://", "https://", "#"))
               for href in re.findall(r'href="([^"]*)"', body))


def test_a_template_cannot_make_a_script_link():
    from spacy_bioel.visualize.render import safe_url

    assert safe_url("javascript:alert(1)") == "#" and safe_url(None) == "#"
    assert safe_url("https://omim.org/entry/1") == "https://omim.org/entry/1"


@pytest.fixture
def pipeline_dir(tiny_bert_dir, tmp_path):
    return save_linker_pipeline(tmp_path / "pipeline", tiny_bert_dir, KB_IDS)


def test_visualize_html_command(pipeline_dir, tmp_path):
    out = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["visualize", str(pipeline_dir), "--html", str(out),
                                      "--text", "Carriers of [FAP] develop [colon cancer]."])
    assert result.exit_code == 0, (result.output, result.exception)
    page = out.read_text()
    assert page.count("<mark ") == 2 and "colon cancer" in page and "<table" in page
    result = CliRunner().invoke(app, ["visualize", str(pipeline_dir), "--html", str(out),
                                      "--text", "no mention marked"])
    assert result.exception.code == "E198"


def test_streamlit_page_headless(pipeline_dir):
    """The page's script under streamlit's own test runner (no server, no browser)."""
    testing = pytest.importorskip("streamlit.testing.v1", reason="streamlit (the viz extra)")
    from spacy_bioel.visualize import app as page

    at = testing.AppTest.from_function(_run_page, args=(str(pipeline_dir),), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert at.text_area[0].value == page.SAMPLE
    rendered = "".join(str(getattr(h, "proto", h)) for h in at.get("html"))
    assert rendered.count("data-kb-id=") == 4  # the sample's four [bracketed] mentions
    at.text_area[0].input("nothing bracketed here").run()
    assert at.warning and "E198" in at.warning[0].value


def _run_page(pipeline):
    from spacy_bioel.visualize.app import main

    main([pipeline])


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_page_in_a_real_browser(linked_doc, tmp_path):
    """Headless Chromium loads the page; the DOM it builds has the links and the NIL mark."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here (apt-get install chromium): the browser check is skipped")
    doc, kb = linked_doc
    page = tmp_path / "links.html"
    page.write_text(render_html([doc], kb))
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-background-networking", "--disable-component-update",
                          "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    hrefs = re.findall(r'<a [^>]*href="([^"]+)"', dom)
    assert "http://purl.obolibrary.org/obo/DOID_9256" in hrefs
    assert "https://omim.org/entry/175100" in hrefs
    assert 'data-kb-id="NIL" data-nil="true"' in dom


def test_live_page_in_a_real_browser(pipeline_dir, tmp_path):
    """`visualize PIPELINE` serves the streamlit page; headless Chromium, driven over the
    DevTools protocol, sees the sample's mentions with concept links and tooltips."""
    import sys

    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here (apt-get install chromium): the browser check is skipped")
    pytest.importorskip("streamlit", reason="streamlit (the viz extra)")
    from .cdp import evaluate_when_ready, free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "spacy_bioel", "visualize", str(pipeline_dir),
                               "--port", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        found = evaluate_when_ready(browser, f"http://localhost:{port}", """(() => {
            const marks = document.querySelectorAll("mark[data-kb-id]");
            if (marks.length < 4) return null;
            return {ids: Array.from(marks).map(m => m.getAttribute("data-kb-id")),
                    titles: Array.from(marks).map(m => m.getAttribute("title")),
                    links: Array.from(document.querySelectorAll("table.bioel a")).map(a => a.href)};
        })()""", tmp_path / "profile", timeout=150)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert found is not None, "the page never showed the linked sample"
    known = {cid for cid, _ in KB_IDS}
    assert all(cid in known or cid == "NIL" for cid in found["ids"])
    assert all(t and "1. " in t for t in found["titles"])  # the candidates tooltip
    assert any(link.startswith(("http://purl.obolibrary.org/obo/", "https://omim.org/",
                                "https://meshb.nlm.nih.gov/")) for link in found["links"])

"""`bench ner-dev` and `bench ner-across`: an NER read on raw text, its mentions
scored strictly, as found and after document consistency (hand-counted here with
an entity ruler standing in for the NER)."""
import spacy
from spacy.tokens import DocBin

from bench import ner_across, ner_dev

TEXTS = [("Stevens-Johnson syndrome (SJS) is rare. SJS recurred.",
          ["Stevens-Johnson syndrome", "SJS", "SJS"]),
         ("Gout flares. Gout again and asthma.", ["Gout", "Gout", "asthma"])]


def _corpus(path):
    nlp = spacy.blank("en")
    docs = []
    for text, mentions in TEXTS:
        doc = nlp.make_doc(text)
        spans, start = [], 0
        for mention in mentions:
            start = text.index(mention, start)
            spans.append(doc.char_span(start, start + len(mention), label="Disease"))
            start += len(mention)
        doc.ents = spans
        docs.append(doc)
    DocBin(docs=docs).to_disk(path)
    return path


def _ner(folder):
    """A stand-in NER named `ner` that finds the long form and the first "Gout" only
    (an entity ruler), and a component after it that must not run."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler", name="ner")
    ruler.add_patterns([{"label": "Disease", "pattern": "Stevens-Johnson syndrome"},
                        {"label": "Disease", "pattern": [{"TEXT": "Gout"}, {"TEXT": "flares"}]}])
    nlp.add_pipe("sentencizer", name="after")
    nlp.to_disk(folder)
    return folder


def test_ner_dev_scores_each_consistency_variant(tmp_path):
    report = ner_dev.evaluate(_ner(tmp_path / "ner"), {"toy": _corpus(tmp_path / "dev.spacy")},
                              n_bootstrap=5)
    assert report["components"] == ["ner"]
    rows = report["corpora"]["toy"]["variants"]
    # as found: "Gout flares" (wrong edges) and the long form: 1 right of 2 found, 6 gold
    assert (rows["as found"]["tp"], rows["as found"]["fp"], rows["as found"]["fn"]) == (1, 1, 5)
    # abbreviations: both SJS follow their long form
    assert (rows["abbreviations"]["tp"], rows["abbreviations"]["fn"]) == (3, 3)
    assert rows["abbreviations"]["counts"] == {"added_short_form": 2}
    # repeats: "Gout flares" appears once; nothing else repeats
    assert rows["repeats"]["tp"] == 1
    assert "| abbreviations |" in ner_dev.markdown(report, "t")


def test_ner_across_scores_each_model_on_each_corpus(tmp_path):
    corpus = _corpus(tmp_path / "test.spacy")
    report = ner_across.evaluate({"a": _ner(tmp_path / "ner")}, {"x": corpus, "y": corpus}, 5)
    row = report["rows"]["a"]
    assert row["x"]["tp"] == row["y"]["tp"] == 3 and row["x"]["fp"] == 1  # abbreviations on
    assert "| a (`" in ner_across.markdown(report, "t")


def test_edge_rules_trim_and_extend_to_kb_names():
    from spacy_bioel.kb import Concept, KnowledgeBase

    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "Parkinson disease"))
    kb.add(Concept("D2", "hepatic adenoma"))
    nlp = spacy.blank("en")
    text = "advanced Parkinson disease and hepatic adenoma"
    gold, found = nlp.make_doc(text), nlp.make_doc(text)
    gold.ents = [gold.char_span(9, 26, "Disease"), gold.char_span(31, 46, "Disease")]
    found.ents = [found.char_span(0, 26, "Disease"), found.char_span(39, 46, "Disease")]
    rows = ner_dev.edge_rules([found], [gold], kb, n_bootstrap=0)
    trimmed = rows["mentions trimmed to a KB name"]["ner"]
    extended = rows["mentions extended to a longer KB name"]["ner"]
    assert (trimmed["tp"], trimmed["fp"]) == (1, 1)  # "Parkinson disease" right, "adenoma" kept
    assert (extended["tp"], extended["fp"]) == (1, 1)  # "hepatic adenoma" right, the other kept


def test_ner_across_pools_seeds_into_mean_and_std():
    reports = [{"rows": {"joint": {"x": {"f": f}}}} for f in (0.80, 0.82, 0.84)]
    table = ner_across.pooled(reports)
    assert round(table["joint"]["x"]["mean"], 6) == 82.0
    assert round(table["joint"]["x"]["std"], 6) == 2.0 and table["joint"]["x"]["n"] == 3
    assert "82.0 ± 2.0 (n=3)" in ner_across.pooled_markdown(table, "t", "n")

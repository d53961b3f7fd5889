"""The BioSyn protocol beside ours: queries pre-processed as BioSyn's (long
forms, composite parts, lower case without punctuation; duplicates counted),
a composite right only when every part is."""
import spacy

from bench.biosyn_protocol import both_protocols, preprocess, queries, score, split_composite
from spacy_bioel.pipeline.abbreviations import find_abbreviations

from ..utils import save_linker_pipeline


def test_composites_split_with_the_shared_head():
    assert split_composite("breast and ovarian cancer", 2) == ["breast cancer", "ovarian cancer"]
    assert split_composite("colorectal, endometrial, and ovarian cancers", 3) == \
        ["colorectal cancers", "endometrial cancers", "ovarian cancers"]
    assert split_composite("deafness and/or blindness", 2) == ["deafness", "blindness"]
    assert split_composite("breast cancer", 2) == []  # not that many parts: queried whole
    assert preprocess("Crohn's  Disease-like (CD)") == "crohn s disease like cd"


def make_docs(nlp):
    def doc(text, spans):
        d = nlp.make_doc(text)
        d.ents = [d.char_span(s, e, label="Disease", kb_id=c) for s, e, c in spans]
        return d

    text = "Adenomatous polyposis coli (APC) and APC tumours; breast and ovarian cancer."
    return [doc(text, [(0, 26, "D1"), (28, 31, "D1"), (37, 40, "D1"), (50, 75, "D2|D3")]),
            doc("adenomatous polyposis coli", [(0, 26, "D1")])]  # a duplicate query


def test_queries_expand_split_and_count_duplicates():
    nlp = spacy.blank("en")
    kept, counts = queries(make_docs(nlp), find_abbreviations)
    assert len(kept) == 5  # BioSyn's published evaluation keeps duplicate queries
    items, counts = queries(make_docs(nlp), find_abbreviations, dedupe=True)
    assert [item["parts"] for item in items] == [["adenomatous polyposis coli"],
                                                 ["breast cancer", "ovarian cancer"]]
    assert counts == {"mentions": 5, "expanded": 2, "composites": 1, "unsplit_composites": 0,
                      "duplicates": 3}
    ranked = {"adenomatous polyposis coli": ["D1"], "breast cancer": ["D2", "X"],
              "ovarian cancer": ["X", "D3"]}
    # the composite's second part is right only at 2: wrong at 1, right at 5
    assert score(items, ranked) == {"acc@1": 0.5, "acc@5": 1.0}


def test_both_protocols_on_a_pipeline(tiny_bert_dir, tmp_path):
    path = save_linker_pipeline(tmp_path / "p", tiny_bert_dir,
                                [("D1", "adenomatous polyposis coli"), ("D2", "breast cancer"),
                                 ("D3", "ovarian cancer")])
    nlp = spacy.load(path)
    result = both_protocols(nlp, make_docs(nlp))
    assert result["ours"]["n"] == 5 and result["biosyn"]["n"] == 5
    assert 0.0 <= result["biosyn"]["acc@1"] <= result["biosyn"]["acc@5"] <= 1.0

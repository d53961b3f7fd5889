import pytest

from spacy_bioel.pipeline.abbreviations import best_long_form, find_abbreviations


def test_find_abbreviations():
    text = ("Germline mutations cause familial adenomatous polyposis (FAP). FAP patients "
            "develop colorectal cancer (CRC), 5 patients (10%) and Wilms tumour (WT1).")
    assert find_abbreviations(text) == {"FAP": "familial adenomatous polyposis",
                                        "CRC": "colorectal cancer"}


@pytest.mark.parametrize("short,preceding,expected", [
    ("HSP", "the heat shock protein", "heat shock protein"),
    ("DM", "patients with diabetes mellitus", "diabetes mellitus"),
    # only the first character must start a word; the others may fall inside words
    ("ALD", "a case of adrenoleukodystrophy", "adrenoleukodystrophy"),
    ("LD", "a case of adrenoleukodystrophy", None),  # 'l' starts no word
    ("XYZ", "no match here", None),
])
def test_best_long_form(short, preceding, expected):
    assert best_long_form(short, preceding) == expected


@pytest.mark.parametrize("text,expected", [
    # more capitals than words: the words before that start with the first letter join
    ("implicated in attenuated adenomatous polyposis coli (AAPC) and",
     {"AAPC": "attenuated adenomatous polyposis coli"}),
    ("structure of the human congenital chloride diarrhea (CLD) gene",
     {"CLD": "congenital chloride diarrhea"}),
    # a word before that starts with another letter, or as many words as capitals: unchanged
    ("a case of X-linked adrenoleukodystrophy (ALD).", {"ALD": "adrenoleukodystrophy"}),
    ("have hypokalemic periodic paralysis (HypoPP).", {"HypoPP": "hypokalemic periodic paralysis"}),
    ("chronic lymphocytic leukemia (CLL)", {"CLL": "chronic lymphocytic leukemia"}),
    # a short form defined before, inside a long form, reads as its long form
    ("or diffuse mesangial sclerosis (DMS) and 10 with isolated DMS (IDMS), 10",
     {"DMS": "diffuse mesangial sclerosis", "IDMS": "isolated diffuse mesangial sclerosis"}),
])
def test_shortest_match_repairs(text, expected):
    assert find_abbreviations(text) == expected


@pytest.mark.parametrize("text,expected", [
    # the long form stays in the short form's sentence (NCBI: "dystrophy. Myotonic dystrophy"
    # matched D...M across the full stop; dystrophia myotonica's letters come the other way)
    ("with congenital myotonic dystrophy. Myotonic dystrophy (DM) is", {}),
    ("in all tissues. Familial adenomatous polyposis (FAP) is", {"FAP": "Familial adenomatous polyposis"}),
    ("as before. 2 patients with diabetes mellitus (DM) had", {"DM": "diabetes mellitus"}),
    # a full stop inside the sentence, before a lower-case word, is not an end
    ("the approx. heat shock protein (HSP) level", {"HSP": "heat shock protein"}),
    # nor "i.e." or "vs." before a capital
    ("the test, i.e. Heat shock protein (HSP) levels", {"HSP": "Heat shock protein"}),
    ("placebo vs. Heat shock protein (HSP) levels", {"HSP": "Heat shock protein"}),
])
def test_a_long_form_does_not_cross_a_sentence_end(text, expected):
    assert find_abbreviations(text) == expected

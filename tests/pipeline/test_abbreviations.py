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

"""spacy-bioel.KBNameEmbed.v1: KB-name features of each token (begin and inside of
a longest match, covered by any match, a name alone), read from a KB file or a
saved linker's KB at initialisation and saved with the model."""
import numpy as np
import pytest
import spacy
from spacy.tokens import Doc
from spacy.util import registry

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError
from spacy_bioel.kb.normalize import normalize_text
from spacy_bioel.ner.kb_names import NameMatcher, read_kb_names

NAMES = ["colon cancer", "hereditary nonpolyposis colon cancer", "Ehlers-Danlos syndrome",
         "CHD", "AS", "cancer"]


def _doc(words):
    return Doc(spacy.blank("en").vocab, words=words)


def test_names_are_normalised_as_the_alias_map_reads_them():
    assert normalize_text(" Ehlers-Danlos   Syndrome, type IV ") == "ehlers danlos syndrome type iv"


def test_longest_matches_begin_inside_any_and_alone():
    doc = _doc(["In", "hereditary", "nonpolyposis", "colon", "cancer", "and", "CHD", "as",
                "Ehlers", "-", "Danlos", "syndrome", "."])
    f = NameMatcher(NAMES).features(doc)
    begin, inside, anymatch, alone = (f[:, k].nonzero()[0].tolist() for k in range(4))
    assert begin == [1, 6, 8]  # the longest name wins over 'colon cancer' inside it
    assert inside == [2, 3, 4, 9, 10, 11]
    assert anymatch == [1, 2, 3, 4, 6, 8, 9, 10, 11]  # 'colon cancer', 'cancer' are inside
    assert alone == [4, 6]  # 'cancer' and 'CHD' are names by themselves
    # 'as' is not 'AS': names of up to four characters match with their case only
    assert f[7].sum() == 0


def test_a_match_neither_begins_nor_ends_on_punctuation():
    doc = _doc(["(", "colon", "cancer", ")", ","])
    assert NameMatcher(NAMES).matches(doc) == [(1, 3), (2, 3)]


def _kb(path):
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colon cancer", ("bowel cancer",)))
    kb.add(Concept("D2", "asthma"))
    kb.to_disk(path)
    return path


def test_names_come_from_a_kb_file_or_a_saved_linker(tmp_path, tiny_bert_dir):
    from tests.utils import save_linker_pipeline

    assert read_kb_names(_kb(tmp_path / "toy.bioelkb")) == ["asthma", "bowel cancer", "colon cancer"]
    save_linker_pipeline(tmp_path / "linker", tiny_bert_dir, [("D1", "colon cancer"), ("D2", "asthma")])
    assert read_kb_names(tmp_path / "linker") == ["asthma", "colon cancer"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(BioELError) as err:
        read_kb_names(tmp_path / "empty")
    assert err.value.code == "E225"


def _embed(kb):
    multi = registry.architectures.get("spacy.MultiHashEmbed.v2")(
        width=16, attrs=["NORM", "SHAPE"], rows=[100, 50], include_static_vectors=False)
    return registry.architectures.get("spacy-bioel.KBNameEmbed.v1")(
        embed=multi, width=16, kb=str(kb) if kb else None)


def test_the_embed_reads_the_kb_once_and_saves_the_names(tmp_path):
    kb = _kb(tmp_path / "toy.bioelkb")
    model = _embed(kb)
    docs = [_doc(["Relatives", "with", "bowel", "cancer", "."]), _doc(["asthma"])]
    model.initialize(X=docs)
    out = model.predict(docs)
    assert [a.shape for a in out] == [(5, 16), (1, 16)]
    kb.unlink()  # a trained model does not read the KB again
    again = _embed(tmp_path / "elsewhere.bioelkb").from_bytes(model.to_bytes())
    assert all(np.allclose(a, b) for a, b in zip(out, again.predict(docs)))
    features = [n for n in again.walk() if n.name == "kb_name_features"][0]
    assert features.attrs["names"] == ["asthma", "bowel cancer", "colon cancer"]
    # the features move the output: the same words without the KB's names differ
    blank = _embed(tmp_path / "elsewhere.bioelkb").from_bytes(model.to_bytes())
    [n for n in blank.walk() if n.name == "kb_name_features"][0].attrs["names"] = ["zzzzz"]
    assert not np.allclose(blank.predict(docs)[0][2], out[0][2])


def test_no_kb_says_what_to_set():
    model = _embed(None)
    with pytest.raises(BioELError) as err:
        model.initialize(X=[_doc(["asthma"])])
    assert err.value.code == "E226"


def _reference_matches(matcher, doc):
    """`NameMatcher.matches` as first written: each short name compared with the text
    of a span spaCy builds."""
    words = [tuple(normalize_text(t.text).split()) for t in doc]
    out = []
    for i in range(len(doc)):
        if not words[i]:
            continue
        key = ()
        for j in range(i, min(len(doc), i + matcher.max_words)):
            key += words[j]
            if words[j] and key in matcher.long:
                out.append((i, j + 1))
            if key not in matcher.prefixes:
                break
        for j in range(i + 1, min(len(doc), i + 3) + 1):
            if words[j - 1] and doc[i:j].text in matcher.short:
                out.append((i, j))
    return out


def test_short_names_match_the_span_texts_spacy_would_build():
    """The matches built from the tokens' texts are those of spaCy's span texts, for
    short names with spaces and punctuation inside and around (`A-T`, `C. H. D`),
    repeated tokens and the end of the doc."""
    names = NAMES + ["A-T", "C. H", "Th", "x y", "colon"]
    matcher = NameMatcher(names)
    nlp = spacy.blank("en")
    for text in ["A-T and CHD, C. H. D in AS; Th x y  colon cancer (AS)",
                 "AS AS A - T colon  cancer x y", "CHD", "", "C. H"]:
        doc = nlp(text)
        assert matcher.matches(doc) == _reference_matches(matcher, doc), text
    words = ["A", "-", "T", "x", "y", "Th", "AS", "colon", "cancer"]
    doc = Doc(nlp.vocab, words=words, spaces=[False, False, True, True, False, True, True, True, False])
    assert matcher.matches(doc) == _reference_matches(matcher, doc) != []

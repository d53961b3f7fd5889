"""Tests for the PubTator reader/converter on tiny inline PubTator files."""
import gzip
from pathlib import Path
from typing import List

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_bioel.corpora import DOC_ID_KEY, OVERLAPS_SPANS_KEY
from spacy_bioel.corpora.pubtator import convert_pubtator, read_pubtator
from spacy_bioel.errors import BioELError, BioELWarning, CorpusFormatError
from spacy_bioel.kb.concept import Concept
from spacy_bioel.kb.knowledge_base import NIL, KnowledgeBase

TITLE_1 = "BRCA1-associated breastcancer in families."
ABSTRACT_1 = "Germline BRCA1 mutations cause ovarian cancer."
TEXT_1 = TITLE_1 + " " + ABSTRACT_1
TITLE_2 = "Lead poisoning and anemia."
ABSTRACT_2 = "Naloxone reversed the hypotension."
TEXT_2 = TITLE_2 + " " + ABSTRACT_2

MAIN = "\n".join([
    f"100|t|{TITLE_1}",
    f"100|a|{ABSTRACT_1}",
    "100\t0\t5\tBRCA1\tGene\t672",
    "100\t23\t29\tcancer\tDisease\tD009369",
    "100\t52\t57\tBRCA1\tGene\t672",
    "100\t74\t88\tovarian cancer\tDisease\tD010051|D009369",
    "100\tCID\tD001\tD002",
    "",
    f"200|t|{TITLE_2}",
    f"200|a|{ABSTRACT_2}",
    "200\t0\t14\tLead poisoning\tDisease\tD007855+D000740",
    "200\t19\t25\tanemia\tDisease\t-1",
    "200\t27\t35\tNaloxone\tChemical\tD009270",
    "200\t49\t60\thypotension\tDisease\tD007022",
    "200\tCID\tD009270\tD007022",
    "",
])


def write(tmp_path: Path, content: str, name: str = "corpus.txt") -> Path:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return path


def block(pmid: str, title: str, abstract: str, annotations: List[str]) -> str:
    return "\n".join([f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"] + annotations) + "\n\n"


def ents(doc):
    return [(e.start_char, e.end_char, e.text, e.label_, e.kb_id_) for e in doc.ents]


@pytest.fixture
def nlp():
    return spacy.blank("en")


@pytest.fixture
def main_file(tmp_path):
    return write(tmp_path, MAIN)


@pytest.fixture
def kb():
    kb = KnowledgeBase(name="toy", strip_prefixes=("MESH:",))
    kb.add(Concept("D009369", "Neoplasms", alt_ids=("D000001",)))
    kb.add(Concept("D010051", "Ovarian Neoplasms"))
    kb.add(Concept("D007855", "Lead Poisoning"))
    kb.finalize_alt_ids()
    return kb


# -- the main conversion ------------------------------------------------------

def test_offsets_index_title_space_abstract(nlp, main_file):
    docs, report = convert_pubtator(nlp, main_file, progress=False)
    assert len(docs) == 2
    assert docs[0].text == TEXT_1
    assert docs[1].text == TEXT_2
    assert docs[0].user_data[DOC_ID_KEY] == "100"
    assert docs[1].user_data[DOC_ID_KEY] == "200"
    # 'ovarian cancer' sits in the abstract: offset = len(title) + 1 + position in abstract
    assert len(TITLE_1) == 42
    assert docs[0].ents[-1].start_char == 42 + 1 + ABSTRACT_1.index("ovarian cancer") == 74


def test_ents_label_and_kb_id(nlp, main_file):
    docs, _ = convert_pubtator(nlp, main_file, progress=False)
    assert ents(docs[0]) == [
        (0, 5, "BRCA1", "Gene", "672"),
        (23, 29, "cancer", "Disease", "D009369"),
        (52, 57, "BRCA1", "Gene", "672"),
        (74, 88, "ovarian cancer", "Disease", "D010051|D009369"),
    ]
    assert ents(docs[1]) == [
        (0, 14, "Lead poisoning", "Disease", "D007855+D000740"),
        (19, 25, "anemia", "Disease", NIL),
        (27, 35, "Naloxone", "Chemical", "D009270"),
        (49, 60, "hypotension", "Disease", "D007022"),
    ]


def test_report_counts_main(nlp, main_file):
    _, report = convert_pubtator(nlp, main_file, progress=False)
    counts = report.counts
    assert counts["documents"] == 2
    assert counts["mentions"] == 8
    assert counts["nil_mentions"] == 1
    assert counts["composite_mentions"] == 2
    assert counts["relation_lines"] == 2
    for absent in ("offsets_repaired", "mention_whitespace_differs", "overlapping_mentions",
                   "duplicate_document_ids", "misaligned_mentions_skipped"):
        assert counts[absent] == 0
    as_dict = report.to_dict()
    assert as_dict["source"] == str(main_file)
    assert as_dict["counts"]["relation_lines"] == 2


def test_tokens_split_inside_words(nlp, main_file):
    docs, _ = convert_pubtator(nlp, main_file, progress=False)
    doc = docs[0]
    words = [t.text for t in doc]
    # 'breastcancer' is one token for the tokenizer; the mention 'cancer' splits it
    assert [t.text for t in nlp(TITLE_1)].count("breastcancer") == 1
    assert "breastcancer" not in words
    i = words.index("breast")
    assert words[i + 1] == "cancer"
    assert doc[i].whitespace_ == ""
    assert doc.text == TEXT_1
    for ent in doc.ents:
        assert doc.char_span(ent.start_char, ent.end_char) is not None


def test_mention_boundary_inside_hyphenated_word(nlp, tmp_path):
    title = "BRCA1associated tumours."
    path = write(tmp_path, block("7", title, "None.", ["7\t0\t5\tBRCA1\tGene\t672"]))
    docs, _ = convert_pubtator(nlp, path, progress=False)
    doc = docs[0]
    assert [t.text for t in doc][:2] == ["BRCA1", "associated"]
    assert doc[0].whitespace_ == ""
    assert ents(doc) == [(0, 5, "BRCA1", "Gene", "672")]
    assert doc.text == title + " None."


def test_title_only_document(nlp, tmp_path):
    path = write(tmp_path, "5|t|Asthma.\n5\t0\t6\tAsthma\tDisease\tD001249\n")
    docs, _ = convert_pubtator(nlp, path, progress=False)
    assert docs[0].text == "Asthma."
    assert ents(docs[0]) == [(0, 6, "Asthma", "Disease", "D001249")]


def test_gzip_input(nlp, tmp_path):
    path = tmp_path / "corpus.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(MAIN)
    docs, report = convert_pubtator(nlp, path, progress=False)
    assert [d.text for d in docs] == [TEXT_1, TEXT_2]
    assert report.counts["mentions"] == 8


def test_read_pubtator_source_documents(main_file):
    documents = list(read_pubtator(main_file))
    assert [d.doc_id for d in documents] == ["100", "200"]
    assert [d.line for d in documents] == [1, 9]
    first = documents[0].mentions[3]
    assert (first.start, first.end, first.text, first.concept_ids, first.composite, first.line) \
        == (74, 88, "ovarian cancer", ("D010051", "D009369"), "|", 6)
    plus = documents[1].mentions[0]
    assert (plus.concept_ids, plus.composite, plus.kb_id) == (("D007855", "D000740"), "+",
                                                               "D007855+D000740")
    assert documents[1].mentions[1].concept_ids == ()


def test_seventh_column_counted(nlp, tmp_path):
    path = write(tmp_path, block("1", "Breast and ovarian cancer.", "x.", [
        "1\t0\t25\tBreast and ovarian cancer\tDisease\tD001943|D010051\tBreast cancer|ovarian cancer",
    ]))
    docs, report = convert_pubtator(nlp, path, progress=False)
    assert ents(docs[0]) == [(0, 25, "Breast and ovarian cancer", "Disease", "D001943|D010051")]
    assert report.counts["composite_individual_mention_columns"] == 1
    assert report.counts["composite_mentions"] == 1


def test_minus_one_part_of_composite_dropped(nlp, tmp_path):
    path = write(tmp_path, block("1", "Rare cancer.", "x.", ["1\t5\t11\tcancer\tDisease\tD009369|-1"]))
    docs, report = convert_pubtator(nlp, path, progress=False)
    assert ents(docs[0]) == [(5, 11, "cancer", "Disease", "D009369")]
    assert report.counts["composite_mentions"] == 0
    assert report.counts["nil_mentions"] == 0


# -- offsets: whitespace, repair, misalignment ----------------------------------

def test_whitespace_only_difference_accepted_and_counted(nlp, tmp_path):
    path = write(tmp_path, block("1", "Breast cancer here.", "x.", [
        "1\t0\t6\t Breast\tDisease\tD1",       # mention column: extra leading space
        "1\t6\t13\tcancer\tDisease\tD2",       # offsets include the leading space
        "1\t14\t18\there \tDisease\tD3",       # mention column: extra trailing space
    ]))
    docs, report = convert_pubtator(nlp, path, progress=False)
    assert ents(docs[0]) == [(0, 6, "Breast", "Disease", "D1"),
                             (7, 13, "cancer", "Disease", "D2"),
                             (14, 18, "here", "Disease", "D3")]
    assert report.counts["mention_whitespace_differs"] == 3
    assert report.counts["mention_whitespace_trimmed"] == 1
    assert report.counts["offsets_repaired"] == 0
    assert docs[0].text == "Breast cancer here. x."


def test_offsets_covering_whitespace_are_trimmed(nlp, tmp_path):
    # regression: offsets that include a space used to crash build_doc
    path = write(tmp_path, block("1", "Breast cancer here.", "x.", [
        "1\t0\t7\tBreast \tDisease\tD1",
    ]))
    docs, report = convert_pubtator(nlp, path, progress=False)
    assert ents(docs[0]) == [(0, 6, "Breast", "Disease", "D1")]
    assert report.counts["mention_whitespace_trimmed"] == 1
    assert report.counts["mention_whitespace_differs"] == 0


def test_shifted_offset_repaired_with_warning(nlp, tmp_path):
    # 'hypotension' is at 49-60; the file says 46-57 (shifted by 3)
    path = write(tmp_path, block("200", TITLE_2, ABSTRACT_2, [
        "200\t46\t57\thypotension\tDisease\tD007022",
    ]))
    with pytest.warns(BioELWarning, match=r"\[W004\].*1 mention offset") as record:
        docs, report = convert_pubtator(nlp, path, progress=False)
    assert "(e.g. line 3: 46->49)" in str(record[0].message)
    assert str(path) in str(record[0].message)
    assert ents(docs[0]) == [(49, 60, "hypotension", "Disease", "D007022")]
    assert report.counts["offsets_repaired"] == 1
    assert report.examples["offsets_repaired"] == ["line 3: 46->49"]


def test_repair_picks_nearest_occurrence(nlp, tmp_path):
    # 'BRCA1' occurs at 0 and 52; offset 50 is nearest to 52
    path = write(tmp_path, block("100", TITLE_1, ABSTRACT_1, ["100\t50\t55\tBRCA1\tGene\t672"]))
    with pytest.warns(BioELWarning, match="W004"):
        docs, report = convert_pubtator(nlp, path, progress=False)
    assert ents(docs[0]) == [(52, 57, "BRCA1", "Gene", "672")]
    assert report.counts["offsets_repaired"] == 1


def test_repair_window_limits_search(nlp, tmp_path):
    path = write(tmp_path, block("200", TITLE_2, ABSTRACT_2, [
        "200\t40\t51\thypotension\tDisease\tD007022",
    ]))
    with pytest.raises(CorpusFormatError) as err:
        convert_pubtator(nlp, path, repair_window=5, progress=False)
    assert err.value.code == "E051"
    with pytest.warns(BioELWarning, match="W004"):
        docs, _ = convert_pubtator(nlp, path, repair_window=10, progress=False)
    assert ents(docs[0]) == [(49, 60, "hypotension", "Disease", "D007022")]


def test_unrepairable_mismatch_raises_e051(nlp, tmp_path):
    path = write(tmp_path, block("200", TITLE_2, ABSTRACT_2, [
        "200\t0\t14\tLead poisoning\tDisease\tD007855",
        "200\t19\t25\tleukemia\tDisease\tD007938",
    ]))
    with pytest.raises(CorpusFormatError) as err:
        convert_pubtator(nlp, path, progress=False)
    assert err.value.code == "E051"
    message = str(err.value)
    assert str(path) in message
    assert "line 4" in message
    assert "'leukemia'" in message
    assert "'anemia'" in message


def test_unrepairable_mismatch_skipped(nlp, tmp_path):
    path = write(tmp_path, block("200", TITLE_2, ABSTRACT_2, [
        "200\t0\t14\tLead poisoning\tDisease\tD007855",
        "200\t19\t25\tleukemia\tDisease\tD007938",
    ]))
    docs, report = convert_pubtator(nlp, path, misaligned="skip", progress=False)
    assert ents(docs[0]) == [(0, 14, "Lead poisoning", "Disease", "D007855")]
    assert report.counts["misaligned_mentions_skipped"] == 1
    assert report.counts["mentions"] == 1
    assert report.examples["misaligned_mentions_skipped"] == ["line 4: 'leukemia'"]


@pytest.mark.parametrize("start,end", [(55, 70), (10, 10), (12, 8)])
def test_out_of_range_or_empty_offsets_raise_e058(nlp, tmp_path, start, end):
    path = write(tmp_path, block("1", "Short title.", "Abstract.", [
        f"1\t{start}\t{end}\tcancer\tDisease\tD1",
    ]))
    with pytest.raises(CorpusFormatError) as err:
        convert_pubtator(nlp, path, misaligned="skip", progress=False)
    assert err.value.code == "E058"
    assert "line 3" in str(err.value)
    assert "length 22" in str(err.value)


# -- filters, relations, overlaps, duplicates ----------------------------------

def test_types_filter(nlp, main_file):
    docs, report = convert_pubtator(nlp, main_file, types=["Disease"], progress=False)
    assert [e.label_ for d in docs for e in d.ents] == ["Disease"] * 5
    assert report.counts["skipped_type:Chemical"] == 1
    assert report.counts["skipped_type:Gene"] == 2
    assert report.counts["mentions"] == 5
    # the text is unchanged by the filter
    assert [d.text for d in docs] == [TEXT_1, TEXT_2]


def test_relation_lines_counted(nlp, tmp_path):
    path = write(tmp_path, block("200", TITLE_2, ABSTRACT_2, [
        "200\tCID\tD009270\tD007022",
        "200\t27\t35\tNaloxone\tChemical\tD009270",
        "200\tCID\tD009270\tD000740",
        "200\tCID\tD003000\tD007022",
    ]))
    docs, report = convert_pubtator(nlp, path, progress=False)
    assert report.counts["relation_lines"] == 3
    assert ents(docs[0]) == [(27, 35, "Naloxone", "Chemical", "D009270")]


def test_overlapping_mentions_go_to_spans(nlp, tmp_path):
    path = write(tmp_path, block("100", TITLE_1, ABSTRACT_1, [
        "100\t17\t29\tbreastcancer\tDisease\tD001943",
        "100\t23\t29\tcancer\tDisease\tD009369",
        "100\t74\t81\tovarian\tAnatomy\tA1",
        "100\t74\t88\tovarian cancer\tDisease\tD010051",
    ]))
    with pytest.warns(BioELWarning, match=r"W005.*2 mention"):
        docs, report = convert_pubtator(nlp, path, progress=False)
    doc = docs[0]
    # longer-first at the same start: 'ovarian cancer' wins over 'ovarian'
    assert ents(doc) == [(17, 29, "breastcancer", "Disease", "D001943"),
                         (74, 88, "ovarian cancer", "Disease", "D010051")]
    overlaps = doc.spans[OVERLAPS_SPANS_KEY]
    assert [(s.start_char, s.end_char, s.label_, s.kb_id_) for s in overlaps] == [
        (23, 29, "Disease", "D009369"), (74, 81, "Anatomy", "A1")]
    assert report.counts["overlapping_mentions"] == 2
    assert report.counts["mentions"] == 2
    assert report.examples["overlapping_mentions"] == ["100:23-29", "100:74-81"]


def test_no_overlaps_no_spans_group(nlp, main_file):
    docs, _ = convert_pubtator(nlp, main_file, progress=False)
    assert OVERLAPS_SPANS_KEY not in docs[0].spans


def test_duplicate_pmids_kept_with_warning(nlp, tmp_path):
    content = (block("9", "Asthma.", "First copy.", ["9\t0\t6\tAsthma\tDisease\tD001249"])
               + block("9", "Asthma again.", "Second copy.", ["9\t0\t6\tAsthma\tDisease\tD001249"]))
    path = write(tmp_path, content)
    with pytest.warns(BioELWarning, match=r"\[W003\] Duplicate document id 9") as record:
        docs, report = convert_pubtator(nlp, path, progress=False)
    assert "(line 5)" in str(record[0].message)
    assert len(docs) == 2
    assert [d.user_data[DOC_ID_KEY] for d in docs] == ["9", "9"]
    assert [d.text for d in docs] == ["Asthma. First copy.", "Asthma again. Second copy."]
    assert report.counts["duplicate_document_ids"] == 1
    assert report.counts["documents"] == 2


# -- KB policies ----------------------------------------------------------------

def kb_file(tmp_path, ids: List[str]) -> Path:
    # one mention 'cancer' per id, in separate documents
    content = "".join(block(str(i), "Rare cancer.", "x.", [f"{i}\t5\t11\tcancer\tDisease\t{cid}"])
                      for i, cid in enumerate(ids, start=1))
    return write(tmp_path, content)


def test_alt_id_resolves_to_primary(nlp, tmp_path, kb):
    path = kb_file(tmp_path, ["D000001", "D009369", "D000001|D010051"])
    docs, report = convert_pubtator(nlp, path, kb=kb, progress=False)
    assert [d.ents[0].kb_id_ for d in docs] == ["D009369", "D009369", "D009369|D010051"]
    assert report.counts["ids_resolved_to_primary"] == 2
    assert report.counts["ids_missing_from_kb"] == 0


def test_composite_collapsing_to_one_id_is_not_composite(nlp, tmp_path, kb):
    path = kb_file(tmp_path, ["D000001|D009369"])
    docs, report = convert_pubtator(nlp, path, kb=kb, progress=False)
    assert docs[0].ents[0].kb_id_ == "D009369"
    assert report.counts["composite_mentions"] == 0


def test_mesh_prefix_stripped(nlp, tmp_path, kb):
    path = kb_file(tmp_path, ["MESH:D009369", "MESH:D007855+MESH:D010051"])
    docs, report = convert_pubtator(nlp, path, kb=kb, progress=False)
    assert [d.ents[0].kb_id_ for d in docs] == ["D009369", "D007855+D010051"]
    assert report.counts["ids_resolved_to_primary"] == 3
    assert report.counts["ids_missing_from_kb"] == 0


def test_missing_id_keep_warns(nlp, tmp_path, kb):
    path = kb_file(tmp_path, ["D999999", "D009369", "D009369|OMIM:1"])
    with pytest.warns(BioELWarning, match=r"\[W002\] 2 concept id\(s\)") as record:
        docs, report = convert_pubtator(nlp, path, kb=kb, missing="keep", progress=False)
    assert "D999999" in str(record[0].message)
    assert [d.ents[0].kb_id_ for d in docs] == ["D999999", "D009369", "D009369|OMIM:1"]
    assert report.counts["ids_missing_from_kb"] == 2
    assert report.counts["mentions_relabelled_nil"] == 0


def test_missing_id_nil(nlp, tmp_path, kb):
    path = kb_file(tmp_path, ["D999999", "D009369|OMIM:1", "-1"])
    docs, report = convert_pubtator(nlp, path, kb=kb, missing="nil", progress=False)
    assert [d.ents[0].kb_id_ for d in docs] == [NIL, "D009369", NIL]
    assert report.counts["ids_missing_from_kb"] == 2
    assert report.counts["mentions_relabelled_nil"] == 1
    assert report.counts["nil_mentions"] == 2


def test_missing_id_error_e055(nlp, tmp_path, kb):
    path = kb_file(tmp_path, ["D009369", "D999999"])
    with pytest.raises(CorpusFormatError) as err:
        convert_pubtator(nlp, path, kb=kb, missing="error", progress=False)
    assert err.value.code == "E055"
    assert "'D999999'" in str(err.value)
    assert str(path) in str(err.value)
    assert "line 7" in str(err.value)


def test_kb_not_given_keeps_ids_without_warning(nlp, tmp_path):
    path = kb_file(tmp_path, ["D999999"])
    docs, report = convert_pubtator(nlp, path, progress=False)
    assert docs[0].ents[0].kb_id_ == "D999999"
    assert report.counts["ids_missing_from_kb"] == 0


# -- malformed input --------------------------------------------------------------

@pytest.mark.parametrize("bad_line,what", [
    ("1|x|not a kind", "text line"),
    ("1\t0\t6\tAsthma\tDisease", "annotation"),            # 5 fields
    ("1\tzero\t6\tAsthma\tDisease\tD1", "annotation"),     # non-numeric start
    ("1\t0\tsix\tAsthma\tDisease\tD1", "annotation"),      # non-numeric end
    ("1\t0\t6\t\tDisease\tD1", "annotation"),              # empty mention text
    ("just some text", "annotation"),
])
def test_malformed_lines_raise_e050(nlp, tmp_path, bad_line, what):
    path = write(tmp_path, f"1|t|Asthma.\n1|a|x.\n{bad_line}\n")
    with pytest.raises(CorpusFormatError) as err:
        convert_pubtator(nlp, path, progress=False)
    assert err.value.code == "E050"
    assert f"{path}, line 3" in str(err.value)
    assert what in str(err.value)


def test_abstract_without_title_e050(nlp, tmp_path):
    path = write(tmp_path, "1|t|Asthma.\n2|a|Orphan abstract.\n")
    with pytest.raises(CorpusFormatError) as err:
        convert_pubtator(nlp, path, progress=False)
    assert err.value.code == "E050"
    assert "line 2" in str(err.value)


def test_annotation_before_text_e052(nlp, tmp_path):
    path = write(tmp_path, "1\t0\t6\tAsthma\tDisease\tD1\n1|t|Asthma.\n")
    with pytest.raises(CorpusFormatError) as err:
        convert_pubtator(nlp, path, progress=False)
    assert err.value.code == "E052"
    assert f"{path}, line 1" in str(err.value)
    assert "document 1" in str(err.value)


def test_annotation_of_other_document_e052(nlp, tmp_path):
    path = write(tmp_path, "1|t|Asthma.\n1|a|x.\n2\t0\t6\tAsthma\tDisease\tD1\n")
    with pytest.raises(CorpusFormatError) as err:
        convert_pubtator(nlp, path, progress=False)
    assert err.value.code == "E052"
    assert "line 3" in str(err.value)


def test_missing_file_e008(nlp, tmp_path):
    with pytest.raises(BioELError) as err:
        convert_pubtator(nlp, tmp_path / "absent.txt", progress=False)
    assert err.value.code == "E008"
    assert "absent.txt" in str(err.value)


def test_crlf_line_endings(nlp, tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(MAIN.replace("\n", "\r\n").encode("utf-8"))
    docs, report = convert_pubtator(nlp, path, progress=False)
    assert [d.text for d in docs] == [TEXT_1, TEXT_2]
    assert ents(docs[1])[-1] == (49, 60, "hypotension", "Disease", "D007022")
    assert report.counts["mentions"] == 8


# -- serialisation --------------------------------------------------------------

def test_docbin_round_trip(nlp, main_file, tmp_path):
    docs, _ = convert_pubtator(nlp, main_file, progress=False)
    out = tmp_path / "corpus.spacy"
    DocBin(docs=docs, store_user_data=True).to_disk(out)
    loaded = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert len(loaded) == 2
    for before, after in zip(docs, loaded):
        assert after.text == before.text
        assert ents(after) == ents(before)
        assert after.user_data[DOC_ID_KEY] == before.user_data[DOC_ID_KEY]
        assert [t.text for t in after] == [t.text for t in before]
    assert loaded[0].ents[3].kb_id_ == "D010051|D009369"
    assert loaded[1].ents[1].kb_id_ == NIL


def test_docbin_round_trip_keeps_overlaps(nlp, tmp_path):
    path = write(tmp_path, block("100", TITLE_1, ABSTRACT_1, [
        "100\t17\t29\tbreastcancer\tDisease\tD001943",
        "100\t23\t29\tcancer\tDisease\tD009369",
    ]))
    with pytest.warns(BioELWarning, match="W005"):
        docs, _ = convert_pubtator(nlp, path, progress=False)
    data = DocBin(docs=docs, store_user_data=True).to_bytes()
    loaded = list(DocBin().from_bytes(data).get_docs(spacy.blank("en").vocab))
    spans = loaded[0].spans[OVERLAPS_SPANS_KEY]
    assert [(s.start_char, s.end_char, s.kb_id_) for s in spans] == [(23, 29, "D009369")]


def test_a_second_abstract_line_is_refused(tmp_path):
    """One title and one abstract line a document: a second |a| would replace the first."""
    path = tmp_path / "p.txt"
    path.write_text("1|t|Colon cancer.\n1|a|First.\n1|a|Second.\n\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError) as err:
        list(read_pubtator(path))
    assert err.value.code == "E050" and "line 3" in str(err.value) and "line 2" in str(err.value)

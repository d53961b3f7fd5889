import gzip

import pytest

from spacy_bioel.errors import BioELError, KBFormatError
from spacy_bioel.kb.obo import load_obo

OBO = """format-version: 1.2
data-version: test/2024-01-01
ontology: hp

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0000118
name: Phenotypic abnormality
def: "A phenotypic abnormality." []
namespace: human_phenotype
alt_id: HP:0000999
synonym: "Organ abnormality" EXACT []
synonym: "Abnormal phenotype" RELATED []
synonym: "Phenotypic abnormality" EXACT []
synonym: "Broad thing" BROAD []
is_a: HP:0000001 ! All
relationship: part_of HP:0000001

[Term]
id: HP:0000002
name: Old term
is_obsolete: true

[Term]
id: UBERON:0000955
name: brain

[Typedef]
id: part_of
name: part of
"""


def write(tmp_path, text, gz=False):
    path = tmp_path / ("onto.obo.gz" if gz else "onto.obo")
    if gz:
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_load_obo(tmp_path, gz):
    kb = load_obo(write(tmp_path, OBO, gz), prefixes=["HP:"], progress=False)
    assert kb.concept_ids == ["HP:0000001", "HP:0000118"]
    term = kb["HP:0000118"]
    assert term.synonyms == ("Organ abnormality", "Abnormal phenotype", "Broad thing")
    assert term.synonym_scopes == ("EXACT", "RELATED", "BROAD")
    assert term.definition == "A phenotypic abnormality."
    assert term.types == ("human_phenotype",)
    assert term.relations == (("is_a", "HP:0000001"), ("part_of", "HP:0000001"))
    assert kb.resolve("HP:0000999") == "HP:0000118"
    report = kb.meta["load_report"]
    assert report["obsolete_terms"] == 1
    assert report["other_prefix_terms"] == 1
    assert report["duplicate_synonyms"] == 1
    assert report["non_term_stanzas"] == 1
    assert report["terms"] == 2 and report["synonyms"] == 3
    assert report["relations"] == {"is_a": 1, "part_of": 1}
    assert report["clauses_skipped"] == {} and report["cycle_edges_dropped"] == 0  # a clean file


def test_obo_scope_filter_and_no_prefix(tmp_path):
    kb = load_obo(write(tmp_path, OBO), synonym_scopes=["EXACT"], progress=False)
    assert "UBERON:0000955" in kb
    assert kb["HP:0000118"].synonyms == ("Organ abnormality",)
    assert kb.meta["load_report"]["synonyms_out_of_scope"] == 2


def test_clauses_the_grammar_rejects_are_repaired_or_skipped_and_reported(tmp_path, caplog):
    text = (
        "format-version: 1.2\n\n"
        "[Term]\nid: HP:1\nname: root\n"
        'xref: MESH:D1 some words\n'                          # line 6: value with spaces
        'def: "The root." [PMID:1 2, ISBN:978 0]\n'           # 7: def xrefs with spaces
        'synonym: "top" EXACT [PMID:1 2]\n'                   # 8: synonym xrefs with spaces
        'synonym: "summit" []\n'                              # 9: no scope (OBO 1.2: RELATED)
        "foo_bar: a tag of another tool\n"                    # 10: unknown tag
        "creation_date: yesterday\n"                          # 11: bad date
        r"xref: http\://example.org/a\ b" "\n"               # 12: backslash escapes (valid)
        "\n[Term]\nid: HP:2\nname: child\n"
        "is_a: HP 1\n"                                        # 17: id with a space: first token kept
        "is_a: HP:1 ! root\n"
        "relationship: part_of\n"                             # 19: no target: skipped
        "\n[Term]\nid: HP 3 broken\nname: lost\n"             # 22: a rejected id skips the stanza
        "\n[Term]\nid: HP:4\nname: kept after it\n")
    path = write(tmp_path, text)
    with caplog.at_level("WARNING"):
        kb = load_obo(path, progress=False)
    assert kb.concept_ids == ["HP:1", "HP:2", "HP:4"]
    root = kb["HP:1"]
    assert root.definition == "The root."
    assert root.synonyms == ("top", "summit") and root.synonym_scopes == ("EXACT", "RELATED")
    assert kb["HP:2"].relations == (("is_a", "HP"), ("is_a", "HP:1"))
    report = kb.meta["load_report"]
    assert report["clauses_repaired"] == {"def": 1, "synonym": 2, "is_a": 1}
    assert report["clauses_skipped"] == {"xref": 1, "foo_bar": 1, "creation_date": 1,
                                         "relationship": 1, "stanza": 1}
    lines = {(r["line"], r["action"]) for r in report["rejected_clauses"]}
    assert {(6, "skipped"), (7, "repaired"), (9, "repaired"), (19, "skipped"), (21, "skipped")} <= lines
    assert str(path) in caplog.text and "lines 6, 7" in caplog.text


def test_self_loops_and_cycles_are_dropped_and_counted(tmp_path):
    text = "format-version: 1.2\n"
    for term, parents in (("X:1", ["X:1"]), ("X:2", ["X:1", "X:4"]), ("X:3", ["X:2"]),
                          ("X:4", ["X:3"]), ("X:5", ["X:5", "X:3"])):
        text += f"\n[Term]\nid: {term}\nname: t{term}\n" + "".join(f"is_a: {p}\n" for p in parents)
    kb = load_obo(write(tmp_path, text), progress=False)
    report = kb.meta["load_report"]
    assert report["self_loops_dropped"] == 2 and report["cycle_edges_dropped"] == 1
    assert kb["X:1"].relations == ()
    edges = {(c.concept_id, p) for c in kb for _, p in c.relations}
    # depth first from X:2 (file order): X:2 -> X:4 -> X:3 -> X:2 is closed by X:3's edge
    assert edges == {("X:2", "X:1"), ("X:2", "X:4"), ("X:4", "X:3"), ("X:5", "X:3")}
    assert report["relations"] == {"is_a": 4}


def test_cycle_edges_break_every_cycle_without_recursion():
    from spacy_bioel.kb.graph import cycle_edges

    chain = [str(i) for i in range(5000)]
    parents = {c: [str(int(c) + 1)] for c in chain[:-1]}
    parents["4999"] = ["0"]
    assert cycle_edges(chain, parents) == [("4999", "0")]
    assert cycle_edges(["a", "b"], {"a": ["b"], "b": ["c"]}) == []


def test_obsolete_terms_kept_on_request_and_nameless_terms_skipped(tmp_path):
    kb = load_obo(write(tmp_path, OBO), prefixes=["HP:"], include_obsolete=True, progress=False)
    assert "HP:0000002" in kb and kb.meta["load_report"]["obsolete_terms_kept"] == 1
    kb = load_obo(write(tmp_path, OBO + "\n[Term]\nid: HP:7\ndef: \"x\" []\n"), progress=False)
    assert "HP:7" not in kb and kb.meta["load_report"]["terms_without_name"] == 1


def test_an_unreadable_header_or_empty_ontology_is_a_coded_error(tmp_path):
    with pytest.raises(BioELError) as err:
        load_obo(write(tmp_path, OBO), prefixes=["GO:"], progress=False)
    assert err.value.code == "E012"
    with pytest.raises(KBFormatError) as err:
        load_obo(write(tmp_path, "\n\n"), progress=False)
    assert err.value.code == "E021"


def test_default_namespace_is_the_type_of_terms_without_one(tmp_path):
    path = tmp_path / "hp.obo"
    path.write_text(OBO.replace("ontology: hp\n", "ontology: hp\ndefault-namespace: hp_default\n"))
    kb = load_obo(path, progress=False)
    assert kb["HP:0000001"].types == ("hp_default",)  # no namespace clause: the header's
    assert kb["HP:0000118"].types == ("human_phenotype",)  # its own clause wins
    assert kb["UBERON:0000955"].types == ("hp_default",)


def test_an_unknown_synonym_scope_is_refused_not_every_synonym_dropped(tmp_path):
    with pytest.raises(BioELError) as err:
        load_obo(write(tmp_path, OBO), synonym_scopes=["EXCAT"], progress=False)
    assert err.value.code == "E175" and "EXCAT" in str(err.value)
    kb = load_obo(write(tmp_path, OBO), synonym_scopes=["exact"], progress=False)  # any case
    assert kb["HP:0000118"].synonyms == ("Organ abnormality",)

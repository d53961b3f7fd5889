import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.errors import BioELError, KBFormatError
from spacy_bioel.kb.knowledge_base import KB_MAGIC
from spacy_bioel.kb.normalize import normalize_text


def make_kb() -> KnowledgeBase:
    kb = KnowledgeBase(strip_prefixes=("MESH:",), name="toy")
    kb.add(Concept("D1", "Colorectal Cancer", ("CRC", "Cancer of the colon"),
                   types=("Neoplasm",), definition="A cancer.", alt_ids=("OMIM:1",),
                   relations=(("is_a", "D0"),)))
    kb.add(Concept("D2", "Crohn's disease", ("CRC",), alt_ids=("OMIM:2",)))
    kb.finalize_alt_ids()
    return kb


@pytest.mark.parametrize("raw,expected", [
    ("Crohn's  Disease", "crohn s disease"),
    ("TYPE-2 diabetes", "type 2 diabetes"),
    ("  ÉCOLE\u00a0(x) ", "école x"),
    ("ﬁbrosis", "fibrosis"),  # NFKC ligature
    ("---", ""),
])
def test_normalize_text(raw, expected):
    assert normalize_text(raw) == expected


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=24))
@settings(max_examples=500, deadline=None)
def test_normalize_text_ascii_path_equals_the_unicode_rule(raw):
    """ASCII text takes a byte-table path: the same as NFKC + casefold + runs of
    non-word characters to one space, stripped."""
    import re
    import unicodedata

    rule = re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", raw).casefold()).strip()
    assert normalize_text(raw) == rule


def test_resolve_alt_ids_and_prefixes():
    kb = make_kb()
    assert kb.resolve("D1") == "D1"
    assert kb.resolve("OMIM:2") == "D2"
    assert kb.resolve(" MESH:D1") == "D1"
    assert kb.resolve("D9") is None
    assert "OMIM:1" in kb and "D9" not in kb
    assert kb["OMIM:1"].canonical_name == "Colorectal Cancer"
    with pytest.raises(KeyError, match="E006"):
        kb["D9"]


def test_alias_index_is_normalised_and_ambiguous():
    kb = make_kb()
    assert kb.lookup_alias("crc") == ["D1", "D2"]
    assert kb.lookup_alias("CROHN S DISEASE") == ["D2"]
    assert kb.lookup_alias("unknown") == []


def test_keyed_names_are_names_with_their_normalised_key():
    kb = KnowledgeBase()
    kb.add(Concept("C1", "Crohn's Disease", ("crohn s disease", "CD", "...")))
    kb.add(Concept("C2", "Colon cancer"))
    keyed = list(kb.keyed_names())
    assert [(c, n) for c, n, _ in keyed] == list(kb.names()) == [
        ("C1", "Crohn's Disease"), ("C1", "CD"), ("C2", "Colon cancer")]  # one per key, none empty
    assert [k for _, _, k in keyed] == [normalize_text(n) for _, n, _ in keyed]


def test_duplicate_and_empty_name_errors():
    kb = make_kb()
    with pytest.raises(KBFormatError) as err:
        kb.add(Concept("D1", "again"), path="f.txt", line=9, first_line=1)
    assert err.value.code == "E002" and "f.txt, line 9" in str(err.value)
    with pytest.raises(KBFormatError) as err:
        kb.add(Concept("D5", "  "), path="f.txt", line=3)
    assert err.value.code == "E003"


def test_alt_id_conflicts_are_counted(caplog):
    kb = KnowledgeBase()
    kb.add(Concept("A", "alpha", alt_ids=("B", "X")))
    kb.add(Concept("B", "beta", alt_ids=("X",)))
    report = kb.finalize_alt_ids("src.txt")
    assert report == {"alt_ids": 3, "conflicts_with_primary": 1, "ambiguous_alt_ids": 1}
    assert kb.resolve("B") == "B"  # primary ids win
    assert kb.resolve("X") == "A"  # first meaning kept
    assert "W001" in caplog.text


def test_round_trip_bytes_and_disk(tmp_path):
    kb = make_kb()
    kb.meta["source"] = "test"
    path = tmp_path / "kb.bioelkb"
    kb.to_disk(path)
    loaded = KnowledgeBase.from_disk(path)
    assert list(loaded) == list(kb)
    assert loaded.alt_ids == kb.alt_ids
    assert loaded.strip_prefixes == ("MESH:",)
    assert loaded.meta["source"] == "test"
    assert loaded.resolve("MESH:D2") == "D2"
    assert loaded.stats() == kb.stats()


def test_binary_errors(tmp_path):
    bad = tmp_path / "bad.bioelkb"
    bad.write_bytes(b"not a kb")
    with pytest.raises(BioELError) as err:
        KnowledgeBase.from_disk(bad)
    assert err.value.code == "E004"
    data = make_kb().to_bytes()
    future = KB_MAGIC + (99).to_bytes(2, "little") + data[len(KB_MAGIC) + 2:]
    with pytest.raises(BioELError) as err:
        KnowledgeBase.from_bytes(future)
    assert err.value.code == "E005"
    with pytest.raises(BioELError) as err:
        KnowledgeBase.from_bytes(data[:-20])
    assert err.value.code == "E013"
    with pytest.raises(BioELError) as err:
        KnowledgeBase.from_disk(tmp_path / "missing.bioelkb")
    assert err.value.code == "E008"


def test_derived_kbs():
    kb = make_kb()
    names_only = kb.without_synonyms()
    assert [c.synonyms for c in names_only] == [(), ()]
    assert names_only.resolve("OMIM:1") == "D1"
    sub = kb.filtered(["D2"])
    assert sub.concept_ids == ["D2"] and sub.resolve("OMIM:1") is None
    assert kb.stats()["names"] == 5 and kb.stats()["distinct_normalised_names"] == 4


def test_merge_keeps_types_and_labels_untyped_concepts():
    from spacy_bioel import Concept, KnowledgeBase

    doid = KnowledgeBase(name="DOID")
    doid.add(Concept("DOID:1", "asthma", types=("disease_ontology",), alt_ids=("DOID:9",)))
    doid.finalize_alt_ids()
    hp = KnowledgeBase(name="HP")
    hp.add(Concept("HP:1", "wheezing"))
    merged = KnowledgeBase.merge([doid, hp])
    assert merged.name == "DOID + HP" and len(merged) == 2
    assert merged["DOID:9"].concept_id == "DOID:1"  # alt ids survive
    assert merged["HP:1"].types == ("HP",)  # untyped: its source KB's name
    assert KnowledgeBase.merge([doid, hp], label_untyped=False)["HP:1"].types == ()
    assert KnowledgeBase.from_bytes(merged.to_bytes())["HP:1"].types == ("HP",)


def test_merge_refuses_overlapping_ids():
    import pytest

    from spacy_bioel import Concept, KnowledgeBase
    from spacy_bioel.errors import BioELError

    a, b = KnowledgeBase(name="a"), KnowledgeBase(name="b")
    a.add(Concept("X:1", "one"))
    b.add(Concept("X:1", "uno"))
    with pytest.raises(BioELError, match="E015"):
        KnowledgeBase.merge([a, b])


@pytest.mark.parametrize("concept_id", ["", "   ", "NIL"])
def test_an_empty_or_nil_concept_id_is_refused(concept_id):
    from spacy_bioel.errors import KBFormatError

    kb = KnowledgeBase()
    with pytest.raises(KBFormatError) as err:
        kb.add(Concept(concept_id, "asthma"), path="kb.tsv", line=3)
    assert err.value.code == "E022" and "kb.tsv, line 3" in str(err.value)


def test_ids_are_stripped_in_one_place_and_resolve():
    kb = KnowledgeBase(strip_prefixes=("MESH:",))
    kb.add(Concept(" D001 ", "colon cancer", alt_ids=(" OMIM:1", "", "OMIM:1")))
    assert [c.concept_id for c in kb] == ["D001"] and kb["D001"].alt_ids == ("OMIM:1",)
    kb.finalize_alt_ids()
    assert kb.resolve("MESH: D001") == kb.resolve("OMIM:1") == "D001"


@pytest.mark.parametrize("concept_id, what", [("D0 01", "white space"), ("D1|D2", "'|'"),
                                              ("D1+D2", "'+'"), ("D1\x07", "control character")])
def test_an_id_no_gold_field_or_column_can_hold_is_refused(concept_id, what):
    kb = KnowledgeBase()
    with pytest.raises(KBFormatError) as err:
        kb.add(Concept(concept_id, "asthma"), path="kb.tsv", line=3)
    assert err.value.code == "E250" and "kb.tsv, line 3" in str(err.value) and what in str(err.value)
    with pytest.raises(KBFormatError, match="E250"):
        kb.add(Concept("D3", "asthma", alt_ids=(concept_id,)))


def test_a_kb_files_digest_without_building_it(tmp_path):
    """`file_digest` (the default pipeline's cache key, read without building the
    KB) equals the loaded KB's `digest`, with and without cross-references, for an
    embedded KB too; a file that is no KB or is cut short keeps its coded error."""
    from spacy_bioel.errors import BioELError

    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colon cancer", synonyms=("CRC",)))
    kb.to_disk(tmp_path / "plain.bioelkb")
    assert KnowledgeBase.file_digest(tmp_path / "plain.bioelkb") == kb.digest()
    kb.add(Concept("D2", "asthma", xrefs=("UMLS:C0004096",)))
    kb.to_disk(tmp_path / "xrefs.bioelkb")
    assert KnowledgeBase.file_digest(tmp_path / "xrefs.bioelkb") == kb.digest() != \
        KnowledgeBase.file_digest(tmp_path / "plain.bioelkb")
    assert KnowledgeBase.file_digest("embedded:doid") == KnowledgeBase.from_disk("embedded:doid").digest()
    (tmp_path / "not.bioelkb").write_text("D1\tcolon cancer\n")
    with pytest.raises(BioELError) as err:
        KnowledgeBase.file_digest(tmp_path / "not.bioelkb")
    assert err.value.code == "E004"
    data = (tmp_path / "xrefs.bioelkb").read_bytes()
    (tmp_path / "cut.bioelkb").write_bytes(data[:len(data) // 2])
    with pytest.raises(BioELError) as err:
        KnowledgeBase.file_digest(tmp_path / "cut.bioelkb")
    assert err.value.code == "E013"


def _payload_kb(payload: dict) -> bytes:
    """A KB file whose msgpack payload is `payload` (to damage one column)."""
    import zlib

    import srsly

    from spacy_bioel.kb.knowledge_base import KB_FORMAT_VERSION

    return KB_MAGIC + KB_FORMAT_VERSION.to_bytes(2, "little") + zlib.compress(srsly.msgpack_dumps(payload))


def test_a_loaded_kb_reads_its_concepts_from_the_packed_file():
    """A loaded KB keeps its file's payload and decodes a concept when read: every
    field comes back equal (scopes, types, definition, relations, cross-references
    and non-ASCII names too), concepts added or replaced after loading keep the
    KB's order, derived KBs and copies of a loaded one are the built one's, and the
    digest of a loaded KB is the built one's."""
    kb = make_kb()
    kb.add(Concept("HP:1", "Ataxie cérébelleuse", ("Sjögren–Larsson", "x"), synonym_scopes=("EXACT", "RELATED"),
                   types=("phenotype",), xrefs=("UMLS:C0007758", "MESH:D002524")))
    loaded = KnowledgeBase.from_bytes(kb.to_bytes())
    assert list(loaded) == list(kb) and loaded["HP:1"] == kb["HP:1"] and loaded.get("OMIM:2") == kb["D2"]
    assert loaded.digest() == kb.digest() and list(loaded.keyed_names()) == list(kb.keyed_names())
    assert list(loaded.filtered(["HP:1", "D1"])) == list(kb.filtered(["HP:1", "D1"]))
    assert list(loaded.without_synonyms()) == list(kb.without_synonyms())
    assert list(pickle.loads(pickle.dumps(loaded))) == list(copy.deepcopy(loaded)) == list(kb)
    loaded.add(Concept("D3", "asthma"))
    kb.add(Concept("D3", "asthma"))
    assert loaded.concept_ids == ["D1", "D2", "HP:1", "D3"] and loaded.digest() == kb.digest()
    assert KnowledgeBase.from_bytes(loaded.to_bytes()).digest() == kb.digest()


@pytest.mark.parametrize("column,value,problem", [
    ("synonyms", [["CRC"], "not a list"], "synonyms value of concept 'D2'"),
    ("relations", [[["is_a"]], []], "relations value of concept 'D1'"),
    ("definitions", [None, 3], "definitions value of concept 'D2'"),
    ("names", ["colon cancer"], "columns of different lengths"),
])
def test_a_kb_file_with_a_damaged_column_names_it(column, value, problem):
    """Reading a KB file checks every concept's value of every column as it goes (the
    concepts are decoded only later): a damaged one is E013 naming the column and
    the concept, not an error at the first read of that concept."""
    payload = {"name": "toy", "strip_prefixes": [], "meta": {}, "ids": ["D1", "D2"],
               "names": ["colon cancer", "asthma"], "synonyms": [[], []], "scopes": [[], []],
               "types": [[], []], "definitions": [None, None], "alt_ids": [[], []],
               "relations": [[], []], "alt_map": {}}
    assert len(KnowledgeBase.from_bytes(_payload_kb(payload))) == 2
    payload[column] = value
    with pytest.raises(BioELError) as err:
        KnowledgeBase.from_bytes(_payload_kb(payload))
    assert err.value.code == "E013" and problem in str(err.value)


def test_one_field_of_many_concepts_is_read_alone():
    """`field_values` reads one column of the listed concepts, loaded or added, and an
    unknown id is E006 as `kb[id]` is."""
    kb = make_kb()
    loaded = KnowledgeBase.from_bytes(kb.to_bytes())
    loaded.add(Concept("D3", "asthma", types=("Disease",), xrefs=("UMLS:C0004096",)))
    assert loaded.field_values("types", ["D3", "D1", "D2"]) == [("Disease",), ("Neoplasm",), ()]
    assert loaded.field_values("xrefs", ["D2", "D3"]) == [(), ("UMLS:C0004096",)]
    with pytest.raises(KeyError, match="E006"):
        loaded.field_values("types", ["OMIM:1"])

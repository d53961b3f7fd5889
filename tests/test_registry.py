"""Every registered name resolves through spaCy's registry (entry points)."""
from pathlib import Path

import pytest
from spacy.util import registry
from thinc.api import Config

from spacy_bioel import Concept, KnowledgeBase

MISC_NAMES = [
    "spacy-bioel.KBFromFile.v1", "spacy-bioel.MedicKB.v1", "spacy-bioel.CTDDiseasesKB.v1",
    "spacy-bioel.OBOKB.v1", "spacy-bioel.ScispacyJSONLKB.v1", "spacy-bioel.UMLSKB.v1",
    "spacy-bioel.AskAPatientKB.v1", "spacy-bioel.ExactMatchCandidates.v1",
    "spacy-bioel.TfidfCandidates.v1",
]


@pytest.mark.parametrize("name", MISC_NAMES)
def test_entry_points_registered(name):
    assert registry.misc.get(name) is not None


def test_entry_points_declared_in_metadata():
    from importlib.metadata import entry_points

    declared = {ep.name for ep in entry_points(group="spacy_misc")}
    assert set(MISC_NAMES) <= declared


def test_resolve_kb_and_generator_from_config(tmp_path: Path):
    kb = KnowledgeBase(name="toy")
    kb.add(Concept("D1", "colorectal carcinoma", ("CRC",)))
    kb.to_disk(tmp_path / "kb.bioelkb")
    config = Config().from_str(f"""
[kb]
@misc = "spacy-bioel.KBFromFile.v1"
path = "{tmp_path / 'kb.bioelkb'}"

[tfidf]
@misc = "spacy-bioel.TfidfCandidates.v1"
ngram_range = [2, 4]
word_weight = 0.3

[exact]
@misc = "spacy-bioel.ExactMatchCandidates.v1"
""")
    resolved = registry.resolve(config)
    loaded = resolved["kb"]()
    assert loaded.concept_ids == ["D1"]
    tfidf = resolved["tfidf"](loaded)
    assert tfidf.char_vectorizer.ngram_range == (2, 4) and tfidf.word_weight == 0.3
    assert resolved["exact"](loaded)(["crc"], k=1) == [[("D1", 1.0)]]


def test_medic_and_obo_loaders_from_config(tmp_path: Path):
    (tmp_path / "medic.txt").write_text("D1||Colorectal Carcinoma|CRC\n")
    (tmp_path / "o.obo").write_text("format-version: 1.2\n\n[Term]\nid: HP:1\nname: a\n\n"
                                    "[Term]\nid: GO:1\nname: b\n")
    config = Config().from_str(f"""
[medic]
@misc = "spacy-bioel.MedicKB.v1"
path = "{tmp_path / 'medic.txt'}"

[obo]
@misc = "spacy-bioel.OBOKB.v1"
path = "{tmp_path / 'o.obo'}"
prefixes = ["HP:"]
""")
    resolved = registry.resolve(config)
    assert resolved["medic"]().concept_ids == ["D1"]
    assert resolved["obo"]().concept_ids == ["HP:1"]

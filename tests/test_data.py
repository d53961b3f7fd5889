"""Integration tests on the real corpora in ../shared/data (marker: data)."""
import shutil
import subprocess
import sys
import warnings

import pytest
import spacy
import srsly

from spacy_bioel.corpora.askapatient import convert_askapatient
from spacy_bioel.corpora.obo_syn import obo_synonym_splits
from spacy_bioel.corpora.pubtator import convert_pubtator, read_pubtator
from spacy_bioel.errors import BioELWarning
from spacy_bioel.kb.medic import load_ctd_diseases, load_medic_dictionary
from spacy_bioel.kb.obo import load_obo

from .conftest import REPO_ROOT

pytestmark = pytest.mark.data
NCBI = {"train": "NCBItrainset_corpus.txt", "dev": "NCBIdevelopset_corpus.txt",
        "test": "NCBItestset_corpus.txt"}
CDR = {"train": "CDR_TrainingSet.PubTator.txt", "dev": "CDR_DevelopmentSet.PubTator.txt",
       "test": "CDR_TestSet.PubTator.txt"}


@pytest.fixture(scope="module")
def medic(data_root):
    return load_medic_dictionary(data_root / "ctd_medic/medic_06Jul2012.txt", progress=False)


@pytest.fixture(scope="module")
def ctd(data_root):
    return load_ctd_diseases(data_root / "ctd_medic/CTD_diseases_2017-06-06.tsv.gz", progress=False)


def test_medic_counts(medic):
    stats = medic.stats()
    assert stats["concepts"] == 11915 and stats["names"] == 76237


def test_ncbi_mention_counts(data_root, medic):
    nlp = spacy.blank("en")
    counts = {}
    for split, name in NCBI.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BioELWarning)  # the duplicate train PMID
            docs, report = convert_pubtator(nlp, data_root / "ncbi_disease" / name, kb=medic,
                                            progress=False)
        counts[split] = sum(len(d.ents) for d in docs)
        assert report.counts.get("ids_missing_from_kb", 0) == 0
        assert report.counts.get("overlapping_mentions", 0) == 0
    assert counts == {"train": 5145, "dev": 787, "test": 960}


def test_ncbi_medic_coverage(data_root, medic):
    raw_ids = set()
    for name in NCBI.values():
        for doc in read_pubtator(data_root / "ncbi_disease" / name):
            for mention in doc.mentions:
                raw_ids.update(mention.concept_ids)
    exact = {i for i in raw_ids if i in medic.concept_ids or i in medic.alt_ids}
    resolved = {i for i in raw_ids if medic.resolve(i) is not None}
    assert len(raw_ids) == 751
    assert len(exact) == 750 and raw_ids - exact == {"MESH:C535662"}
    assert len(resolved) == 751  # once the MESH: prefix is normalised


def test_bc5cdr_disease_counts_and_ctd_coverage(data_root, ctd):
    nlp = spacy.blank("en")
    ids = set()
    counts = {}
    for split, name in CDR.items():
        docs, report = convert_pubtator(nlp, data_root / "bc5cdr" / name, types=["Disease"],
                                        kb=ctd, progress=False)
        counts[split] = sum(len(d.ents) for d in docs)
        assert report.counts["skipped_type:Chemical"] > 5000
        for doc in read_pubtator(data_root / "bc5cdr" / name):
            for m in doc.mentions:
                if m.label == "Disease":
                    ids.update(m.concept_ids)
    assert counts == {"train": 4182, "dev": 4244, "test": 4424}
    assert len(ids) == 1081
    assert all(ctd.resolve(i) for i in ids)


def test_ontology_counts(data_root):
    hp = load_obo(data_root / "obo_ontologies/hp_2025-01-16.obo.gz", prefixes=["HP:"], progress=False)
    doid = load_obo(data_root / "obo_ontologies/doid_2024-01-31.obo.gz", prefixes=["DOID:"],
                    progress=False)
    assert len(hp) == 19034 and len(doid) == 11501
    assert hp.stats()["relations"] >= 23392
    docs, names_kb, report = obo_synonym_splits(spacy.blank("en"), doid, setting="zero-shot")
    train_ids = {e.kb_id_ for d in docs["train"] for e in d.ents}
    test_ids = {e.kb_id_ for d in docs["test"] for e in d.ents}
    assert not train_ids & test_ids
    assert len(names_kb) == len(doid) and names_kb.stats()["synonyms"] == 0


def test_graph_prompt_templates_never_hold_a_test_synonym(data_root):
    """GraphPrompt's T1 / T2 templates on the HP and DOID zero-shot splits (dev
    share as in project.yml) and few-shot splits: their synonyms are training ones,
    and a held-out query occurs in a template only as some concept's KB name (DOID
    has 15 such names)."""
    import numpy as np

    from spacy_bioel.research.graphprompt_templates import GraphTemplates
    from spacy_bioel.kb.normalize import normalize_text

    for name, prefix in (("hp_2025-01-16", "HP:"), ("doid_2024-01-31", "DOID:")):
        kb = load_obo(data_root / f"obo_ontologies/{name}.obo.gz", prefixes=[prefix],
                      progress=False)
        for setting in ("zero-shot", "few-shot"):
            docs, names_kb, _ = obo_synonym_splits(spacy.blank("en"), kb, setting=setting,
                                                   zero_shot_dev_fraction=0.1)
            train = [(d.ents[0].text, d.ents[0].kb_id_) for d in docs["train"]]
            held_out = {normalize_text(d.ents[0].text)
                        for split in ("dev", "test") for d in docs[split]}
            templates = GraphTemplates(names_kb, [c.concept_id for c in names_kb], train, "[MASK]")
            assert templates.edges and templates.paths
            used = {normalize_text(s) for synonyms in templates.synonyms.values() for s in synonyms}
            assert used and not used & held_out
            # a template reads only KB names and these synonyms: every [MASK]-free part of
            # a sampled first-order template is a name or a used synonym
            rng = np.random.default_rng(0)
            allowed = used | {normalize_text(n) for n in templates.names}
            for text, _ in templates.first_order(rng, 2000):
                surface = text.replace("[MASK] is a kind of ", "")
                surface = surface.replace(" is a kind of [MASK]", "")
                assert normalize_text(surface) in allowed


def test_askapatient_rows(data_root):
    nlp = spacy.blank("en")
    sizes = {}
    for split, n in (("train", 15612), ("validation", 845), ("test", 867)):
        docs, report = convert_askapatient(
            nlp, data_root / f"askapatient_fold0/AskAPatient.fold-0.{split}.txt")
        sizes[split] = len(docs)
        if split == "train":
            assert report.counts["latin1_lines"] == 2
    assert sizes == {"train": 15612, "validation": 845, "test": 867}


def test_ncbi_workflow_end_to_end(data_root, tmp_path):
    """`python -m bench project ncbi` (the lab's workflow over a copy of project.yml)
    writes stats and baseline metrics."""
    shutil.copy(REPO_ROOT / "project.yml", tmp_path / "project.yml")
    (tmp_path / "bench").symlink_to(REPO_ROOT / "bench")  # the lab, as in a checkout
    result = subprocess.run(
        [sys.executable, "-m", "bench", "project", "ncbi", f"--vars.data_root={data_root}",
         "--vars.bootstrap=100"],
        capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    stats = srsly.read_json(tmp_path / "metrics/ncbi/stats.json")["splits"]
    assert [stats[s]["mentions"] for s in ("train", "dev", "test")] == [5145, 787, 960]
    tfidf = srsly.read_json(tmp_path / "metrics/ncbi/tfidf_kb.json")
    exact = srsly.read_json(tmp_path / "metrics/ncbi/exact_kb.json")
    assert tfidf["n"] == 960 and tfidf["refined"]["n"] > 0
    assert exact["refined"]["acc@1"] == 0.0  # refined mentions are, by definition, no KB name
    assert tfidf["acc@1"] > exact["acc@1"]

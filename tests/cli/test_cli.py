"""The command-line interface end to end on a tiny MEDIC dictionary and tiny
PubTator corpora written in the test: kb build, convert, stats, evaluate
(baselines and a saved pipeline), table and link."""
import json
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import spacy
import srsly
from spacy.language import Language
from spacy.tokens import Doc, Span
from typer.testing import CliRunner

from bench.cli import app as lab_app
from spacy_bioel.cli import app
from spacy_bioel.errors import BioELError
from spacy_bioel.kb import KnowledgeBase
from spacy_bioel.kb.concept import Concept
from spacy_bioel.kb import KnowledgeBase

from ..utils import save_linker_pipeline

MEDIC_LINES = [
    "D000001|OMIM:100100||Colorectal cancer|CRC|Colon carcinoma",
    "D000002||Breast cancer|Mammary carcinoma",
    "D000003||Diabetes mellitus|DM",
    "D000004||Hepatoblastoma",
]

# (pmid, title, abstract, [(mention, type, ids)]); mentions are found in order in the text
TRAIN_DOCS = [
    ("1", "Colorectal cancer in families.", "Patients with colon tumours and DM were studied.",
     [("Colorectal cancer", "Disease", "D000001"), ("colon tumours", "Disease", "D000001"),
      ("DM", "Disease", "MESH:D000003")]),
]
TEST_DOCS = [
    ("2", "Breast cancer and colon tumours.", "A hepatoblastoma case with CRC.",
     [("Breast cancer", "Disease", "D000002"), ("colon tumours", "Disease", "D000001"),
      ("hepatoblastoma", "Disease", "D000004"), ("CRC", "Disease", "OMIM:100100")]),
    ("3", "Mammary tumour and syndrome X.", "",
     [("Mammary tumour", "Disease", "D000002"), ("syndrome X", "Disease", "-1")]),
]
# exact match, KB names only: Breast cancer, hepatoblastoma, CRC correct; colon tumours and
# Mammary tumour have no exact name; syndrome X is NIL.
# seen (train ids D000001, D000003): colon tumours, CRC. refined (neither a train string nor
# a KB name): Mammary tumour only.


def pubtator(docs) -> str:
    lines = []
    for pmid, title, abstract, mentions in docs:
        text = f"{title} {abstract}"
        lines += [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
        cursor = 0
        for mention, label, ids in mentions:
            start = text.index(mention, cursor)
            cursor = start + len(mention)
            lines.append(f"{pmid}\t{start}\t{cursor}\t{mention}\t{label}\t{ids}")
        lines.append("")
    return "\n".join(lines) + "\n"


runner = CliRunner()


LAB_COMMANDS = {"stats", "compare", "table", "seeds-table"}  # `python -m bench`


def invoke(*args: str):
    return runner.invoke(lab_app if str(args[0]) in LAB_COMMANDS else app, [str(a) for a in args])


def ok(*args: str):
    result = invoke(*args)
    assert result.exit_code == 0, (result.output, result.exception)
    return result


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """KB + converted corpus, built once through the CLI."""
    root = tmp_path_factory.mktemp("cli")
    (root / "medic.txt").write_text("\n".join(MEDIC_LINES) + "\n", encoding="utf-8")
    (root / "train.PubTator.txt").write_text(pubtator(TRAIN_DOCS), encoding="utf-8")
    (root / "test.PubTator.txt").write_text(pubtator(TEST_DOCS), encoding="utf-8")
    ok("kb", "build", "medic", root / "medic.txt", root / "medic.bioelkb", "--name", "tiny MEDIC")
    ok("convert", "pubtator", root / "train.PubTator.txt", root / "test.PubTator.txt",
       root / "corpus", "--names", "train,test", "--kb", root / "medic.bioelkb")
    return root


@pytest.fixture(scope="module")
def kb_path(workdir) -> Path:
    return workdir / "medic.bioelkb"


@pytest.fixture(scope="module")
def train_path(workdir) -> Path:
    return workdir / "corpus" / "train.spacy"


@pytest.fixture(scope="module")
def test_path(workdir) -> Path:
    return workdir / "corpus" / "test.spacy"


# -- kb ----------------------------------------------------------------------
def test_kb_build(workdir, kb_path):
    kb = KnowledgeBase.from_disk(kb_path)
    assert kb.name == "tiny MEDIC"
    assert kb.concept_ids == ["D000001", "D000002", "D000003", "D000004"]
    assert kb.resolve("OMIM:100100") == "D000001"
    assert kb.lookup_alias("crc") == ["D000001"]
    stats = srsly.read_json(workdir / "medic.stats.json")
    assert stats["format"] == "medic"
    assert stats["concepts"] == 4 and stats["synonyms"] == 4 and stats["alt_ids"] == 1


def test_kb_build_obo_reports_what_it_repaired_and_skipped(tmp_path):
    obo = tmp_path / "onto.obo"
    obo.write_text("format-version: 1.2\n\n[Term]\nid: X:1\nname: one\nxref: A:1 with spaces\n"
                   "\n[Term]\nid: X:2\nname: two\nis_a: X:2\nis_obsolete: true\n")
    result = ok("kb", "build", "obo", obo, tmp_path / "o.bioelkb", "--include-obsolete")
    assert "Load report" in result.output and '"clauses_skipped": {"xref": 1}' in result.output
    meta = srsly.read_json(tmp_path / "o.stats.json")["meta"]["load_report"]
    assert meta["rejected_clauses"][0]["line"] == 6 and meta["self_loops_dropped"] == 1
    assert meta["obsolete_terms_kept"] == 1


def test_kb_stats_command(kb_path):
    result = ok("kb", "stats", kb_path)
    assert "<KnowledgeBase 'tiny MEDIC': 4 concepts>" in result.output
    assert '"concepts": 4' in result.output


def test_kb_build_unknown_format(tmp_path, workdir):
    result = invoke("kb", "build", "nope", workdir / "medic.txt", tmp_path / "x.bioelkb")
    assert isinstance(result.exception, BioELError) and result.exception.code == "E007"


# -- convert / stats ---------------------------------------------------------
def test_convert(workdir, train_path, test_path):
    nlp = spacy.blank("en")
    from spacy.tokens import DocBin
    train = list(DocBin().from_disk(train_path).get_docs(nlp.vocab))
    test = list(DocBin().from_disk(test_path).get_docs(nlp.vocab))
    assert [(e.text, e.kb_id_) for d in train for e in d.ents] == [
        ("Colorectal cancer", "D000001"), ("colon tumours", "D000001"), ("DM", "D000003")]
    assert [(e.text, e.label_, e.kb_id_) for d in test for e in d.ents] == [
        ("Breast cancer", "Disease", "D000002"), ("colon tumours", "Disease", "D000001"),
        ("hepatoblastoma", "Disease", "D000004"), ("CRC", "Disease", "D000001"),
        ("Mammary tumour", "Disease", "D000002"), ("syndrome X", "Disease", "NIL")]
    assert [d.user_data["bioel_doc_id"] for d in test] == ["2", "3"]
    report = srsly.read_json(workdir / "corpus" / "conversion_report.json")
    assert set(report) == {"train", "test"}
    assert report["test"]["counts"]["mentions"] == 6
    assert report["test"]["counts"]["nil_mentions"] == 1
    assert report["test"]["counts"]["ids_resolved_to_primary"] == 1
    assert report["train"]["counts"]["ids_resolved_to_primary"] == 1


def test_convert_unknown_format(tmp_path, workdir):
    result = invoke("convert", "brat", workdir / "test.PubTator.txt", tmp_path)
    assert isinstance(result.exception, BioELError) and result.exception.code == "E054"


def test_stats(workdir, kb_path, train_path, test_path, tmp_path):
    output = tmp_path / "stats.json"
    result = ok("stats", train_path, test_path, "--kb", kb_path, "--title", "tiny",
                "--output", output)
    data = srsly.read_json(output)
    assert data["title"] == "tiny" and data["kb"] == "tiny MEDIC"
    train, test = data["splits"]["train"], data["splits"]["test"]
    assert (train["documents"], train["mentions"], train["unique_concepts"]) == (1, 3, 2)
    assert (test["documents"], test["mentions"], test["nil_mentions"]) == (2, 6, 1)
    assert test["unique_concepts"] == 3 and test["kb_coverage"] == 1.0
    assert test["unseen_concepts"] == 2                     # D000002, D000004
    assert test["unseen_mentions_share"] == pytest.approx(3 / 5)
    assert output.with_suffix(".md").read_text(encoding="utf-8") in result.output
    assert "| test | 2 | 6 | 1 | 0 | 3 | 66.7% / 60.0% | 3/3 (100.0%) |" in result.output


# -- evaluate: baselines -----------------------------------------------------
REPORT_KEYS = {"n", "n_total", "acc@1", "acc@5", "acc@10", "recall@64", "map", "ci95",
               "refined", "seen", "unseen", "by_type", "failure_stages", "nil", "meta",
               "frequent_errors", "error_kinds"}


def test_evaluate_exact(kb_path, train_path, test_path, tmp_path):
    output = tmp_path / "exact.json"
    result = ok("evaluate", "exact", test_path, "--kb", kb_path, "--train", train_path,
                "--output", output, "--bootstrap", "200", "--dataset", "tiny")
    report = json.loads(output.read_text(encoding="utf-8"))
    assert REPORT_KEYS <= set(report)
    assert report["n_total"] == 6 and report["n"] == 5
    assert report["acc@1"] == pytest.approx(3 / 5)
    assert report["acc@5"] == pytest.approx(3 / 5)
    assert report["map"] == pytest.approx(3 / 5)
    assert report["failure_stages"] == {"correct": 3, "gold_ranked_too_low": 0,
                                        "gold_not_in_candidates": 2, "gold_not_in_kb": 0}
    assert report["refined"]["n"] == 1 and report["refined"]["acc@1"] == 0.0
    assert report["seen"]["n"] == 2 and report["seen"]["acc@1"] == pytest.approx(0.5)
    assert report["unseen"]["n"] == 3 and report["unseen"]["acc@1"] == pytest.approx(2 / 3)
    assert report["by_type"]["Disease"]["n"] == 5
    assert set(report["ci95"]) == {"acc@1", "acc@5", "acc@10", "recall@64", "map"}
    lo, hi = report["ci95"]["acc@1"]
    assert lo <= 0.6 <= hi
    # the two misses have no candidate; the tiny KB has no is_a, so no hierarchy table
    assert report["error_kinds"]["seen"] == {"predicted_nil": 2}
    assert "hierarchy" not in report["error_kinds"]
    tree = KnowledgeBase(name="tree")
    tree.add(Concept("D000002", "breast cancer", relations=(("is_a", "D000001"),)))
    tree.add(Concept("D000001", "cancer"))
    tree.to_disk(tmp_path / "tree.bioelkb")
    ok("evaluate", "exact", test_path, "--kb", kb_path, "--train", train_path, "--output",
       tmp_path / "tree.json", "--bootstrap", "0", "--hierarchy-kb", tmp_path / "tree.bioelkb")
    tree_report = json.loads((tmp_path / "tree.json").read_text(encoding="utf-8"))
    assert tree_report["error_kinds"]["hierarchy"] == {"predicted_nil": 2}
    assert tree_report["meta"]["hierarchy_kb"] == str(tmp_path / "tree.bioelkb")
    # NIL: syndrome X, colon tumours and Mammary tumour answer NIL (no exact name)
    nil = report["nil"]
    assert (nil["n_gold_nil"], nil["n_pred_nil"]) == (1, 3)
    assert nil["precision"] == pytest.approx(1 / 3) and nil["recall"] == pytest.approx(1.0)
    assert nil["f1"] == pytest.approx(0.5)
    # nil_score 1.0 for the three unanswered mentions (tied), 0.0 for the others: AP = 1/3
    assert nil["average_precision"] == pytest.approx(1 / 3)
    meta = report["meta"]
    assert meta["linker"] == "exact" and meta["dictionary"] == "kb" and meta["dataset"] == "tiny"
    assert meta["kb_name"] == "tiny MEDIC" and meta["kb_concepts"] == 4
    assert meta["k"] == 64 and meta["n_bootstrap"] == 200
    assert meta["train"] == [str(train_path)]
    table = output.with_suffix(".md").read_text(encoding="utf-8")
    assert table.startswith("### tiny | exact | dictionary=kb")
    assert "| all | 5 | 60.0 [" in table
    assert table in result.output


def test_evaluate_exact_kb_plus_train(kb_path, train_path, test_path, tmp_path):
    output = tmp_path / "exact_train.json"
    ok("evaluate", "exact", test_path, "--kb", kb_path, "--train", train_path,
       "--dictionary", "kb+train", "--output", output, "--bootstrap", "0")
    report = srsly.read_json(output)
    # 'colon tumours' is now a dictionary name of D000001
    assert report["acc@1"] == pytest.approx(4 / 5)
    assert report["seen"]["acc@1"] == pytest.approx(1.0)
    assert report["unseen"]["acc@1"] == pytest.approx(2 / 3)
    assert report["ci95"] == {}
    assert report["meta"]["dictionary"] == "kb+train"


def test_evaluate_without_train(kb_path, test_path, tmp_path):
    output = tmp_path / "exact_notrain.json"
    ok("evaluate", "exact", test_path, "--kb", kb_path, "--output", output, "--bootstrap", "0")
    report = srsly.read_json(output)
    assert "seen" not in report and "unseen" not in report
    # refined against KB names only: colon tumours and Mammary tumour
    assert report["refined"]["n"] == 2 and report["refined"]["acc@1"] == 0.0
    assert report["meta"]["dataset"] == "test"


def test_compare_exact_with_tfidf(kb_path, train_path, test_path, tmp_path):
    """compare pairs two linkers mention by mention; its Acc@1 of each side is evaluate's."""
    accs = {}
    for name in ("exact", "tfidf"):
        ok("evaluate", name, test_path, "--kb", kb_path, "--train", train_path, "--output",
           tmp_path / f"{name}.json", "--bootstrap", "0")
        accs[name] = srsly.read_json(tmp_path / f"{name}.json")["acc@1"]
    output = tmp_path / "compare.json"
    result = ok("compare", "exact", "tfidf", test_path, "--kb", kb_path, "--train", train_path,
                "--output", output, "--bootstrap", "200", "--label-a", "exact", "--label-b", "tfidf")
    report = srsly.read_json(output)
    assert report["n"] == 5
    assert report["acc@1"] == {"a": pytest.approx(accs["exact"]), "b": pytest.approx(accs["tfidf"])}
    won, lost = report["won"]["mentions"], report["lost"]["mentions"]
    assert won - lost == round(5 * (accs["tfidf"] - accs["exact"]))
    assert report["delta"] == pytest.approx(100 * (won - lost) / 5)
    # exact misses 'colon tumours' (seen, D000001) and 'Mammary tumour' (unseen, D000002)
    assert {c["gold"] for c in report["won"]["top_concepts"]} <= {"D000001", "D000002"}
    assert report["subsets"]["seen"]["n"] == 2 and report["subsets"]["unseen"]["n"] == 3
    assert report["meta"]["a"] == "exact" and report["meta"]["linker_b"] == "tfidf"
    table = output.with_suffix(".md").read_text(encoding="utf-8")
    assert table.startswith("## tfidf against exact") and table in result.output
    missing = invoke("compare", "exact", str(tmp_path / "no-such-pipeline"), test_path, "--kb", kb_path)
    assert missing.exit_code != 0 and "E101" in str(missing.exception)


def test_evaluate_tfidf_kb_plus_train(kb_path, train_path, test_path, tmp_path):
    output = tmp_path / "tfidf.json"
    ok("evaluate", "tfidf", test_path, "--kb", kb_path, "--dictionary", "kb+train",
       "--train", train_path, "--output", output, "--bootstrap", "100", "--k", "10")
    report = srsly.read_json(output)
    assert REPORT_KEYS - {"recall@64"} <= set(report)
    assert "recall@10" in report
    assert report["n"] == 5
    # exact strings (after normalisation) score 1.0 and rank first; 'Mammary tumour' shares
    # 'mammary' with 'Mammary carcinoma' and ranks D000002 first as well
    assert report["acc@1"] == pytest.approx(1.0)
    assert report["map"] == pytest.approx(1.0)
    assert report["refined"]["n"] == 1 and report["refined"]["acc@1"] == pytest.approx(1.0)
    assert report["seen"]["n"] == 2 and report["unseen"]["n"] == 3
    assert report["ci95"]["acc@1"] == [1.0, 1.0]
    assert report["failure_stages"]["correct"] == 5
    assert report["meta"]["linker"] == "tfidf" and report["meta"]["k"] == 10


def test_table(kb_path, train_path, test_path, tmp_path):
    exact, tfidf = tmp_path / "exact.json", tmp_path / "tfidf.json"
    ok("evaluate", "exact", test_path, "--kb", kb_path, "--train", train_path,
       "--output", exact, "--bootstrap", "0", "--dataset", "tiny")
    ok("evaluate", "tfidf", test_path, "--kb", kb_path, "--train", train_path,
       "--dictionary", "kb+train", "--output", tfidf, "--bootstrap", "0", "--dataset", "tiny")
    output = tmp_path / "results" / "table.md"
    result = ok("table", exact, tfidf, tmp_path / "missing.json", "--output", output,
                "--title", "Tiny")
    text = output.read_text(encoding="utf-8")
    assert text in result.output
    lines = text.splitlines()
    assert lines[0] == "## Tiny"
    # Acc@1, then kb_id_ accuracy and the right links answered NIL (the baseline answers its top one)
    assert lines[4].startswith("| tiny | tiny MEDIC | exact | kb | 5 | 60.0 | 60.0 | 0.0 | 60.0 | 60.0 | "
                               "60.0 | 60.0 | 1 | 0.0 | 0.0 | 50.0 | 66.7 | 50.0 | 33.3 |")
    assert lines[5].startswith("| tiny | tiny MEDIC | tfidf | kb+train | 5 | 100.0 | 100.0 |")
    assert f"Missing reports (not run): {tmp_path / 'missing.json'}" in text


# -- evaluate: errors --------------------------------------------------------
def test_evaluate_unknown_linker(kb_path, test_path, tmp_path):
    result = invoke("evaluate", "no-such-linker", test_path, "--kb", kb_path,
                    "--output", tmp_path / "x.json")
    assert isinstance(result.exception, BioELError)
    assert result.exception.code == "E101"
    assert "exact, tfidf" in str(result.exception)
    assert not (tmp_path / "x.json").exists()


def test_evaluate_kb_plus_train_needs_train(kb_path, test_path, tmp_path):
    result = invoke("evaluate", "tfidf", test_path, "--kb", kb_path, "--dictionary", "kb+train",
                    "--output", tmp_path / "x.json")
    assert isinstance(result.exception, BioELError) and result.exception.code == "E107"


def test_evaluate_unknown_dictionary(kb_path, test_path, tmp_path):
    result = invoke("evaluate", "tfidf", test_path, "--kb", kb_path, "--dictionary", "train",
                    "--output", tmp_path / "x.json")
    assert isinstance(result.exception, BioELError) and result.exception.code == "E106"


def test_evaluate_data_without_kb_ids(kb_path, tmp_path):
    from spacy.tokens import DocBin
    nlp = spacy.blank("en")
    doc = nlp("Breast cancer.")
    doc.ents = [Span(doc, 0, 2, label="Disease")]
    DocBin(docs=[doc]).to_disk(tmp_path / "nogold.spacy")
    result = invoke("evaluate", "exact", tmp_path / "nogold.spacy", "--kb", kb_path,
                    "--output", tmp_path / "x.json")
    assert isinstance(result.exception, BioELError) and result.exception.code == "E100"


def test_evaluate_missing_data_file(kb_path, tmp_path):
    result = invoke("evaluate", "exact", tmp_path / "absent.spacy", "--kb", kb_path,
                    "--output", tmp_path / "x.json")
    assert isinstance(result.exception, BioELError) and result.exception.code == "E008"


# -- evaluate: a saved pipeline ----------------------------------------------
DICT_LINKER = "test_cli_dict_linker_7f3a"
NOOP_COMPONENT = "test_cli_noop_component_7f3a"
# a fixed ranking per (normalised) mention text; other mentions get []
RANKINGS: Dict[str, List[Tuple[str, float]]] = {
    "breast cancer": [("D000002", 0.9), ("D000001", 0.2)],
    "colon tumours": [("D000004", 0.7), ("D000001", 0.6)],
    "hepatoblastoma": [("D000004", 1.0)],
    "crc": [("D000001", 0.8)],
    "mammary tumour": [("D000003", 0.5), ("D000004", 0.4), ("D000002", 0.3)],
}


@Language.component(DICT_LINKER)
def dict_linker(doc: Doc) -> Doc:
    for ent in doc.ents:
        ent._.kb_ents = list(RANKINGS.get(ent.text.lower(), []))
    return doc


@Language.component(NOOP_COMPONENT)
def noop_component(doc: Doc) -> Doc:
    return doc


@pytest.fixture
def kb_ents_extension():
    """`Span._.kb_ents` (default None) for the test; a previous definition is restored."""
    previous = Span.get_extension("kb_ents")
    Span.set_extension("kb_ents", default=None, force=True)
    yield
    Span.remove_extension("kb_ents")
    if previous is not None:
        default, method, getter, setter = previous
        if method is not None:
            Span.set_extension("kb_ents", method=method)
        elif getter is not None:
            Span.set_extension("kb_ents", getter=getter, setter=setter)
        else:
            Span.set_extension("kb_ents", default=default)


def save_pipeline(path: Path, component: str) -> Path:
    nlp = spacy.blank("en")
    nlp.add_pipe(component)
    nlp.to_disk(path)
    return path


def test_evaluate_pipeline(kb_ents_extension, kb_path, train_path, test_path, tmp_path):
    pipeline = save_pipeline(tmp_path / "dict_pipeline", DICT_LINKER)
    output = tmp_path / "pipeline.json"
    ok("evaluate", pipeline, test_path, "--kb", kb_path, "--train", train_path,
       "--output", output, "--bootstrap", "0")
    report = srsly.read_json(output)
    assert report["n_total"] == 6 and report["n"] == 5
    # ranks: breast cancer 1, colon tumours 2, hepatoblastoma 1, CRC 1, mammary tumour 3
    assert report["acc@1"] == pytest.approx(3 / 5)
    assert report["acc@5"] == pytest.approx(1.0)
    assert report["map"] == pytest.approx((1 + 1 / 2 + 1 + 1 + 1 / 3) / 5)
    assert report["failure_stages"] == {"correct": 3, "gold_ranked_too_low": 2,
                                        "gold_not_in_candidates": 0, "gold_not_in_kb": 0}
    assert report["seen"]["acc@1"] == pytest.approx(0.5)      # colon tumours 2, CRC 1
    assert report["unseen"]["acc@1"] == pytest.approx(2 / 3)  # breast 1, hepato 1, mammary 3
    # syndrome X got no candidate: predicted NIL with nil_score 1.0; the others 1 - top score
    nil = report["nil"]
    assert (nil["n_gold_nil"], nil["n_pred_nil"]) == (1, 1)
    assert nil["f1"] == pytest.approx(1.0)
    assert nil["average_precision"] == pytest.approx(1.0)
    assert report["meta"]["linker"] == "dict_pipeline"


def test_evaluate_pipeline_without_kb_ents(kb_ents_extension, kb_path, test_path, tmp_path):
    pipeline = save_pipeline(tmp_path / "noop_pipeline", NOOP_COMPONENT)
    result = invoke("evaluate", pipeline, test_path, "--kb", kb_path,
                    "--output", tmp_path / "x.json")
    assert isinstance(result.exception, BioELError)
    assert result.exception.code == "E102"
    assert "kb_ents" in str(result.exception)


def test_evaluate_pipeline_other_attribute(kb_ents_extension, kb_path, test_path, tmp_path):
    pipeline = save_pipeline(tmp_path / "dict_pipeline", DICT_LINKER)
    result = invoke("evaluate", pipeline, test_path, "--kb", kb_path,
                    "--kb-ents-attr", "no_such_attr_7f3a", "--output", tmp_path / "x.json")
    assert isinstance(result.exception, BioELError)
    assert result.exception.code == "E102"
    assert "no_such_attr_7f3a" in str(result.exception)


# -- link --------------------------------------------------------------------
def output_rows(output: str) -> List[List[str]]:
    """The result rows of `link` (after the header), split on runs of 2+ spaces."""
    import re
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("mention"))
    return [re.split(r"\s{2,}", line.strip()) for line in lines[start + 1:] if line.strip()]


def test_link_exact(kb_path):
    result = ok("link", "Patients with [breast cancer], [DM] and [syndrome X].",
                "--kb", kb_path, "--linker", "exact")
    assert "KB: tiny MEDIC (4 concepts); linker: exact" in result.output
    assert output_rows(result.output) == [
        ["breast cancer", "D000002", "1.000", "Breast cancer"],
        ["DM", "D000003", "1.000", "Diabetes mellitus"],
        ["syndrome X", "NIL", "-", "(no candidate)"],
    ]


def test_link_tfidf_top(kb_path):
    result = ok("link", "A [colorectal cancer] case.", "--kb", kb_path, "--top", "2",
                "--linker", "tfidf")
    rows = output_rows(result.output)
    assert rows[0][:2] == ["colorectal cancer", "D000001"]
    assert float(rows[0][2]) == pytest.approx(1.0, abs=1e-3)
    assert rows[0][3] == "Colorectal cancer"
    assert len(rows) == 2                          # best + one runner-up
    assert rows[1][0] in {"D000002", "D000003", "D000004"}


def test_link_default_bioel_linker(kb_path, tiny_bert_dir):
    """The main job's path: an untrained bioel_linker (here on a tiny BERT) over a KB."""
    result = ok("link", "A [colorectal cancer] and [DM].", "--kb", kb_path, "--top", "2",
                "--encoder", str(tiny_bert_dir))
    assert "linker: bioel" in result.output
    rows = output_rows(result.output)
    concept_rows = [r for r in rows if len(r) == 6 and r[0] in ("colorectal cancer", "DM")]
    assert [r[0] for r in concept_rows] == ["colorectal cancer", "DM"]
    for _, concept, prob, sim, score, name in concept_rows:
        assert concept == "NIL" or concept.startswith("D00000")
        assert all(0 <= float(v) <= 1 for v in (prob, sim, score)) and name
    # the calibrated probability decides NIL: NIL exactly where prob < 1 - the shipped threshold
    from spacy_bioel.nil.stages import DEFAULT_THRESHOLD

    cut = 1 - DEFAULT_THRESHOLD
    assert f"NIL when prob < {cut:.2f}" in result.output
    assert all((concept == "NIL") == (float(prob) < cut) for _, concept, prob, *_ in concept_rows
               if abs(float(prob) - cut) > 0.005)  # prob is printed rounded


def test_link_without_brackets_says_how(kb_path):
    """No [bracketed] mention and a baseline without an NER: E198, not silence."""
    for linker in ("exact", "tfidf"):
        result = invoke("link", "Patients with breast cancer.", "--kb", kb_path, "--linker", linker)
        assert isinstance(result.exception, BioELError) and result.exception.code == "E198"
        assert "[brackets]" in str(result.exception) and "no NER" in str(result.exception)


def test_link_plain_text_with_the_default(kb_path, tiny_bert_dir):
    """The default pipeline reads plain text: the shipped disease NER finds the
    mentions, the linker links them; with brackets only the bracketed ones link;
    --id-space writes the cross-referenced id, or NIL without one (E261 for a
    vocabulary no concept of the KB has)."""
    result = ok("link", "Patients with breast cancer and asthma.", "--kb", kb_path,
                "--encoder", str(tiny_bert_dir))
    assert {row[0] for row in output_rows(result.output) if len(row) == 6} >= {"breast cancer"}
    result = ok("link", "Patients with [breast cancer] and asthma.", "--kb", kb_path,
                "--encoder", str(tiny_bert_dir))
    assert [row[0] for row in output_rows(result.output) if len(row) == 6] == ["breast cancer"]
    result = ok("link", "Patients with [breast cancer].", "--kb", kb_path,
                "--encoder", str(tiny_bert_dir), "--id-space", "OMIM")  # D000001 has one, not this
    assert [row[1] for row in output_rows(result.output) if len(row) == 6] == ["NIL"]
    result = CliRunner().invoke(app, ["link", "Patients with [breast cancer].", "--kb", str(kb_path),
                                      "--encoder", str(tiny_bert_dir), "--id-space", "UMLS"])
    assert result.exception.code == "E261"  # no concept of this KB has a CUI: not a column of NILs


def test_link_reads_the_text_from_standard_input(kb_path, tiny_bert_dir):
    """`link -` reads TEXT from standard input (a long text without the shell's quoting)."""
    result = runner.invoke(app, ["link", "-", "--kb", str(kb_path), "--encoder", str(tiny_bert_dir)],
                           input="Patients with [breast cancer]\nand [hepatoblastoma].\n")
    assert result.exit_code == 0, (result.output, result.exception)
    assert [row[0] for row in output_rows(result.output) if len(row) == 6] == ["breast cancer",
                                                                              "hepatoblastoma"]


def test_kb_xrefs_reports_coverage(tmp_path):
    from spacy_bioel import Concept, KnowledgeBase

    kb = KnowledgeBase(name="x")
    kb.add(Concept("DOID:1", "colon cancer", xrefs=("MESH:D003110", "UMLS_CUI:C0007102")))
    kb.add(Concept("DOID:2", "asthma", xrefs=("UMLS_CUI:C0004096",)))
    kb.to_disk(tmp_path / "x.bioelkb")
    result = ok("kb", "xrefs", tmp_path / "x.bioelkb", "--output", tmp_path / "x.json")
    report = json.loads((tmp_path / "x.json").read_text())
    assert report["spaces"]["UMLS"]["kb"]["share"] == 1.0
    assert report["spaces"]["MESH"]["kb"]["mapped"] == 1 and "MESH" in result.output


def test_link_without_brackets_uses_the_pipeline_ner(kb_path, tiny_bert_dir, tmp_path):
    """A trained pipeline with an NER before its linker finds the mentions itself."""
    concepts = [(c.concept_id, c.canonical_name) for c in KnowledgeBase.from_disk(kb_path)]
    save_linker_pipeline(tmp_path / "ner_linker", tiny_bert_dir, concepts, patterns=["breast cancer"])
    result = ok("link", "Patients with breast cancer.", "--linker", tmp_path / "ner_linker")
    assert [row[0] for row in output_rows(result.output) if len(row) == 6] == ["breast cancer"]
    result = invoke("link", "Nothing the ruler knows.", "--linker", tmp_path / "ner_linker")
    assert result.exception.code == "E198" and "NER found none" in str(result.exception)


def test_link_plain_text_with_a_pipeline_without_ner_says_so(kb_path, tiny_bert_dir, tmp_path):
    """A saved pipeline with no NER cannot read plain text: E198 says that, not
    that its (absent) NER found nothing; bracketed mentions still link."""
    concepts = [(c.concept_id, c.canonical_name) for c in KnowledgeBase.from_disk(kb_path)]
    save_linker_pipeline(tmp_path / "linker", tiny_bert_dir, concepts)
    result = invoke("link", "Patients with breast cancer.", "--linker", tmp_path / "linker")
    assert result.exception.code == "E198"
    assert "no NER before its linker" in str(result.exception)
    assert "NER found none" not in str(result.exception)
    ok("link", "Patients with [breast cancer].", "--linker", tmp_path / "linker")


def test_link_help_keeps_brackets():
    """Help texts are printed as written: '[brackets]' is not read as markup."""
    assert "[brackets]" in ok("link", "--help").output
    assert "link" in ok("--help").output.split("Commands:")[0]  # the description names linking


def test_parse_bracketed():
    from spacy_bioel.cli.link import parse_bracketed
    plain, spans = parse_bracketed("A [b c] d [e].")
    assert plain == "A b c d e."
    assert [plain[s:e] for s, e in spans] == ["b c", "e"]
    assert parse_bracketed("no mentions") == ("no mentions", [])


def test_kb_merge(tmp_path):
    from spacy_bioel import Concept, KnowledgeBase

    first, second = KnowledgeBase(name="DOID"), KnowledgeBase(name="HP")
    first.add(Concept("DOID:1", "asthma", types=("disease_ontology",)))
    second.add(Concept("HP:1", "wheezing", types=("human_phenotype",)))
    first.to_disk(tmp_path / "a.bioelkb")
    second.to_disk(tmp_path / "b.bioelkb")
    result = ok("kb", "merge", str(tmp_path / "a.bioelkb"), str(tmp_path / "b.bioelkb"),
                str(tmp_path / "m.bioelkb"), "--name", "DOID+HP")
    assert "human_phenotype" in result.output
    merged = KnowledgeBase.from_disk(tmp_path / "m.bioelkb")
    assert merged.name == "DOID+HP" and merged["HP:1"].types == ("human_phenotype",)


# -- prepare -----------------------------------------------------------------
def test_prepare_unknown_dataset_and_missing_file(tmp_path):
    result = invoke("prepare", "umls", tmp_path / "out")
    assert result.exception.code == "E060" and "ncbi | bc5cdr" in str(result.exception)
    result = invoke("prepare", "hp", tmp_path / "out", "--data-root", tmp_path,
                    "--hp-file", "hp_2030.obo")
    assert result.exception.code == "E061"
    assert "obo_ontologies/hp_2030.obo" in str(result.exception) and "--hp-file" in str(result.exception)


def test_prepare_obo_dataset_layout(tmp_path):
    """hp / doid: a names-only KB and zero-shot train / dev / test from any OBO release."""
    terms = []
    for i in range(1, 31):
        terms += ["[Term]", f"id: HP:{i:07d}", f"name: phenotype {i}",
                  f'synonym: "abnormal thing {i}" EXACT []', f'synonym: "odd thing {i}" RELATED []',
                  ""]
    (tmp_path / "obo_ontologies").mkdir()
    (tmp_path / "obo_ontologies" / "hp_test.obo").write_text("format-version: 1.2\n\n" + "\n".join(terms))
    ok("prepare", "hp", tmp_path / "out", "--data-root", tmp_path, "--hp-file", "hp_test.obo")
    info = srsly.read_json(tmp_path / "out" / "dataset.json")
    assert sum(info["splits"].values()) == 60 and all(info["splits"].values())
    assert KnowledgeBase.from_disk(tmp_path / "out" / "kb.bioelkb").name.startswith("HP (hp_test)")


def test_link_names_what_it_cannot_use(kb_path, tiny_bert_dir, tmp_path):
    """A --linker path that does not exist is E247 (never the untrained default), an
    empty --label E175 (not the NER's fault), a text longer than the NER reads E248,
    a bracket of white space E198; a bracket ending in a space marks the words only."""
    assert invoke("link", "[colon cancer]", "--linker", tmp_path / "no-such").exception.code == "E247"
    assert invoke("link", "[breast cancer]", "--kb", kb_path, "--linker", "exact",
                  "--label", " ").exception.code == "E175"
    assert invoke("link", "[ ] and [breast cancer]", "--kb", kb_path,
                  "--linker", "exact").exception.code == "E198"
    rows = output_rows(ok("link", "Patients with [breast cancer ].", "--kb", kb_path,
                          "--linker", "exact").output)
    assert rows[0][:2] == ["breast cancer", "D000002"]
    concepts = [(c.concept_id, c.canonical_name) for c in KnowledgeBase.from_disk(kb_path)]
    save_linker_pipeline(tmp_path / "ner_linker", tiny_bert_dir, concepts, patterns=["breast cancer"])
    result = invoke("link", "breast cancer. " * 66_667, "--linker", tmp_path / "ner_linker")
    assert result.exception.code == "E248" and "1,000,005 characters" in str(result.exception)


def test_an_os_error_is_one_coded_line(tmp_path, capsys):
    from spacy_bioel.cli._app import main

    (tmp_path / "kb.txt").write_text("D1||Asthma\n")
    (tmp_path / "out.bioelkb").mkdir()  # the output is a folder: the OS refuses the write
    with pytest.raises(SystemExit) as exit_:
        main(["kb", "build", "medic", str(tmp_path / "kb.txt"), str(tmp_path / "out.bioelkb")])
    assert exit_.value.code == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and lines[0].startswith("Error: [E253] IsADirectoryError"), lines

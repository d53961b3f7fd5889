"""Each edge case of `evaluation.hostile` (the findings of the second hostile
round: crafted payloads and weights, links, FIFOs and changed files in a saved
folder, the embedding cache, extreme settings, corpus-linking shards, markup in
concept ids, empty UMLS ids) is refused with its code or handled right: none
crashes, hangs, or passes silently wrong."""
import pytest

from bench.hostile import Workspace, cases, classify, summarize, table
from tests.utils import starts_ray

pytestmark = starts_ray()  # one of its cases starts Ray

CASES = {f"{c.group}: {c.name}": c for c in cases()}


@pytest.fixture(scope="module")
def workspace(tiny_bert_dir, tmp_path_factory):
    from spacy_bioel.cli._app import main

    return Workspace(tmp_path_factory.mktemp("edges"), str(tiny_bert_dir), main)


@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_case(workspace, name):
    case = CASES[name]
    if "Ray" in name:
        pytest.importorskip("ray", reason="Ray Data (the ray extra)")
    outcome, detail = classify(case, workspace)
    assert outcome == case.expect, detail
    if case.code:
        assert detail == case.code


def test_classification_tells_each_outcome_apart(workspace):
    import time

    from spacy_bioel.errors import BioELError, Errors
    from bench.hostile import Case, _harm_after

    def coded(ws):
        raise BioELError(Errors.E245.format(command="c", path="x", relation="is", what="w", target="t"))

    def crash(ws):
        raise KeyError("boom")

    def deleted_then_refused(ws):  # the harm found after a coded refusal is what counts
        return _harm_after(coded, lambda: "deleted the user's folder")

    rows = []
    for case in [Case("g", "coded", "coded", coded, "E245"), Case("g", "wrong code", "coded", coded, "E001"),
                 Case("g", "clean", "clean", lambda ws: None),
                 Case("g", "accepted", "coded", lambda ws: None),
                 Case("g", "wrong result", "clean", lambda ws: "lost a document"),
                 Case("g", "crash", "clean", crash),
                 Case("g", "hang", "clean", lambda ws: time.sleep(5), timeout=0.2),
                 Case("g", "escape", "coded", lambda ws: deleted_then_refused(ws), "E245")]:
        outcome, _ = classify(case, workspace)
        rows.append({"group": case.group, "name": case.name, "outcome": outcome, "detail": ""})
    assert [r["outcome"] for r in rows] == ["coded", "silent_wrong", "clean", "silent_wrong",
                                           "silent_wrong", "crash", "hang", "escape"]
    assert summarize(rows)["all"] == {"cases": 8, "coded": 1, "clean": 1, "crash": 1,
                                      "silent_wrong": 3, "hang": 1, "escape": 1}
    assert "| g | 8 | 1 | 1 | 1 | 3 | 1 | 1 |" in table(rows)

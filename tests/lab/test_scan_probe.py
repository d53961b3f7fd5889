"""`python -m bench scan-probe` on a tiny pipeline whose name index is an int8
scan: the mentions are encoded as the pipeline encodes them, and no answer
moves with the other queries of a call; a pipeline that does not scan in int8
is refused by name."""
import json

from spacy.tokens import DocBin, Span
from typer.testing import CliRunner

from .conftest import toy_linker


def test_scan_probe_measures_the_int8_scan(tiny_bert_dir, tmp_path):
    from bench.cli import app

    nlp = toy_linker(tiny_bert_dir, tmp_path / "p", "int8")
    docs = DocBin()
    for text, ents in (("colon cancer and asthma", [(0, 2), (3, 4)]), ("a heart attack", [(1, 3)]),
                       ("asthma again", [(0, 1)])):
        doc = nlp.make_doc(text)
        doc.ents = [Span(doc, s, e, label="Disease") for s, e in ents]
        docs.add(doc)
    docs.to_disk(tmp_path / "data.spacy")
    out = tmp_path / "probe.json"
    result = CliRunner().invoke(app, ["scan-probe", str(tmp_path / "p"), str(tmp_path / "data.spacy"),
                                      "--call", "2", "--repeats", "2", "--output", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["queries"] == 3 and report["names"] == 5 and report["index_type"] == "int8"
    assert len(report["scan_s"]) == 2 and report["exact_in_pool"] == 1.0  # the pool holds every name
    assert 0.0 <= report["top1_is_exact"] <= 1.0
    for part in ("shuffled_calls", "one_query_a_call", "beside_a_wide_query"):
        assert report[part] == {"rows_moved": 0.0, "top1_moved": 0.0, "max_score_diff": 0.0}
    assert "| 3 | 5 |" in out.with_suffix(".md").read_text()

    toy_linker(tiny_bert_dir, tmp_path / "flat", "flat")
    refused = CliRunner().invoke(app, ["scan-probe", str(tmp_path / "flat"), str(tmp_path / "data.spacy"),
                                       "--output", str(out)])
    assert refused.exit_code != 0 and "'flat', not int8 or flat_int8" in refused.output

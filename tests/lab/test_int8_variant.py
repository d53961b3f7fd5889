"""`bench int8-variant-export` and `int8-variants-seeds` (issue 74's a7 claim): a
trained pipeline's mention tower exported again each way, the rest as saved, and
the variants' dev scores paired by seed."""
import json

import pytest

from bench.int8_variant import export_variant, seeds_markdown, seeds_summary
from tests.lab.conftest import toy_linker

pytest.importorskip("onnx", reason="exporting needs onnx")
pytest.importorskip("torch", reason="the train extra")


def _graph(path):
    runtime = path / "bioel_linker" / "runtime"
    return (runtime / "mention.onnx").read_bytes(), (runtime / "mention.onnx.data").read_bytes()


def test_a_pipeline_is_exported_again_each_way_and_keeps_the_rest(tiny_bert_dir, tmp_path):
    import onnx
    from onnx import numpy_helper

    toy_linker(tiny_bert_dir, tmp_path / "saved")
    saved = _graph(tmp_path / "saved")
    assert export_variant("w8", tmp_path / "saved", tmp_path / "new" / "w8") == 1  # parents made
    assert export_variant("a7", tmp_path / "saved", tmp_path / "a7") == 1
    assert _graph(tmp_path / "new" / "w8") == saved  # the package's export, through the same path
    assert _graph(tmp_path / "a7") != saved
    model = onnx.load(str(tmp_path / "a7" / "bioel_linker" / "runtime" / "mention.onnx"))
    zeros = {t.name: int(numpy_helper.to_array(t)) for t in model.graph.initializer
             if t.name == "bioel_row_zero"}
    assert zeros == {"bioel_row_zero": 64}  # activations in [0, 128]
    saved_linker = tmp_path / "saved" / "bioel_linker"
    kept = [p for part in ("index", "datastore") for p in sorted((saved_linker / part).rglob("*"))
            if p.is_file()] + [p for part in ("index", "datastore") if (saved_linker / part).is_file()
                                for p in [saved_linker / part]]
    assert any(p.name == "names_int8.npy" or p.suffix == ".npy" for p in kept)
    for file in kept:  # the name index and the datastore as saved
        assert (tmp_path / "a7" / "bioel_linker" / file.relative_to(saved_linker)).read_bytes() == \
            file.read_bytes()
    with pytest.raises(SystemExit, match="unknown variant"):
        export_variant("a6", tmp_path / "saved", tmp_path / "a6")


def test_the_variants_are_paired_by_seed(tmp_path):
    def report(acc, kb_acc):
        return {"acc@1": acc, "kb_id_acc": kb_acc, "n": 787}

    scores = {0: {"w8": report(0.85, 0.84), "a7": report(0.86, 0.84)},
              1: {"w8": report(0.80, 0.79), "a7": report(0.80, 0.80)},
              2: {"w8": report(0.90, 0.89), "a7": report(0.89, 0.88)}}
    summary = seeds_summary(scores)
    a7 = summary["variants"]["a7"]["acc@1"]
    assert a7["per_seed"] == pytest.approx([86.0, 80.0, 89.0])
    assert a7["mean"] == pytest.approx(85.0)
    assert a7["paired"]["mean"] == pytest.approx(0.0, abs=1e-9)
    assert a7["paired"]["std"] == pytest.approx(1.0)  # +1, 0, -1
    assert summary["variants"]["w8"]["acc@1"]["paired"] == {"mean": 0.0, "std": 0.0}
    table = seeds_markdown(summary, "t")
    assert "| a7 | 86.00 | 80.00 | 89.00 | 85.00 ± 4.58 | +0.00 ± 1.00 |" in table
    del scores[1]["a7"]
    with pytest.raises(SystemExit, match="no report"):
        seeds_summary(scores)
    json.dumps(summary)

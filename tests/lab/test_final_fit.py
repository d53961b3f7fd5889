"""`python -m bench final-fit`: dev's annotated mentions added to a tuned
pipeline's kNN datastore, on test, beside the dev check (part of train against
all of it)."""
import pytest

from ..utils import write_toy_linking_data


def _docs(counts):
    """One document per count, each with that many 'asthma' mentions of D3; the
    first document's first mention is NIL (not linkable, not counted)."""
    import spacy

    nlp = spacy.blank("en")
    docs = []
    for i, n in enumerate(counts):
        doc = nlp.make_doc(" ".join(["asthma"] * n))
        doc.ents = [doc.char_span(7 * j, 7 * j + 6, label="Disease",
                                  kb_id="NIL" if i == j == 0 else "D3") for j in range(n)]
        docs.append(doc)
    return docs


def test_part_of_drops_whole_documents_until_the_share_is_gone():
    from bench.final_fit import _linkable, part_of

    docs = _docs([3, 1, 4, 2, 5, 1, 2, 3])
    total = sum(map(_linkable, docs))
    assert total == 20
    kept, gone = part_of(docs, 0.25, seed=1)
    assert gone == total - sum(map(_linkable, kept)) and gone >= 5
    # it stops at the first document that reaches the share: without it, short of it
    assert gone - max(_linkable(d) for d in docs if d not in kept) < 5
    assert [d.text for d in part_of(docs, 0.25, seed=1)[0]] == [d.text for d in kept]
    assert part_of(docs, 0.0, seed=1) == (docs, 0)


def test_probe_rows_and_table(tiny_bert_dir, tmp_path):
    from typer.testing import CliRunner

    from bench.cli import app
    from spacy_bioel.cli import app as user_app

    write_toy_linking_data(tmp_path, repeat=2)
    data = tmp_path / "data.spacy"
    runner = CliRunner()
    out = runner.invoke(user_app, [
        "init-pipeline", str(__import__("pathlib").Path(__file__).resolve().parents[2] / "configs" / "linker.cfg"),
        str(tmp_path / "pipe"), "--paths.train", str(data), "--paths.dev", str(data),
        "--paths.kb", str(tmp_path / "kb.bioelkb"), "--paths.encoder", str(tiny_bert_dir)])
    assert out.exit_code == 0, out.output + repr(out.exception)
    out = runner.invoke(app, ["final-fit", f"toy={tmp_path / 'pipe'}={data}={data}", "--output",
                              str(tmp_path / "ff.json")])
    assert out.exit_code != 0 and "LABEL=PIPELINE=TRAIN.spacy=DEV.spacy=TEST.spacy" in out.output
    out = runner.invoke(app, ["final-fit", f"toy={tmp_path / 'pipe'}={data}={data}={data}",
                              "--output", str(tmp_path / "ff.json")])
    assert out.exit_code == 0, out.output + repr(out.exception)
    run = __import__("srsly").read_json(tmp_path / "ff.json")["runs"]["toy"]
    n = run["n_train"]
    assert n == run["n_dev"] == 6 and run["share_left_out"] == pytest.approx(0.5)
    assert run["dev_all_train"]["datastore"] == n  # as initialized: the training mentions
    assert run["dev_part_train"]["datastore"] == n - run["left_out"] and run["left_out"] >= n / 2
    assert run["test_train_dev"]["datastore"] == 2 * n
    assert run["test_train"]["acc@1"] == run["dev_all_train"]["acc@1"]  # same docs, same datastore
    assert "| toy | test | train + dev | 12 |" in (tmp_path / "ff.md").read_text()

"""`python -m bench cross-corpus`: a saved linker restaged in memory on another
KB links a test set against it, beside the untrained encoder on the same KB."""
from bench.cross_corpus import cross_corpus, markdown

from ..utils import save_linker_pipeline, write_toy_linking_data


def test_a_linker_restaged_on_another_kb_links_against_it(tiny_bert_dir, tmp_path, monkeypatch):
    write_toy_linking_data(tmp_path, nil=False)  # gold D1-D3, kb.bioelkb with D1-D3
    saved = save_linker_pipeline(tmp_path / "other_kb", tiny_bert_dir, [("X1", "asthma"), ("X2", "gout")])
    predicted = []
    from spacy_bioel.evaluation import linkers

    link_records = linkers.link_records

    def spy(nlp, docs, *args, **kwargs):
        records, reranked = link_records(nlp, docs, *args, **kwargs)
        predicted.extend(r.candidates[0] for r in records if r.candidates)
        return records, reranked

    monkeypatch.setattr(linkers, "link_records", spy)
    result = cross_corpus({"saved": str(saved), "untrained": "untrained"},
                          {"toy": tmp_path / "data.spacy"}, tmp_path / "kb.bioelkb",
                          cache=tmp_path / "cache", encoder=str(tiny_bert_dir))
    assert predicted and set(predicted) <= {"D1", "D2", "D3"}  # the new KB's concepts, not X1/X2
    saved_row, untrained_row = result["rows"]
    assert saved_row["test"] == untrained_row["test"] == "toy" and saved_row["n"] == 3
    # the saved linker is the same untrained encoder: the same answers as the untrained one
    assert saved_row["acc@1"] == untrained_row["acc@1"]
    assert any((tmp_path / "cache").rglob("*"))  # the names were encoded into the cache
    assert "| saved | toy | 3 |" in markdown(result)


def test_ablations_switch_a_part_of_each_trained_linker_off(tiny_bert_dir, tmp_path):
    """`--ablate knn|defer|nil` adds a row per trained linker (not the untrained
    encoder) with that part off; an unknown part is refused before anything runs."""
    import pytest
    import spacy

    from bench.cross_corpus import ablate
    from spacy_bioel.pipeline.loading import find_linker

    write_toy_linking_data(tmp_path, nil=False)
    saved = save_linker_pipeline(tmp_path / "other_kb", tiny_bert_dir, [("X1", "asthma"), ("X2", "gout")])
    result = cross_corpus({"saved": str(saved), "untrained": "untrained"},
                          {"toy": tmp_path / "data.spacy"}, tmp_path / "kb.bioelkb",
                          cache=tmp_path / "cache", encoder=str(tiny_bert_dir),
                          ablations=["knn", "nil"])
    assert [row["linker"] for row in result["rows"]] == ["saved", "saved -knn", "saved -nil", "untrained"]
    assert result["rows"][2]["right_as_nil"] == 0.0
    nlp = spacy.load(saved)
    linker = find_linker(nlp)
    threshold = linker.nil.threshold
    undo = ablate(nlp, "knn")
    assert linker.ranker.use_knn is False
    undo()
    assert linker.ranker.use_knn is True
    undo = ablate(nlp, "nil")
    assert linker.nil.threshold is None
    undo()
    assert linker.nil.threshold == threshold
    undo = ablate(nlp, "memory")  # no shortcut stage: nothing to switch off
    undo()
    from spacy_bioel.index.candidates import ExactShortcut

    linker.set_stage("shortcut", ExactShortcut(min_training_count=2))
    undo = ablate(nlp, "memory")
    assert linker.shortcut.min_training_count == 0 and not linker.shortcut.remembered
    undo()
    assert linker.shortcut.min_training_count == 2
    with pytest.raises(ValueError, match="unknown ablation"):
        cross_corpus({"saved": str(saved)}, {"toy": tmp_path / "data.spacy"}, tmp_path / "kb.bioelkb",
                     ablations=["everything"])


def test_retune_tunes_each_trained_linker_on_the_other_corpus_dev_and_puts_it_back(tiny_bert_dir, tmp_path):
    import spacy

    from bench.cross_corpus import retuned
    from spacy_bioel.cli._app import read_docs
    from spacy_bioel.pipeline.loading import find_linker

    write_toy_linking_data(tmp_path, nil=False)
    saved = save_linker_pipeline(tmp_path / "other_kb", tiny_bert_dir, [("X1", "asthma"), ("X2", "gout")])
    result = cross_corpus({"saved": str(saved), "untrained": "untrained"},
                          {"toy": tmp_path / "data.spacy"}, tmp_path / "kb.bioelkb",
                          cache=tmp_path / "cache", encoder=str(tiny_bert_dir),
                          retune={"toy": tmp_path / "data.spacy"})
    assert [row["linker"] for row in result["rows"]] == ["saved", "saved tuned on toy dev", "untrained"]
    assert result["rows"][1]["n"] == 3 and "knn_lambda" in result["rows"][1]
    assert "| saved tuned on toy dev (lambda " in markdown(result)
    nlp = spacy.load(saved)
    linker = find_linker(nlp)
    before = (linker.ranker.get_params(), linker.nil.get_params())
    undo = retuned(nlp, read_docs([tmp_path / "data.spacy"]))
    undo()
    assert (linker.ranker.get_params(), linker.nil.get_params()) == before


def test_retune_puts_back_the_shortcuts_deference(tiny_bert_dir, tmp_path, monkeypatch):
    """`tune` may switch the shortcut's deference off on another corpus' dev; the
    rows after a retuned one see the linker as it was."""
    import spacy

    import spacy_bioel.pipeline.tuning as tuning
    from bench.cross_corpus import retuned
    from spacy_bioel.index.candidates import ExactShortcut
    from spacy_bioel.pipeline.loading import find_linker

    saved = save_linker_pipeline(tmp_path / "p", tiny_bert_dir, [("X1", "asthma")])
    monkeypatch.setattr(tuning, "tune_linker",
                        lambda linker, docs: linker.shortcut.set_params(defer_to_training=False))
    nlp = spacy.load(saved)
    linker = find_linker(nlp)
    linker.set_stage("shortcut", ExactShortcut(defer_to_training=True))
    undo = retuned(nlp, [])
    assert linker.shortcut.defer_to_training is False
    undo()
    assert linker.shortcut.defer_to_training is True

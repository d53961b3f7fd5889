import spacy
from spacy.tokens import DocBin, Span
from spacy.training import Example

from spacy_bioel.pipeline.extensions import install_extensions
from spacy_bioel.pipeline.scorer import score_linking
from spacy_bioel.training.readers import create_gold_ents_corpus


def make(nlp, kb_ids):
    doc = nlp.make_doc("colon cancer and heart attack")
    doc.ents = [Span(doc, 0, 2, label="Disease", kb_id=kb_ids[0]),
                Span(doc, 3, 5, label="Disease", kb_id=kb_ids[1])]
    return doc


def test_gold_ents_reader(tmp_path):
    nlp = spacy.blank("en")
    DocBin(docs=[make(nlp, ["D1", "D2|D3"])], store_user_data=True).to_disk(tmp_path / "d.spacy")
    [eg] = list(create_gold_ents_corpus(tmp_path / "d.spacy")(nlp))
    assert [(e.text, e.label_, e.kb_id_) for e in eg.predicted.ents] == [
        ("colon cancer", "Disease", ""), ("heart attack", "Disease", "")]
    assert [e.kb_id_ for e in eg.reference.ents] == ["D1", "D2|D3"]
    assert list(create_gold_ents_corpus(tmp_path / "d.spacy", limit=0)(nlp))
    from spacy_bioel.pipeline.mentions import HELD_OUT_KNN, held_out_key

    assert held_out_key(eg.predicted) is None
    [held] = list(create_gold_ents_corpus(tmp_path / "d.spacy", held_out_knn=True)(nlp))
    assert held.predicted.user_data[HELD_OUT_KNN] and HELD_OUT_KNN not in held.reference.user_data
    assert held_out_key(held.predicted) == held_out_key(held.predicted.copy()) is not None


def test_gold_ents_reader_reads_a_directory_in_order(tmp_path):
    """A directory (train and dev for a final fit) is read file by file, sorted;
    one without .spacy files is refused by name."""
    import pytest

    from spacy_bioel.errors import BioELError

    nlp = spacy.blank("en")
    (tmp_path / "both" / "b").mkdir(parents=True)
    DocBin(docs=[make(nlp, ["D2", "D2"])]).to_disk(tmp_path / "both" / "b" / "dev.spacy")
    DocBin(docs=[make(nlp, ["D1", "D1"])] * 2).to_disk(tmp_path / "both" / "a.spacy")
    read = list(create_gold_ents_corpus(tmp_path / "both")(nlp))
    assert [eg.reference.ents[0].kb_id_ for eg in read] == ["D1", "D1", "D2"]
    assert len(list(create_gold_ents_corpus(tmp_path / "both", limit=2)(nlp))) == 2
    (tmp_path / "empty").mkdir()
    with pytest.raises(BioELError, match="E008.*empty"):
        list(create_gold_ents_corpus(tmp_path / "empty")(nlp))


def test_scorer_acc_at_k_and_composites():
    nlp = spacy.blank("en")
    install_extensions({"kb_ents_attr": "kb_ents", "is_nil_attr": "is_nil", "nil_score_attr": "nil_score"})
    predicted = make(nlp, ["D9", "D3"])
    predicted.ents[0]._.kb_ents = [("D9", 0.6), ("D1", 0.4)]
    predicted.ents[1]._.kb_ents = [("D3", 0.9)]
    scores = score_linking([Example(predicted, make(nlp, ["D1", "D2|D3"]))])
    assert scores["bioel_acc@1"] == 0.5  # the composite counts via D3
    assert scores["bioel_acc@5"] == 1.0
    assert scores["bioel_n"] == 2
    assert "nel_micro_f" in scores

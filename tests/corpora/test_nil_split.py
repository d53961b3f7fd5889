import spacy

from spacy_bioel import Concept, KnowledgeBase
from spacy_bioel.corpora.nil_split import make_nil_splits


def test_nil_split_holds_out_and_relabels():
    nlp = spacy.blank("en")
    kb = KnowledgeBase()
    for i in range(20):
        kb.add(Concept(f"D{i}", f"disease {i}"))
    docs = []
    for i in range(20):
        doc = nlp.make_doc(f"disease {i} and disease {(i + 1) % 20}")
        doc.ents = [doc.char_span(0, len(f"disease {i}"), label="Disease", kb_id=f"D{i}"),
                    doc.char_span(len(f"disease {i} and "), len(doc.text), label="Disease",
                                  kb_id=f"D{(i + 1) % 20}|D{(i + 2) % 20}")]
        docs.append(doc)
    reduced, splits, report = make_nil_splits(kb, {"train": docs[:10], "test": docs[10:]},
                                              fraction=0.1, seed=3)
    heldout = set(kb.concept_ids) - set(reduced.concept_ids)
    assert len(heldout) == 2 and reduced.meta["heldout_concepts"] == sorted(heldout)
    for doc in splits["train"] + splits["test"]:
        for ent in doc.ents:
            ids = [] if ent.kb_id_ == "NIL" else ent.kb_id_.split("|")
            assert not set(ids) & heldout
    n_nil = sum(e.kb_id_ == "NIL" for d in splits["train"] + splits["test"] for e in d.ents)
    assert n_nil == report.counts["train_mentions_relabelled_nil"] + report.counts.get(
        "test_mentions_relabelled_nil", 0)
    assert n_nil >= 2  # each held-out concept is the single id of one mention
    same = make_nil_splits(kb, {"train": docs[:10], "test": docs[10:]}, fraction=0.1, seed=3)[0]
    assert same.concept_ids == reduced.concept_ids
    assert docs[0].ents[0].kb_id_ == "D0"  # inputs untouched

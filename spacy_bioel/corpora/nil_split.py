"""NIL test sets from linkable corpora: hold out a seeded share of the concepts,
remove them from the KB, and relabel their mentions NIL.

Only concepts that occur in the corpus are candidates for holding out (a KB
concept no mention links to would change nothing). Mentions of held-out
concepts become 'NIL' in every split given: in dev and test they are the gold
NIL mentions; in train they are NIL too, so a linker trained on the NIL train
split never saw the held-out concepts. A composite mention becomes NIL only
when all of its ids are held out (otherwise it keeps the remaining ids).
"""
from __future__ import annotations

import random
from typing import Dict, List, Sequence, Set, Tuple

from spacy.tokens import Doc, Span

from ..kb.knowledge_base import NIL, KnowledgeBase
from .documents import ConversionReport, split_gold_ids


def choose_heldout(kb: KnowledgeBase, docs: Sequence[Doc], fraction: float, seed: int) -> Set[str]:
    """A seeded `fraction` of the (primary ids of the) concepts the docs link to."""
    used = sorted({kb.resolve(cid) or cid for doc in docs for ent in doc.ents
                   for cid in split_gold_ids(ent.kb_id_)} & set(kb.concept_ids))
    rng = random.Random(seed)
    return set(rng.sample(used, int(round(fraction * len(used)))))


def relabel_nil(docs: Sequence[Doc], kb: KnowledgeBase, heldout: Set[str],
                report: ConversionReport, split: str) -> List[Doc]:
    """Copies of `docs` whose mentions of held-out concepts are NIL."""
    out = []
    for doc in docs:
        new = doc.copy()
        ents = []
        for ent in new.ents:
            ids = split_gold_ids(ent.kb_id_)
            kept = tuple(i for i in ids if (kb.resolve(i) or i) not in heldout)
            if ids and not kept:
                report.add(f"{split}_mentions_relabelled_nil")
                ents.append(Span(new, ent.start, ent.end, label=ent.label_, kb_id=NIL))
            elif len(kept) < len(ids):
                report.add(f"{split}_composites_reduced")
                separator = "+" if "+" in ent.kb_id_ else "|"
                ents.append(Span(new, ent.start, ent.end, label=ent.label_, kb_id=separator.join(kept)))
            else:
                ents.append(ent)
        new.ents = ents
        out.append(new)
    return out


def make_nil_splits(kb: KnowledgeBase, splits: Dict[str, Sequence[Doc]], *, fraction: float = 0.1,
                    seed: int = 0) -> Tuple[KnowledgeBase, Dict[str, List[Doc]], ConversionReport]:
    """Hold out `fraction` of the corpus' concepts (seeded).

    RETURNS: the KB without the held-out concepts, the relabelled splits, a report.
    """
    report = ConversionReport(f"NIL split fraction={fraction} seed={seed}")
    all_docs = [doc for docs in splits.values() for doc in docs]
    heldout = choose_heldout(kb, all_docs, fraction, seed)
    report.add("heldout_concepts", n=len(heldout))
    reduced = kb.filtered([cid for cid in kb.concept_ids if cid not in heldout],
                          name=f"{kb.name} minus {len(heldout)} held-out concepts")
    reduced.meta["heldout_concepts"] = sorted(heldout)
    relabelled = {name: relabel_nil(docs, kb, heldout, report, name) for name, docs in splits.items()}
    return reduced, relabelled, report


__all__ = ["make_nil_splits", "choose_heldout", "relabel_nil"]

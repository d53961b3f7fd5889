"""Dataset statistics: documents, mentions, unique concepts, the share of dev /
test concepts unseen in training, and KB coverage."""
from __future__ import annotations

from typing import Dict, Optional, Sequence

from spacy.tokens import Doc

from ..kb.knowledge_base import KnowledgeBase
from .documents import split_gold_ids


def split_statistics(docs: Sequence[Doc], kb: Optional[KnowledgeBase] = None,
                     train_concepts: Optional[set] = None) -> Dict[str, object]:
    """Counts for one split.

    RETURNS (Dict[str, object]): documents, mentions, nil_mentions,
        composite_mentions, unique_concepts, and when given: kb_coverage
        (share of unique ids the KB resolves), missing_ids (a few examples),
        unseen_concepts_share / unseen_mentions_share (vs. train).
    """
    ids = set()
    mentions = nil = composite = 0
    unseen_mentions = 0
    for doc in docs:
        for ent in doc.ents:
            mentions += 1
            atoms = split_gold_ids(ent.kb_id_)
            if not atoms:
                nil += 1
                continue
            composite += len(atoms) > 1
            ids.update(atoms)
            if train_concepts is not None and not any(a in train_concepts for a in atoms):
                unseen_mentions += 1
    out: Dict[str, object] = {"documents": len(docs), "mentions": mentions, "nil_mentions": nil,
                              "composite_mentions": composite, "unique_concepts": len(ids)}
    if kb is not None:
        missing = sorted(i for i in ids if kb.resolve(i) is None)
        out["kb_covered_concepts"] = len(ids) - len(missing)
        out["kb_coverage"] = (len(ids) - len(missing)) / len(ids) if ids else 1.0
        out["missing_ids"] = missing[:20]
    if train_concepts is not None:
        unseen = ids - train_concepts
        out["unseen_concepts"] = len(unseen)
        out["unseen_concepts_share"] = len(unseen) / len(ids) if ids else 0.0
        linkable = mentions - nil
        out["unseen_mentions_share"] = unseen_mentions / linkable if linkable else 0.0
    return out


def corpus_statistics(splits: Dict[str, Sequence[Doc]], kb: Optional[KnowledgeBase] = None
                      ) -> Dict[str, Dict[str, object]]:
    """Statistics per split; 'unseen' shares are relative to the 'train' split."""
    train_concepts = None
    if "train" in splits:
        train_concepts = {a for doc in splits["train"] for e in doc.ents
                          for a in split_gold_ids(e.kb_id_)}
    return {name: split_statistics(docs, kb, None if name == "train" else train_concepts)
            for name, docs in splits.items()}


def statistics_table(stats: Dict[str, Dict[str, object]], title: str = "") -> str:
    lines = [f"### {title}", ""] if title else []
    lines += ["| split | docs | mentions | NIL | composite | unique concepts | unseen in train "
              "(concepts / mentions) | KB coverage |",
              "|---|---:|---:|---:|---:|---:|---|---:|"]
    for name, s in stats.items():
        unseen = ("-" if "unseen_concepts_share" not in s else
                  f"{100 * s['unseen_concepts_share']:.1f}% / {100 * s['unseen_mentions_share']:.1f}%")
        coverage = ("-" if "kb_coverage" not in s else
                    f"{s['kb_covered_concepts']}/{s['unique_concepts']} ({100 * s['kb_coverage']:.1f}%)")
        lines.append(f"| {name} | {s['documents']} | {s['mentions']} | {s['nil_mentions']} | "
                     f"{s['composite_mentions']} | {s['unique_concepts']} | {unseen} | {coverage} |")
    return "\n".join(lines) + "\n"


__all__ = ["split_statistics", "corpus_statistics", "statistics_table"]

"""Synonym-normalisation benchmarks from an OBO ontology, in the OBO-syn style
of GraphPrompt (Xu et al. 2022, Sec. 6.1).

Each query is one synonym of a term, as a Doc whose single entity spans its
text; the linking KB keeps the terms' canonical names only.

* zero-shot: the terms (that have synonyms) are split 2:1 into train / test
  with a seed; all synonyms of a test term are test queries, so no test term
  is seen in training. An optional dev share of the training terms gives a
  zero-shot dev set.
* few-shot: all (term, synonym) pairs are split 4:1:1 into train / dev / test.

In both settings a training synonym whose normalised text equals a dev or test
query's is dropped (counted as 'train_synonyms_equal_to_heldout_query'), so
held-out strings never appear in training, nor in GraphPrompt's templates.
Such pairs occur when two terms share a synonym, or when one term lists two
spellings that normalise alike ("Stiff-Man syndrome", "stiff man syndrome").

Synonyms that normalise to their term's canonical name are not queries
(counted as 'trivial_synonyms').
"""
from __future__ import annotations

import logging
import random
from typing import Dict, List, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from ..errors import BioELError, Errors
from ..kb.knowledge_base import KnowledgeBase
from ..kb.normalize import normalize_text
from .documents import ConversionReport, single_mention_doc

logger = logging.getLogger(__name__)


def _queries(kb: KnowledgeBase, report: ConversionReport) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for concept in kb:
        canonical = normalize_text(concept.canonical_name)
        kept = []
        for synonym in concept.synonyms:
            if normalize_text(synonym) == canonical or not normalize_text(synonym):
                report.add("trivial_synonyms", f"{concept.concept_id}: {synonym}")
                continue
            kept.append(synonym)
        if kept:
            out[concept.concept_id] = kept
    return out


def _drop_held_out_strings(train_pairs: List[Tuple[str, str]],
                           held_out_pairs: List[Tuple[str, str]],
                           report: ConversionReport) -> List[Tuple[str, str]]:
    """Keep the training pairs whose normalised synonym equals no held-out
    query; count each one left out in `report`."""
    held_out = {normalize_text(s) for _, s in held_out_pairs}
    kept = []
    for term, synonym in train_pairs:
        if normalize_text(synonym) in held_out:
            report.add("train_synonyms_equal_to_heldout_query", f"{term}: {synonym}")
            continue
        kept.append((term, synonym))
    return kept


def _label(concept_id: str) -> str:
    return concept_id.split(":", 1)[0] if ":" in concept_id else "Term"


def obo_synonym_splits(nlp: Language, kb: KnowledgeBase, *, setting: str = "zero-shot",
                       seed: int = 0, zero_shot_dev_fraction: float = 0.0
                       ) -> Tuple[Dict[str, List[Doc]], KnowledgeBase, ConversionReport]:
    """Make the zero-shot or few-shot synonym splits of an OBO KB.

    nlp (Language): Tokenizer / vocab.
    kb (KnowledgeBase): A KB loaded from OBO, with synonyms.
    setting (str): 'zero-shot' (terms 2:1 train/test) or 'few-shot' (synonyms 4:1:1).
    seed (int): Random seed of the split.
    zero_shot_dev_fraction (float): Share of the zero-shot training terms moved
        to a zero-shot dev split (0 keeps the paper's train/test only).
    RETURNS (Tuple[Dict[str, List[Doc]], KnowledgeBase, ConversionReport]): docs
        per split name, the names-only KB, and the report.
    """
    if setting not in ("zero-shot", "few-shot"):
        raise BioELError(Errors.E054.format(fmt=setting, options="zero-shot, few-shot"))
    if not 0.0 <= zero_shot_dev_fraction < 1.0:
        raise BioELError(Errors.E057.format(value=zero_shot_dev_fraction))
    report = ConversionReport(f"{kb.name} {setting} seed={seed}")
    queries = _queries(kb, report)
    n_synonyms = sum(len(v) for v in queries.values())
    if not n_synonyms:
        raise BioELError(Errors.E056.format(path=kb.name, n_synonyms=0))
    rng = random.Random(seed)
    splits: Dict[str, List[Tuple[str, str]]] = {}
    if setting == "zero-shot":
        terms = sorted(queries)
        rng.shuffle(terms)
        n_test = len(terms) // 3
        test_terms, train_terms = terms[:n_test], terms[n_test:]
        n_dev = int(round(len(train_terms) * zero_shot_dev_fraction))
        dev_terms, train_terms = train_terms[:n_dev], train_terms[n_dev:]
        test_pairs = [(t, s) for t in test_terms for s in queries[t]]
        dev_pairs = [(t, s) for t in dev_terms for s in queries[t]]
        train_pairs = _drop_held_out_strings(
            [(t, s) for t in train_terms for s in queries[t]], test_pairs + dev_pairs, report)
        splits = {"train": train_pairs, "test": test_pairs}
        if dev_pairs:
            splits["dev"] = dev_pairs
    else:
        pairs = [(t, s) for t in sorted(queries) for s in queries[t]]
        rng.shuffle(pairs)
        n = len(pairs)
        n_dev = n_test = n // 6
        held_out = pairs[:n_test + n_dev]
        splits = {"test": pairs[:n_test], "dev": pairs[n_test:n_test + n_dev],
                  "train": _drop_held_out_strings(pairs[n_test + n_dev:], held_out, report)}
    docs: Dict[str, List[Doc]] = {}
    for split, split_pairs in splits.items():
        docs[split] = [single_mention_doc(nlp, f"{split}:{i}", synonym, _label(term), term)
                       for i, (term, synonym) in enumerate(split_pairs)]
        report.add(f"{split}_queries", n=len(split_pairs))
        report.add(f"{split}_concepts", n=len({t for t, _ in split_pairs}))
    names_kb = kb.without_synonyms(name=f"{kb.name} (names only)")
    names_kb.meta.update({"obo_syn_setting": setting, "seed": seed})
    return docs, names_kb, report


__all__ = ["obo_synonym_splits"]

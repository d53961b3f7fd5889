"""A synthetic knowledge base at UMLS scale, built from real concept names.

The 2024AA UMLS Metathesaurus has about 3M distinct English names; its licence
keeps it out of a test set. For scale tests (index size, build time, recall of
approximate search) this module grows a KB of real names to any size: every
source concept is kept, derived concepts qualify every name of a source concept
("acute X", "X, familial", ... the way UMLS holds "Acute myocardial infarction"
beside "Myocardial infarction"), and every concept receives surface variants of
its names as synonyms, in the styles UMLS sources use: inversions ("Cancer,
Colon"), "NOS" and "(disorder)" suffixes, British spellings, number toggles and
single-character typos. The result is deterministic for a seed.

Example:
    >>> big = synthetic_kb([medic, ctd, hp, doid], n_names=3_000_000, seed=0)
"""
from __future__ import annotations

import logging
import random
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from spacy_bioel.errors import BioELError, Errors
from spacy_bioel.progress import progress_bar
from spacy_bioel.kb.concept import Concept
from spacy_bioel.kb.knowledge_base import KnowledgeBase
from spacy_bioel.kb.normalize import normalize_text

logger = logging.getLogger(__name__)

QUALIFIERS: Tuple[str, ...] = (
    "acute {}", "chronic {}", "{}, familial", "congenital {}", "{}, type 1", "{}, type 2",
    "recurrent {}", "severe {}", "early-onset {}", "late-onset {}", "{} in pregnancy",
    "{} of childhood", "drug-induced {}", "secondary {}", "idiopathic {}", "hereditary {}",
    "progressive {}", "bilateral {}", "mild {}", "{}, unspecified")
SPELLINGS: Tuple[Tuple[str, str], ...] = (
    ("tumor", "tumour"), ("anemia", "anaemia"), ("edema", "oedema"), ("esophag", "oesophag"),
    ("hemo", "haemo"), ("hema", "haema"), ("leukemia", "leukaemia"), ("fetal", "foetal"),
    ("pediatric", "paediatric"), ("ischemi", "ischaemi"), ("diarrhea", "diarrhoea"),
    ("estrogen", "oestrogen"), ("orthopedic", "orthopaedic"), ("color", "colour"))


def _inversion(name: str, rng: random.Random) -> Optional[str]:
    words = name.split()
    return f"{words[-1]}, {' '.join(words[:-1])}" if len(words) > 1 else None


def _nos(name: str, rng: random.Random) -> Optional[str]:
    return f"{name} NOS"


def _disorder(name: str, rng: random.Random) -> Optional[str]:
    return f"{name} (disorder)"


def _spelling(name: str, rng: random.Random) -> Optional[str]:
    lower = name.lower()
    for american, british in SPELLINGS:
        if american in lower:
            return lower.replace(american, british)
        if british in lower:
            return lower.replace(british, american)
    return None


def _number(name: str, rng: random.Random) -> Optional[str]:
    words = name.split()
    if not words or not words[-1].isalpha():
        return None
    last = words[-1]
    words[-1] = last[:-1] if last.endswith("s") and len(last) > 3 else last + "s"
    return " ".join(words)


def _typo(name: str, rng: random.Random) -> Optional[str]:
    words = name.split()
    long_words = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long_words:
        return None
    i = rng.choice(long_words)
    word = words[i]
    j = rng.randrange(1, len(word) - 2)
    words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2:]
    return " ".join(words)


VARIANTS: Tuple[Callable[[str, random.Random], Optional[str]], ...] = (
    _inversion, _nos, _disorder, _spelling, _number, _typo)


def surface_variants(names: Sequence[str], rng: random.Random, per_name: int = 2) -> List[str]:
    """`names` followed by up to `per_name` generated variants of each (styles
    drawn at random), distinct after `normalize_text`."""
    seen = set()
    out = []
    candidates = list(names) + [v for name in names for make in rng.sample(VARIANTS, per_name)
                                if (v := make(name, rng)) is not None]
    for name in candidates:
        key = normalize_text(name)
        if key and key not in seen:
            seen.add(key)
            out.append(name)
    return out


def _source_concepts(kbs: Sequence[KnowledgeBase]) -> Iterator[Tuple[str, List[str], Tuple[str, ...]]]:
    for position, kb in enumerate(kbs):
        for concept in kb:
            yield f"S{position}:{concept.concept_id}", list(concept.names()), concept.types


def synthetic_kb(kbs: Sequence[KnowledgeBase], n_names: int, *, seed: int = 0,
                 variants_per_name: int = 2, name: str = "", progress: bool = True
                 ) -> KnowledgeBase:
    """A KB of `n_names` distinct (concept, normalised name) pairs grown from the
    concepts of `kbs` (see the module docstring). Concept ids are 'S{i}:{id}' for
    the i-th source KB's concept and 'S{i}:{id}#q{r}' for its r-th qualified form.

    kbs (Sequence[KnowledgeBase]): Real KBs whose names seed the synthetic one.
    n_names (int): Names to reach; generation stops at exactly this many.
    seed (int): Seed of the variant choices (styles, typo positions).
    variants_per_name (int): Surface variants drawn per name (at most 6).
    RETURNS (KnowledgeBase): E105 when the sources have no name.
    """
    rng = random.Random(seed)
    sources = list(_source_concepts(kbs))
    if not sources:
        raise BioELError(Errors.E105)
    out = KnowledgeBase(name=name or f"synthetic {n_names:,} names from "
                        + " + ".join(kb.name for kb in kbs))
    total = 0
    bar = progress_bar(total=n_names, desc="Synthetic names", unit=" names", disable=not progress)
    for round_ in range(len(QUALIFIERS) + 1):
        for source_id, names, types in sources:
            if round_:
                names = [QUALIFIERS[round_ - 1].format(n) for n in names]
            concept_names = surface_variants(names, rng, variants_per_name)[:n_names - total]
            if not concept_names:
                continue
            concept_id = source_id if not round_ else f"{source_id}#q{round_}"
            out.add(Concept(concept_id, concept_names[0], tuple(concept_names[1:]), (), types))
            total += len(concept_names)
            bar.update(len(concept_names))
            if total >= n_names:
                bar.close()
                out.meta.update({"synthetic": True, "seed": seed, "sources": [kb.name for kb in kbs]})
                return out
    bar.close()
    logger.warning("The sources give %d names with every variant and qualifier, fewer than %d",
                   total, n_names)
    out.meta.update({"synthetic": True, "seed": seed, "sources": [kb.name for kb in kbs]})
    return out


__all__ = ["synthetic_kb", "surface_variants", "QUALIFIERS"]

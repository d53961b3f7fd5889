"""Self-alignment pre-training of the encoder on knowledge-base synonyms
(SapBERT): synonym sets and pairs with leakage rules (`synonyms`, no torch) and
the training loop (`trainer`, PyTorch + transformers only)."""
from .synonyms import (LeakageReport, SynonymPair, SynonymSet, apply_leakage_rules,
                       collect_synonym_sets, make_pairs, pair_batches)

__all__ = ["LeakageReport", "SynonymPair", "SynonymSet", "apply_leakage_rules",
           "collect_synonym_sets", "make_pairs", "pair_batches"]

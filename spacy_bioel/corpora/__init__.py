"""Corpus readers and converters: PubTator, AskAPatient, OBO synonym splits -> DocBin."""
from .documents import (DOC_ID_KEY, OVERLAPS_SPANS_KEY, ConversionReport, Mention,
                        parse_gold_ids, split_gold_ids)

__all__ = ["ConversionReport", "Mention", "parse_gold_ids", "split_gold_ids", "DOC_ID_KEY",
           "OVERLAPS_SPANS_KEY"]

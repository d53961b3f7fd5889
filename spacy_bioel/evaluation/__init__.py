"""The evaluation harness every result of ours and of the baselines goes through."""
from .metrics import evaluate_records, linking_metrics, nil_metrics
from .records import MentionRecord, annotate_subsets, records_from_docs
from .report import metrics_table, summary_table

__all__ = ["evaluate_records", "linking_metrics", "nil_metrics", "MentionRecord",
           "annotate_subsets", "records_from_docs", "metrics_table", "summary_table"]

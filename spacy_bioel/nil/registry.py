"""Registered NIL stages (entry points in `spacy_misc`)."""
from __future__ import annotations

from typing import List, Optional

from spacy.util import registry

from .stages import DEFAULT_THRESHOLD


@registry.misc("spacy-bioel.ThresholdNIL.v1")
def create_threshold_nil(threshold: Optional[float] = None):
    """NIL when 1 - the best cosine (candidates and nearest neighbour) reaches
    `threshold` (None: only when there is no candidate). No calibration until
    `tune` fits one; the behaviour of pipelines made before stages."""
    from .stages import ThresholdNIL
    return ThresholdNIL(threshold, None, nil_score_from="similarity")


@registry.misc("spacy-bioel.CalibratedNIL.v1")
def create_calibrated_nil(threshold: Optional[float] = DEFAULT_THRESHOLD,
                          calibration: Optional[List[float]] = None):
    """A calibrated probability p = sigmoid(a * support + b) that the top candidate
    is right; nil_score = 1 - p; NIL when nil_score >= threshold. calibration = [a, b]
    (None: the values fitted for the untrained embedded MiniLM, see docs/results/stages.md); the
    default threshold was fitted with it (best BC5CDR-NIL dev NIL F1)."""
    from .stages import DEFAULT_CALIBRATION, ThresholdNIL
    return ThresholdNIL(threshold, calibration or DEFAULT_CALIBRATION,
                        nil_score_from="probability")


# the same stage under the name of pipelines saved before it had its own (it is not a v2 of ThresholdNIL)
registry.misc("spacy-bioel.ThresholdNIL.v2")(create_calibrated_nil)

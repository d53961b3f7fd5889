"""NIL detectors and their calibration."""
from .threshold import calibrate_nil_threshold, nil_f1_at

__all__ = ["calibrate_nil_threshold", "nil_f1_at"]

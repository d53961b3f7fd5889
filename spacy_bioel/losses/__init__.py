"""Training losses, one per module, each with its paper and equation."""
from .info_nce import InfoNCELoss

__all__ = ["InfoNCELoss"]

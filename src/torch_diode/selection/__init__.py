"""Pure selection policy (numpy and the C++ engine's features, no torch.compile): the handler's
decision :func:`decide`, its settings :class:`Policy` and the confidence contract
:class:`Confidence` written by training and read by the handler."""

from .contract import CONFIDENCE_VERSION, Confidence, HeldoutSlowdown
from .decide import (
    SPILL_LOG2_REGS,
    Decision,
    NoUsableCandidate,
    Pool,
    decide,
    selection_order,
    unsure_reason,
    usable_candidates,
    widen,
)
from .policy import Policy

__all__ = ["CONFIDENCE_VERSION", "Confidence", "Decision", "HeldoutSlowdown", "NoUsableCandidate", "Policy", "Pool",
           "SPILL_LOG2_REGS", "decide", "selection_order", "unsure_reason", "usable_candidates", "widen"]

"""Pure selection policy (numpy and the C++ engine's features, no torch.compile): the handler's
decision :func:`decide`, its settings :class:`Policy` and the confidence contract
:class:`Confidence` written by training and read by the handler."""

from .contract import CONFIDENCE_VERSION, Confidence, HeldoutSlowdown, LossCalibration
from .decide import (
    LOSS_MARGIN,
    SPILL_LOG2_REGS,
    Decision,
    NoUsableCandidate,
    Pool,
    decide,
    extern_preference_for,
    known_kinds,
    loss_probability,
    safe_choice,
    selection_order,
    unsure_reason,
    usable_candidates,
    widen,
)
from .dynamic import DYNAMIC_MARGIN, SizeRange, decide_range, judged_over_range, range_verdict, size_scenarios
from .policy import Policy

__all__ = [
    "CONFIDENCE_VERSION",
    "Confidence",
    "DYNAMIC_MARGIN",
    "Decision",
    "HeldoutSlowdown",
    "LOSS_MARGIN",
    "LossCalibration",
    "NoUsableCandidate",
    "Policy",
    "Pool",
    "SPILL_LOG2_REGS",
    "SizeRange",
    "decide",
    "decide_range",
    "extern_preference_for",
    "judged_over_range",
    "known_kinds",
    "loss_probability",
    "range_verdict",
    "safe_choice",
    "selection_order",
    "size_scenarios",
    "unsure_reason",
    "usable_candidates",
    "widen",
]

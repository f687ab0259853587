"""The choice handler's statistics: one class for a handler's own counts and the process-wide
ones (``torch_diode.get_prediction_stats`` / ``profile_predictions``)."""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# the keys of DiodeInductorChoices.get_stats() counted by name
_HANDLER_COUNTS = (
    "total_calls",
    "model_selections",
    "configs_filtered",
    "cache_hits",
    "cache_stale",
    "enumerated",
    "enumeration_mismatch",
    "unsure_widened",
    "unsure_benchmarked",
    "unsure_out_of_range",
    "unsure_misaligned",
    "unsure_few_examples",
    "unsure_tf32",
    "unsure_heldout",
    "unsure_hardware_family",
    "extern_preferred",
    "extern_added",
    "dynamic_decisions",
    "dynamic_kept_aten",
    "not_gemm",
    "no_candidates",
    "fast_autotune_off",
)


class Stats:
    """Counts by name, fallbacks by reason, the decisions' confidences and time, and the latest
    decisions (for reports). Whatever a handler's Stats records also goes to its ``parent``
    (the process-wide one)."""

    def __init__(self, parent: Stats | None = None, keep_decisions: int = 256):
        self.parent = parent
        self.counts: Counter = Counter()
        self.confidences: list[float] = []
        self.decision_seconds = 0.0
        # the latest decisions: problem, chosen candidates and their predicted time
        self.decisions: deque[dict[str, Any]] = deque(maxlen=keep_decisions)

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] += n

    def add(self, counts: Counter) -> None:
        self.counts.update(counts)

    def fallback(self, reason: str) -> None:
        self.counts[f"fallback_{reason}"] += 1
        if self.parent is not None:
            self.parent.fallback(reason)

    def decided(self, confidence: float, scored: int, record: dict[str, Any]) -> None:
        """A decision the model made: its confidence, how many candidates it scored."""
        self.counts["total_predictions"] += 1
        self.counts["configs_scored"] += scored
        self.confidences.append(confidence)
        self.decisions.append(record)
        if self.parent is not None:
            self.parent.decided(confidence, scored, record)

    def timed(self, seconds: float) -> None:
        self.decision_seconds += seconds

    def reset(self) -> None:
        self.counts.clear()
        self.confidences.clear()
        self.decision_seconds = 0.0
        self.decisions.clear()

    def fallbacks(self) -> dict[str, int]:
        return {k[len("fallback_") :]: v for k, v in self.counts.items() if k.startswith("fallback_")}

    def handler_report(self) -> dict[str, Any]:
        """``DiodeInductorChoices.get_stats()``."""
        fallbacks = self.fallbacks()
        report: dict[str, Any] = {name: self.counts[name] for name in _HANDLER_COUNTS[:2]}
        report.update(fallbacks=fallbacks, fallbacks_total=sum(fallbacks.values()))
        report.update({f"fallback_{reason}": n for reason, n in fallbacks.items()})  # the integration README's keys
        report.update({name: self.counts[name] for name in _HANDLER_COUNTS[2:]})
        report["decision_seconds"] = self.decision_seconds
        return report

    def prediction_report(self) -> dict[str, Any]:
        """``torch_diode.get_prediction_stats()``: total_predictions (GEMMs the model decided),
        avg_confidence, fallbacks, configs_scored."""
        return {
            "total_predictions": self.counts["total_predictions"],
            "avg_confidence": float(sum(self.confidences) / len(self.confidences)) if self.confidences else math.nan,
            "fallbacks": sum(self.fallbacks().values()),
            "configs_scored": self.counts["configs_scored"],
        }


# every handler's decisions and fallbacks, process-wide
PROCESS_STATS = Stats(keep_decisions=0)


def get_prediction_stats() -> dict[str, Any]:
    """total_predictions (GEMMs the model decided), avg_confidence, fallbacks, configs_scored."""
    return PROCESS_STATS.prediction_report()


@contextmanager
def profile_predictions() -> Iterator[dict[str, Any]]:
    """Resets the prediction statistics for the block; the yielded dict is filled on exit."""
    PROCESS_STATS.reset()
    result: dict[str, Any] = {}
    try:
        yield result
    finally:
        result.update(get_prediction_stats())

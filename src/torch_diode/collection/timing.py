"""Timing kernels on the GPU as the fast collector does: Inductor's method (an L2 flush, CUDA events
around one launch, the minimum over repetitions), all repetitions queued before one
synchronisation, with a lead of GPU time before each flush (:data:`LEAD_US`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger(__name__)

# GPU time queued before each timed launch's flush (microseconds; 0: none). The host enqueues the
# flush, the start event and the launch; the flush hides the host's time behind it only while that
# time is shorter than the flush, which a faster memory shortens (python -m
# benchmarks.studies.timing_stability times both ways, with and without a busy host).
LEAD_US = 100.0
TIMING = (
    "min over reps of CUDA events around one launch after an L2 flush (Inductor's method), "
    "with lead_us of GPU time queued before each flush"
)


@functools.cache
def _sleep_cycles_per_us(device_index: int) -> float:
    """The GPU's clock as torch.cuda._sleep counts it: a known spin timed with events (the fastest
    of three, after a longer spin that loads the kernel and lets the clock rise)."""
    import torch

    cycles = 2_000_000
    with torch.cuda.device(device_index):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(10 * cycles)
        elapsed_ms = []
        for _ in range(3):
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            torch.cuda.synchronize()
            elapsed_ms.append(start.elapsed_time(end))
    return cycles / (1000.0 * min(elapsed_ms))


def _queue(fn: Callable[[], Any], reps: int, flush: Any, lead_us: float | None = None) -> list[tuple[Any, Any]]:
    import torch

    lead_us = LEAD_US if lead_us is None else lead_us
    lead = int(lead_us * _sleep_cycles_per_us(torch.cuda.current_device())) if lead_us > 0 else 0
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in pairs:
        if lead:
            torch.cuda._sleep(lead)
        flush.zero_()
        start.record()
        fn()
        end.record()
    return pairs


def time_launchers(
    launchers: Sequence[Callable[[], Any] | None],
    reps: int,
    flush: Any,
    long_ms: float = 1.0,
    lead_us: float | None = None,
) -> list[float | None]:
    """Milliseconds per launcher (min over the repetitions), Inductor's method: flush the cache
    (see :func:`flush_buffer`), then events around one launch. Two repetitions each first; those
    under ``long_ms`` get ``reps - 2`` more (long kernels vary little and cost the most), the others
    one more, queued after every launcher's first two: a stall of the host or the GPU now and then
    lands between a repetition's events (near 1 ms, on kernels of tens of microseconds), and two
    repetitions queued back to back can both hold it. ``None`` (or an exception while launching)
    gives ``None``."""
    import torch

    pending: list[list[tuple[Any, Any]] | None] = []
    for fn in launchers:
        if fn is None:
            pending.append(None)
            continue
        try:
            fn()  # first launch: loads the binary, catches launch-time errors
            pending.append(_queue(fn, min(2, reps), flush, lead_us))
        except Exception as e:
            logger.debug("launch failed: %s", e)
            pending.append(None)
    torch.cuda.synchronize()
    for i, fn in enumerate(launchers):
        p = pending[i]
        if p is not None and reps > 2:
            p.extend(_queue(fn, reps - 2 if min(s.elapsed_time(e) for s, e in p) < long_ms else 1, flush, lead_us))
    torch.cuda.synchronize()
    return [None if p is None else min(s.elapsed_time(e) for s, e in p) for p in pending]


FLUSH_BYTES = 256 * 2**20


def flush_buffer(device: str) -> Any:
    """The buffer zeroed before each timed launch: larger than L2 (a cold cache, as Inductor
    measures) and, after the lead (LEAD_US), long enough to zero that the host's launch overhead
    is hidden behind it instead of landing between the events, as it does behind an L2-sized flush
    (python -m benchmarks.studies.timing_methods, benchmarks.studies.timing_stability; benchmarks/studies/README.md)."""
    import torch

    return torch.empty(max(FLUSH_BYTES, hardware_l2_bytes()) // 4, dtype=torch.int32, device=device)


def hardware_l2_bytes() -> int:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)


__all__ = ["FLUSH_BYTES", "LEAD_US", "TIMING", "flush_buffer", "hardware_l2_bytes", "time_launchers"]

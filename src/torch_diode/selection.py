"""How a ranking becomes a choice: shared by the Inductor handler and the benchmarks that judge it.

Extern preference: an extern choice (ATen/cuBLAS) needs nothing compiled, and the model's typical
error (exp(RMSE) ~1.16 on the H100 validation set) makes a small predicted gain of a Triton
config a coin toss. So the best extern choice goes first unless a template is predicted at least
``extern_preference`` times faster. Measured on data/h100/validation by
benchmarks/extern_preference.py: 1.1 raises top-1 normalised performance from 0.970 to 0.976
and picks cuBLAS on 80 of 105 problems instead of 61 (cuBLAS is measured best on 68).
"""

from __future__ import annotations

import math

import numpy as np


def selection_order(log_time: np.ndarray, extern: np.ndarray, extern_preference: float = 1.0,
                    usable: np.ndarray | None = None) -> np.ndarray:
    """Candidate indices best first: by predicted ln time, with the best extern candidate moved to
    the front when it is predicted within ``extern_preference`` of the best template.
    ``usable``: indices allowed at all (default: every candidate)."""
    log_time = np.asarray(log_time, dtype=np.float64)
    extern = np.asarray(extern, dtype=bool)
    usable = np.arange(len(log_time)) if usable is None else np.asarray(usable)
    order = usable[np.argsort(log_time[usable], kind="stable")]
    if len(order) and extern_preference > 1.0 and not extern[order[0]]:
        externs = order[extern[order]]
        if len(externs) and log_time[externs[0]] <= log_time[order[0]] + math.log(extern_preference):
            order = np.concatenate([externs[:1], order[order != externs[0]]])
    return order


# log2(1 + estimated 32-bit registers per thread) from which a Triton config is never chosen:
# ~360 registers, 1.4x the 255 a thread can hold, so the kernel spills. Of the 4,395 such (problem,
# config) timings in data/h100 (train, validation, odd; 961 problems), none was its problem's best,
# 2 came within 1.05x of it and the median was 4.8x slower; the model, which sees few of them, had
# picked one such kernel (32x256x128, 2 warps) that ran 350x slower than the best.
SPILL_LOG2_REGS = 8.5


def usable_candidates(features: np.ndarray) -> np.ndarray:
    """Indices of the candidates that may be chosen at all. Left out: configs whose shared memory
    need exceeds the device (the C++ ``smem_exceeds`` feature: they would fail to compile), and
    configs whose register estimate is past ``SPILL_LOG2_REGS`` (they spill: the model, which sees
    few of them, has mistaken such 100x-slower kernels for the fastest)."""
    from .features import FEATURE_NAMES

    features = np.asarray(features)
    fits = features[:, FEATURE_NAMES.index("smem_exceeds")] < 0.5
    spills = features[:, FEATURE_NAMES.index("log2_regs_per_thread")] >= SPILL_LOG2_REGS
    return np.flatnonzero(fits & ~spills)


def widen(order: np.ndarray, log_time: np.ndarray, usable: np.ndarray, top_k: int, window: float) -> list[int]:
    """What an unsure decision hands Inductor's benchmark: of the first ``top_k`` (at least 1) of
    ``order``, those predicted within ``window`` of the best prediction among ``usable``."""
    limit = np.asarray(log_time)[usable].min() + math.log(max(1.0, float(window)))
    return [int(i) for i in order[: max(1, int(top_k))] if log_time[i] <= limit]

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
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .types import Problem


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


def widen(order: np.ndarray, top_k: int, eligible: np.ndarray | None = None) -> list[int]:
    """What an unsure decision hands Inductor's benchmark: the first ``top_k`` (at least 1) of
    ``order`` among the ``eligible`` candidates (a mask; default: all), with ``order[0]`` kept.

    The handler makes eligible the ATen choices and the Triton configs of Inductor's DEFAULT list
    (:func:`beyond_default_list` marks the others): on the 262 held-out unaligned H100 problems of
    data/h100 (validation's unaligned file, odd, odd2), the best measured of the model's top 5
    among those is 1.018x the best (worst 1.71x), against 1.038x (worst 6.78x) for its top 5 of
    the whole EXHAUSTIVE pool within 1.3x of its best prediction, the rule before; where the model
    is unsure its ranking of configs beyond Inductor's hand-picked list is the least to be trusted."""
    order = np.asarray(order)
    k = max(1, int(top_k))
    rest = order[1:] if eligible is None else order[1:][np.asarray(eligible, dtype=bool)[order[1:]]]
    return [int(i) for i in order[:1]] + [int(i) for i in rest[: k - 1]]


def beyond_default_list(problem: Problem, rows: np.ndarray) -> np.ndarray:
    """Which of the candidates given by their ``features.config_rows`` are Triton mm/bmm template
    configs outside Inductor's DEFAULT list for ``problem`` (candidates of other templates and
    ATen choices are not)."""
    from .collection.config_space import triton_candidates

    rows = np.asarray(rows)
    default, _ = triton_candidates(problem, "DEFAULT")
    if len(rows) == 0 or len(default) == 0:
        return np.zeros(len(rows), dtype=bool)
    same_template = rows[:, 0] == default[0, 0]
    listed = (rows[:, None, :] == default[None, :, :]).all(axis=2).any(axis=1)
    return same_template & ~listed

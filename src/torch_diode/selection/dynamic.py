"""Deciding a GEMM whose sizes are symbolic: one kernel serves every size the graph runs.

A graph compiled with dynamic sizes (``torch.compile(dynamic=True)``, ``mark_dynamic``, or the
automatic dynamic shapes of a function called with a second shape) runs the kernel chosen for
each GEMM at every size it is later called with. Default mode's cuBLAS call picks its kernel per
call; a Triton config is fixed at compile time. So a dynamic GEMM is decided over the sizes the
graph will run, not at the one size Inductor hints:

- Sizes (:func:`size_scenarios`): for each symbol, its hint (the call that compiled the graph), the
  bounds Inductor knows (``mark_dynamic(min=, max=)``), and the sizes of a distribution
  (``torch_diode.config.dynamic_sizes``: the batch sizes and token counts a serving stack runs)
  within those bounds, the other symbols at their hints.
- Rule (:func:`decide_range`): the best ATen choice (cuBLAS, what default mode runs) is kept unless
  one Triton config is predicted at least as fast as it at every size of the range
  (``DYNAMIC_MARGIN``) and ``extern_preference`` times faster on the geometric mean over the
  range, with none of the sizes unsure (:func:`.decide.unsure_reason`, its ``loss_risk`` judged
  per size). An unsure dynamic GEMM is not widened: Inductor would benchmark the widened set at
  the hint alone, the flaw of stock max-autotune with dynamic sizes; cuBLAS is the safe choice at
  every size.

Only the candidates :func:`judged_over_range` names are read beyond the hint: the ATen choices and
the templates predicted at the hint no slower than the best ATen choice (``DYNAMIC_MARGIN``). A
template slower at the hint cannot be picked, so the handler predicts the others at the hint alone
(most dynamic GEMMs keep cuBLAS, and then only the ATen choices are predicted at every size), and a
replay that predicts every candidate at every size decides the same.

The usable and known-kind rules are those of :func:`.decide.decide`; everything offline replays
this function as the handler calls it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .contract import Confidence
from .decide import (
    Decision,
    NoUsableCandidate,
    Pool,
    choosable,
    extern_preference_for,
    loss_probability,
    unsure_reason,
)
from .policy import Policy

# A Triton pick for a dynamic GEMM is predicted no slower than the best ATen choice by more than
# this factor at any size of its range (1.0: at least as fast at every size)
DYNAMIC_MARGIN = 1.0


@dataclass(frozen=True)
class SizeRange:
    """What Inductor knows of one symbolic size: the hint and the bounds (``upper`` None: none)."""

    hint: int
    lower: int = 1
    upper: int | None = None

    def sizes(self, distribution: Sequence[int]) -> tuple[int, ...]:
        """The hint, the finite bounds, and the distribution's sizes within the bounds."""
        upper = math.inf if self.upper is None else self.upper
        lower = max(1, self.lower)
        bounds = [b for b in (self.lower, self.upper) if b is not None and b >= 1 and b != self.hint]
        inside = [int(s) for s in distribution if lower <= s <= upper and s != self.hint]
        return tuple(dict.fromkeys([self.hint, *bounds, *inside]))


def size_scenarios(ranges: Mapping[str, SizeRange], distribution: Sequence[int]) -> list[dict[str, int]]:
    """The symbol values a dynamic GEMM is judged at: the hints first, then each symbol over its
    sizes (:meth:`SizeRange.sizes`) with the others at their hints."""
    hints = {name: r.hint for name, r in ranges.items()}
    out = [hints]
    for name, r in ranges.items():
        out.extend({**hints, name: size} for size in r.sizes(distribution)[1:])
    return out


@dataclass(frozen=True)
class RangeVerdict:
    """How each candidate fares over the sizes: ``worst`` and ``mean`` of its predicted ln-time
    difference to the best ATen choice of each size (NaN for the ATen choices and for the
    candidates left out)."""

    worst: np.ndarray
    mean: np.ndarray


def range_verdict(predictions: Sequence[np.ndarray], extern: np.ndarray, candidates: np.ndarray) -> RangeVerdict:
    """Each candidate of ``candidates`` against the best ATen choice size by size, from the
    members' mean of ``predictions`` ([K, N] or [N] per size)."""
    extern = np.asarray(extern, dtype=bool)
    externs = candidates[extern[candidates]]
    templates = candidates[~extern[candidates]]
    n = len(extern)
    worst, mean = np.full(n, np.nan), np.full(n, np.nan)
    if not len(externs) or not len(templates):
        return RangeVerdict(worst, mean)
    gaps = []
    for members in predictions:
        predicted = np.atleast_2d(np.asarray(members, dtype=np.float64)).mean(axis=0)
        gaps.append(predicted[templates] - predicted[externs].min())
    gaps_array = np.asarray(gaps)
    worst[templates] = gaps_array.max(axis=0)
    mean[templates] = gaps_array.mean(axis=0)
    return RangeVerdict(worst, mean)


def judged_over_range(pool: Pool, hint: np.ndarray, contract: Confidence | None = None) -> np.ndarray:
    """The candidates a dynamic GEMM is judged at beyond its hint: the usable ATen choices and the
    usable templates predicted at the hint no slower than the best of them by ``DYNAMIC_MARGIN``
    (without an ATen choice, the best at the hint). ``hint``: the members' ln times at the hint
    ([K, N] or [N])."""
    predicted = np.atleast_2d(np.asarray(hint, dtype=np.float64)).mean(axis=0)
    return _judged(choosable(pool, contract)[0], np.asarray(pool.extern, dtype=bool), predicted)


def _judged(usable: np.ndarray, extern: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """:func:`judged_over_range` of the ``usable`` candidates, ``predicted``: their mean ln times
    at the hint."""
    externs = usable[extern[usable]]
    if not len(externs):
        return usable[np.argmin(predicted[usable])][None] if len(usable) else usable
    bar = predicted[externs].min() + math.log(DYNAMIC_MARGIN)
    return usable[extern[usable] | (predicted[usable] <= bar)]


def decide_range(
    problems: Sequence,
    pool: Pool,
    predictions: Sequence[np.ndarray],
    features: Sequence[np.ndarray],
    policy: Policy,
    contract: Confidence | None = None,
    tf32: bool = False,
    unsure: str | None = None,
) -> Decision:
    """The handler's decision for a GEMM with symbolic sizes (the module's rule). ``problems``: the
    GEMM at each size scenario, the hint first; ``pool``: its candidates (features at the hint);
    ``predictions``: per scenario, the members' ln times ([K, N] or [N]), of which only the
    :func:`judged_over_range` candidates are read beyond the hint (the others may be NaN);
    ``features``: per scenario, feature rows of the problem (any of its candidates'). Raises
    NoUsableCandidate as :func:`.decide.decide` does."""
    extern = np.asarray(pool.extern, dtype=bool)
    usable, _ = choosable(pool, contract)
    if len(usable) == 0:
        raise NoUsableCandidate(f"no usable candidate of a known kind among {len(extern)} for {problems[0].short()}")
    means = [np.atleast_2d(np.asarray(m, dtype=np.float64)).mean(axis=0) for m in predictions]  # per size
    judged = _judged(usable, extern, means[0])
    verdict = range_verdict(means, extern, judged)
    preference = math.log(extern_preference_for(problems[0], policy))
    wins = np.flatnonzero((verdict.worst <= math.log(DYNAMIC_MARGIN)) & (verdict.mean <= -preference))
    externs = usable[extern[usable]]
    # the ATen choice predicted best over the range (cuBLAS picks its kernel per call; the ATen
    # templates, aten::addmm or aten::bias_addmm, are fixed at compile time)
    over_range = np.mean([mean[externs] for mean in means], axis=0)
    safe = int(externs[np.argmin(over_range)]) if len(externs) else None
    pick = int(wins[np.argmin(verdict.mean[wins])]) if len(wins) else safe
    if pick is None:  # no ATen choice to weigh against: the best at the hint, as a static GEMM
        pick = int(usable[np.argmin(means[0][usable])])
    if unsure is None and contract is not None and pick != safe:
        unsure = _unsure_at_some_size(problems, features, predictions, pick, safe, policy, contract, tf32)
    if unsure and safe is not None:
        pick = safe
    # the rest: the judged templates by their mean over the range, then the others by the hint's
    ranked = np.where(extern, np.inf, np.nan_to_num(verdict.mean, nan=np.inf))
    rest = [int(i) for i in usable[np.lexsort((means[0][usable], ranked[usable]))] if int(i) != pick]
    order = np.asarray([pick, *rest])
    chosen = [pick]
    if policy.top_k > 1 and safe is not None and safe != pick:  # both judged over the range: Inductor times them
        chosen.append(safe)
    gap = -verdict.mean[pick] if pick != safe and math.isfinite(verdict.mean[pick]) else 0.0
    confidence = 1.0 - math.exp(-abs(gap))
    template_ahead = bool(np.any(verdict.mean[np.isfinite(verdict.mean)] < 0))
    kept = pick == safe and (template_ahead or bool(unsure))
    return Decision(tuple(chosen), order, unsure, (), confidence, kept, False, dynamic=True)


def _unsure_at_some_size(problems, features, predictions, pick, safe, policy, contract, tf32) -> str | None:
    """The first unsure reason of any size scenario for ``pick`` against ``safe``, or None."""
    for problem, rows, members in zip(problems, features, predictions):
        calibration = contract.calibration_for(bool(problem.misaligned_operands))
        risk = loss_probability(np.atleast_2d(members), pick, safe, calibration)
        reason = unsure_reason(problem, rows, contract, policy, tf32, risk)
        if reason:
            return reason
    return None

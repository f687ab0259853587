"""How a ranking becomes a choice: the handler's decision, replayed offline by everything that
judges it (training's held-out report, validate-max-autotune, the benchmarks).

The rules, in order:

- Usable: configs whose shared memory need exceeds the device (the C++ ``smem_exceeds`` feature:
  they would fail to compile) or whose register estimate is past ``SPILL_LOG2_REGS`` (they spill,
  and the model, which sees few of them, has mistaken such kernels for the fastest) are never
  chosen.
- Known kinds: a candidate whose template kind the training data held no successful timing of
  (``Confidence.template_kinds``: e.g. ``decompose_k`` or a TMA template in a model trained
  without them) is never the first pick nor the ATen safety net: the model's prediction of it
  is a guess. It only rides along (the best predicted one) where an unsure decision has Inductor
  benchmark its choice.
- Order: by predicted time, the best extern choice (ATen/cuBLAS) moved first unless a template is
  predicted ``extern_preference`` times faster: an extern choice needs nothing compiled, and a
  small predicted gain is within the model's error. Not where an operand's rows are misaligned
  (:func:`extern_preference_for`): there cuBLAS loses its vector loads, runs slower than the
  model predicts, and first picks that kept it by the preference were the slow ones.
- Choice: the first ``top_k`` of the order, plus any predicted within ``performance_threshold``
  of the best, at most ``max_selected_configs``.
- Unsure (:func:`unsure_reason`): where the model's ranking is not to be trusted alone, the choice
  widens to the ``unsure_top_k`` best predicted (:func:`widen`), and Inductor benchmarks those, so
  an extrapolating model costs compile time rather than a slow kernel. Where ``unsure_top_k`` > 2
  the widened set always holds the best predicted ATen choice (what default mode runs) and the
  best predicted of the templates stock max-autotune tries (Inductor's DEFAULT list, decompose_k),
  so the user never gets slower than what they had.
- Several choices become one MultiTemplateBuffer, which Inductor's scheduler resolves to an ATen
  choice when the Triton winner's layout conflicts with its users'; with no ATen choice in it,
  torch.compile fails. So the best extern choice rides along with several Triton choices: it needs
  no compilation, and Inductor's benchmark only takes it if it is faster.
- Confidence: the predicted relative gap between the best and the second-best usable candidate
  (0: a coin toss, 1: no contest).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .contract import RANGE_FEATURES, Confidence, LossCalibration
from .policy import Policy

if TYPE_CHECKING:
    from ..types import Problem

# log2(1 + estimated 32-bit registers per thread) from which a Triton config is never chosen: past
# the 255 registers a thread can hold, with a margin for the estimate's error, the kernel spills.
SPILL_LOG2_REGS = 8.5


class NoUsableCandidate(ValueError):
    """Every candidate is left out by the usable rule."""


Mask = np.ndarray | Callable[[], np.ndarray]


@dataclass(frozen=True)
class Pool:
    """The candidates of one decision as the selection sees them.

    ``features``: the model's input rows (``features.featurize``); ``extern``: which are extern
    choices (``features.is_extern`` of their config rows); ``beyond_default``: which are Triton
    mm/bmm configs outside Inductor's DEFAULT list (``inductor.config_space.beyond_default_list``),
    or a function computing it, called only where a decision widens (None: none is; the widened
    set's DEFAULT template is then the best predicted template);
    ``allowed``: which may be chosen at all (offline: those with a measured time; None: all)."""

    features: np.ndarray
    extern: np.ndarray
    beyond_default: Mask | None = None
    allowed: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.features)


@dataclass(frozen=True)
class Decision:
    """``chosen``: the candidates Inductor gets, best first (``chosen[0]`` the first pick);
    ``order``: every usable candidate as the policy orders them; ``unsure``: why the model was not
    trusted alone (None: it was); ``widened``: what the unsure rule added to the choice."""

    chosen: tuple[int, ...]
    order: np.ndarray
    unsure: str | None
    widened: tuple[int, ...]
    confidence: float
    extern_preferred: bool
    extern_added: bool
    # estimated probability that the first pick is > LOSS_MARGIN times slower than the best ATen
    # choice (None: the model's contract records no calibration)
    loss_risk: float | None = None
    # decided over the sizes of a GEMM with symbolic sizes (selection.dynamic): an unsure one keeps
    # the ATen choice instead of widening, and extern_preferred says the range kept it
    dynamic: bool = False

    @property
    def first(self) -> int:
        return self.chosen[0]

    def notes(self) -> Counter:
        """The decision's counts, named as the handler's statistics name them."""
        notes: Counter = Counter()
        if self.dynamic:
            notes["dynamic_decisions"] += 1
            notes["dynamic_kept_aten"] += self.extern_preferred
            if self.unsure:
                notes[f"unsure_{self.unsure}"] += 1
            return notes
        notes["extern_preferred"] += self.extern_preferred
        if self.unsure:
            notes["unsure_widened"] += 1
            notes[f"unsure_{self.unsure}"] += 1
            notes["unsure_benchmarked"] += len(self.widened) > 1  # more than the first pick (unsure_top_k > 1)
        notes["extern_added"] += self.extern_added
        return notes


def selection_order(
    log_time: np.ndarray, extern: np.ndarray, extern_preference: float = 1.0, usable: np.ndarray | None = None
) -> np.ndarray:
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


def extern_preference_for(problem: Problem, policy: Policy) -> float:
    """The extern preference of ``problem``'s order: ``policy.extern_preference``, or none (1.0,
    the model's plain order) where an operand's rows are not 16-byte aligned. There the first
    picks that the preference turned to cuBLAS ran up to 2.6x the best measured, and the plain
    order's first picks were better on geometric mean on every held-out set
    (``benchmarks/results/extern_preference_cpu.json``; its replay is in the studies' index,
    benchmarks/studies/README.md)."""
    if problem.misaligned_operands:
        return 1.0
    return policy.extern_preference


def usable_candidates(features: np.ndarray) -> np.ndarray:
    """Indices of the candidates that may be chosen at all (the module's usable rule)."""
    from ..features import FEATURE_NAMES

    features = np.asarray(features)
    fits = features[:, FEATURE_NAMES.index("smem_exceeds")] < 0.5
    spills = features[:, FEATURE_NAMES.index("log2_regs_per_thread")] >= SPILL_LOG2_REGS
    return np.flatnonzero(fits & ~spills)


def widen(
    order: np.ndarray, top_k: int, default: np.ndarray | None = None, extern: np.ndarray | None = None
) -> list[int]:
    """What an unsure decision hands Inductor's benchmark: the first ``top_k`` (at least 1) of
    ``order``. With ``extern`` (a mask) and ``top_k`` > 1, the best ATen choice (default mode's
    kernel) and the best template of ``default`` (a mask of what stock max-autotune tries:
    Inductor's DEFAULT list and decompose_k; None: every template) take the last places where the
    first ``top_k`` lack them, so the benchmark never ends slower than what the user had;
    ``order[0]`` and the ATen choice are never given up (with ``top_k`` 2 the ATen choice takes the
    one place). The result is in the order of ``order``."""
    order = np.asarray(order)
    k = max(1, int(top_k))
    chosen = [int(i) for i in order[:k]]
    if extern is None or k == 1 or not len(order):
        return chosen
    extern = np.asarray(extern, dtype=bool)
    template = ~extern if default is None else ~extern & np.asarray(default, dtype=bool)
    kept: list[int] = []
    for want in (extern, template):  # the best ATen choice (default mode's), the best DEFAULT template (max-autotune's)
        best = next((int(i) for i in order if want[i]), None)
        if best is None:
            continue
        if best not in chosen:
            droppable = [i for i in chosen[1:] if i not in kept]
            if len(chosen) >= k and not droppable:
                continue
            if len(chosen) >= k:
                chosen.remove(droppable[-1])
            chosen.append(best)
        kept.append(best)
    position = {int(i): n for n, i in enumerate(order)}
    return sorted(chosen, key=position.__getitem__)


# the loss the handler guards against: the first pick slower than the best ATen choice by more than this
LOSS_MARGIN = 1.05


def safe_choice(order: np.ndarray, extern: np.ndarray) -> int | None:
    """The best ATen choice of ``order`` (what default mode runs), or None."""
    externs = np.asarray(order)[np.asarray(extern, dtype=bool)[order]]
    return int(externs[0]) if len(externs) else None


def loss_probability(
    members: np.ndarray, pick: int, safe: int | None, calibration: LossCalibration | None
) -> float | None:
    """The estimated probability that ``pick`` runs more than LOSS_MARGIN times slower than
    ``safe``: the difference of their ln times is read as normal, around the members' mean
    difference, with the spread of the members' differences scaled and widened as ``calibration``
    says. ``members``: [K, N] predicted ln times. None without a calibration or a safe choice; 0
    where the pick is the safe choice."""
    if calibration is None or safe is None:
        return None
    if pick == safe:
        return 0.0
    members = np.atleast_2d(np.asarray(members, dtype=np.float64))
    difference = members[:, pick] - members[:, safe]
    spread = float(difference.std(ddof=1)) if len(difference) > 1 else 0.0
    sigma = math.hypot(calibration.spread_scale * spread, calibration.residual)
    gap = math.log(LOSS_MARGIN) - float(difference.mean())
    if sigma <= 0.0:
        return float(gap < 0)
    return 0.5 * math.erfc(gap / (sigma * math.sqrt(2.0)))


def unsure_reason(
    problem: Problem,
    features: np.ndarray,
    contract: Confidence,
    policy: Policy,
    tf32: bool = False,
    risk: float | None = None,
) -> str | None:
    """Why the model's ranking of ``problem`` is not to be trusted alone, or None:

    - ``out_of_range``: its element type is not in the training data, or one of log2 B, M, N, K
      lies more than one unit (2x) beyond what the training data of its element type held;
    - ``few_examples``: its element type had fewer than ``min_dtype_problems`` training problems;
    - ``misaligned``: an operand's rows are not 16-byte aligned (cuBLAS and the Triton templates
      lose their vector loads) and the training data held no such problem, or the model's first
      picks of held-out misaligned problems were on geometric mean more than
      ``unsure_heldout_slowdown`` times slower than the best (judged where training's validation
      split held at least ``min_heldout_problems`` of them; that split also chose the early stop,
      so the figure leans optimistic). All such problems at once: nothing the model gives tells
      its slow first picks of them apart, ``loss_risk`` through their own calibration included
      (docs/handler.md);
    - ``tf32``: fp32 with TF32 allowed (``tf32``) and the training data timed none so, or fewer
      than ``min_dtype_problems`` (cuBLAS and Triton run other kernels under TF32: the same bar
      as for an element type);
    - ``loss_risk``: the estimated probability (``risk``, :func:`loss_probability`, through
      :meth:`Confidence.calibration_for` the problem) that the first pick is more than LOSS_MARGIN
      times slower than the best ATen choice exceeds ``unsure_loss_probability``.

    The first rule that holds is the reason. ``features``: the problem's feature rows (the range
    features are the same in every row)."""
    from ..features import FEATURE_NAMES

    ranges = contract.ranges_for(problem.dtype_a)
    if ranges is None:
        return "out_of_range"  # the model never saw this element type
    for name in RANGE_FEATURES:
        lo, hi = ranges.get(name, (-math.inf, math.inf))
        value = float(features[0, FEATURE_NAMES.index(name)])
        if value < lo - 1.0 or value > hi + 1.0:
            return "out_of_range"
    count = (contract.problems_by_dtype or {}).get(problem.dtype_a)
    if count is not None and count < policy.min_dtype_problems:
        return "few_examples"
    misaligned = bool(problem.misaligned_operands)
    if misaligned and contract.misaligned_problems == 0:
        return "misaligned"
    # (the same figure of aligned problems made every aligned problem unsure at once; replays of
    # the held-out sets with and without it: it changed no decision, and loss_risk judges each
    # problem on its own, benchmarks/results/unsure_rules_cpu.json; its replay: the studies' index)
    heldout = contract.heldout_top1_slowdown.get("misaligned")
    if (
        misaligned
        and heldout
        and heldout.problems >= policy.min_heldout_problems
        and heldout.geomean > policy.unsure_heldout_slowdown
    ):
        return "misaligned"
    # fp32 with TF32 allowed runs other kernels (cuBLAS and Triton) than a model timed without it
    tf32_count = contract.tf32_problems or 0
    if tf32 and problem.dtype_a == "float32" and tf32_count < max(1, policy.min_dtype_problems):
        return "tf32"
    if risk is not None and risk > policy.unsure_loss_probability:
        return "loss_risk"
    return None


def choosable(candidates: Pool, contract: Confidence | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The candidates a decision may choose (:func:`usable_candidates`, ``candidates.allowed``) of a
    template kind the ``contract`` knows, and the usable ones of a kind it does not (None: every
    kind is known)."""
    usable = usable_candidates(candidates.features)
    if candidates.allowed is not None:
        usable = usable[np.asarray(candidates.allowed, dtype=bool)[usable]]
    if contract is None:
        return usable, usable[:0]
    known = known_kinds(candidates.features, contract.template_kinds)
    return usable[known[usable]], usable[~known[usable]]


def known_kinds(features: np.ndarray, kinds: Sequence[str]) -> np.ndarray:
    """Which candidates (their feature rows) are of a template kind named in ``kinds``
    (``_C.template_kind_names()``), from the features' one-hot of the kind."""
    from ..features import FEATURE_NAMES, template_kind_names

    names = template_kind_names()
    first = FEATURE_NAMES.index(f"template_is_{names[0]}")
    columns = [first + names.index(k) for k in kinds if k in names]
    return np.asarray(features)[:, columns].sum(axis=1) > 0.5 if columns else np.zeros(len(features), dtype=bool)


def decide(
    problem: Problem,
    candidates: Pool,
    predictions: np.ndarray,
    policy: Policy,
    contract: Confidence | None = None,
    tf32: bool = False,
    unsure: str | None = None,
) -> Decision:
    """The handler's decision for ``problem`` from the model's ``predictions``: ln time of each
    candidate, float[N], or every ensemble member's, float[K, N] (their mean ranks), by the rules
    of this module. Without a ``contract`` the model is trusted (nothing is unsure) and every
    template kind is known. ``tf32``: whether fp32 matmuls may run TF32 kernels. ``unsure``: a
    reason the caller already has not to trust the model alone (e.g. ``hardware_family``). Raises
    NoUsableCandidate where every candidate of a known kind is left out."""
    members = np.atleast_2d(np.asarray(predictions, dtype=np.float64))
    predicted = members.mean(axis=0)
    extern = np.asarray(candidates.extern, dtype=bool)
    usable, riders = choosable(candidates, contract)
    if len(usable) == 0:
        raise NoUsableCandidate(f"no usable candidate of a known kind among {len(predicted)} for {problem.short()}")
    order = selection_order(predicted, extern, extern_preference_for(problem, policy), usable)
    extern_preferred = bool(order[0] != usable[np.argmin(predicted[usable])])
    widened: list[int] = []
    risk = None
    if contract is not None:
        calibration = contract.calibration_for(bool(problem.misaligned_operands))
        risk = loss_probability(members, int(order[0]), safe_choice(order, extern), calibration)
    if unsure is None and contract is not None:
        unsure = unsure_reason(problem, candidates.features, contract, policy, tf32, risk)
    if unsure:
        beyond = candidates.beyond_default() if callable(candidates.beyond_default) else candidates.beyond_default
        # at most unsure_top_k benchmarked: the best predicted unknown kind, where there is one, takes the last place
        k = policy.unsure_top_k - (len(riders) > 0 and policy.unsure_top_k > 2)
        default = None if beyond is None else ~np.asarray(beyond, dtype=bool)
        widened = widen(order, k, default, extern)
        if 1 < len(widened) < policy.unsure_top_k and len(riders):  # benchmarked: the unknown kind rides along
            widened.append(int(riders[np.argmin(predicted[riders])]))
    best = predicted[order[0]]
    threshold = policy.performance_threshold
    within = [i for i in order if predicted[i] <= best + math.log(threshold)] if threshold > 1.0 else []
    cap = max(policy.top_k, len(widened), policy.max_selected_configs)
    chosen = list(dict.fromkeys([int(i) for i in order[: policy.top_k]] + widened + [int(i) for i in within]))[:cap]
    extern_added = False
    if len(chosen) > 1 and not any(extern[i] for i in chosen) and extern[order].any():
        chosen.append(int(order[extern[order]][0]))
        extern_added = True
    ranked = np.sort(predicted[usable])
    confidence = 1.0 - math.exp(ranked[0] - ranked[1]) if len(ranked) > 1 else 1.0
    return Decision(tuple(chosen), order, unsure, tuple(widened), confidence, extern_preferred, extern_added, risk)

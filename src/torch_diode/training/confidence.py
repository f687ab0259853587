"""The confidence contract a training run records in its model (what the handler reads to decide
when it is unsure, :class:`torch_diode.selection.Confidence`): the held-out problems' first picks,
the cases of a first pick against the best ATen choice and the loss calibration fitted on them."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import torch

from ..features import FEATURE_NAMES, config_rows, template_kind_names
from ..inductor.config_space import decision_pool
from ..selection import (
    LOSS_MARGIN,
    Confidence,
    HeldoutSlowdown,
    LossCalibration,
    NoUsableCandidate,
    Policy,
    decide,
    extern_preference_for,
    safe_choice,
)
from ..selection.contract import RANGE_FEATURES
from .data import TrainingArrays
from .model import Ensemble, Regressor


def contract_of(
    arrays: TrainingArrays,
    heldout: dict[str, HeldoutSlowdown],
    calibration: LossCalibration | None = None,
    misaligned_calibration: LossCalibration | None = None,
) -> Confidence:
    """The confidence contract of a training run (what the handler reads, see selection.Confidence)."""

    def ranges_of(rows: np.ndarray) -> dict[str, tuple[float, float]]:
        out = {}
        for name in RANGE_FEATURES:
            column = arrays.features[rows, FEATURE_NAMES.index(name)]
            out[name] = (float(column.min()), float(column.max()))
        return out

    by_dtype = {}
    for dtype in sorted({p.dtype_a for _, p in arrays.problems}):
        rows = np.isin(arrays.group, [i for i, (_, p) in enumerate(arrays.problems) if p.dtype_a == dtype])
        if rows.any():
            by_dtype[dtype] = ranges_of(rows)
    return Confidence(
        feature_ranges=ranges_of(np.ones(len(arrays.features), dtype=bool)),
        # the same per element type: a dtype may cover far less than all of them together
        feature_ranges_by_dtype=by_dtype,
        problems_by_dtype=dict(sorted(Counter(p.dtype_a for _, p in arrays.problems).items())),
        misaligned_problems=sum(1 for _, p in arrays.problems if p.misaligned_operands),
        tf32_problems=len(np.unique(arrays.group[arrays.features[:, FEATURE_NAMES.index("allow_tf32")] > 0.5])),
        heldout_top1_slowdown=heldout,
        loss_calibration=calibration,
        misaligned_loss_calibration=misaligned_calibration,
        template_kinds=tuple(
            k for k in template_kind_names() if arrays.features[:, FEATURE_NAMES.index(f"template_is_{k}")].max() > 0.5
        ),
    )


def training_data_summary(arrays: TrainingArrays, contract: Confidence) -> dict[str, Any]:
    """The model file's ``training_data``: the confidence contract and a description of the data."""
    hardware = {hw.hardware_id: hw for hw, _ in arrays.problems}
    return {
        **contract.to_dict(),
        "problems": arrays.num_problems,
        "rows": int(len(arrays.log_time_us)),
        "ops": sorted({p.op for _, p in arrays.problems}),
        "dtypes": sorted({p.dtype_a for _, p in arrays.problems}),
        "hardware_ids": sorted(hardware),
        "data_versions": sorted({f"torch {hw.torch_version}, triton {hw.triton_version}" for hw in hardware.values()}),
    }


def heldout_top1_slowdown(
    model: Regressor | Ensemble, arrays: TrainingArrays, problems: np.ndarray, policy: Policy
) -> dict[str, HeldoutSlowdown]:
    """How well the model's first pick (the handler's, :func:`torch_diode.selection.decide`) does on
    ``problems`` (indices, held out of the fit, though they chose its early stop), split by whether
    an operand's rows are misaligned: for each kind the geometric mean over problems of (measured
    time of the pick / best measured time among the usable candidates) and the problem count.
    Kinds without problems are left out."""
    slowdowns: dict[str, list[float]] = {"aligned": [], "misaligned": []}
    preferences: dict[str, float] = {}
    with torch.no_grad():
        for g in problems:
            rows = np.flatnonzero(arrays.group == g)
            features = arrays.features[rows]
            problem = arrays.problems[g][1]
            predicted = model(torch.from_numpy(features)).numpy().astype(np.float64)
            pool = decision_pool(problem, features, config_rows([arrays.configs[i] for i in rows]))
            try:
                decision = decide(problem, pool, predicted, policy)
            except NoUsableCandidate:
                continue
            measured = arrays.log_time_us[rows].astype(np.float64)
            kind = "misaligned" if problem.misaligned_operands else "aligned"
            slowdowns[kind].append(float(measured[decision.first] - measured[decision.order].min()))
            preferences[kind] = extern_preference_for(problem, policy)
    return {
        name: HeldoutSlowdown(float(math.exp(np.mean(v))), len(v), preferences[name])
        for name, v in slowdowns.items()
        if v
    }


def loss_cases(model: Regressor | Ensemble, arrays: TrainingArrays, problems: np.ndarray, policy: Policy) -> np.ndarray:
    """float[P, 3]: for each of ``problems`` whose first pick (the handler's order) is not its best
    ATen choice, the members' mean and standard deviation of (predicted ln time of the pick - of
    the best ATen choice) and whether the pick measured more than LOSS_MARGIN times slower (1/0)."""
    cases = []
    with torch.no_grad():
        for g in problems:
            rows = np.flatnonzero(arrays.group == g)
            features = arrays.features[rows]
            x = torch.from_numpy(features)
            members = (model.members(x) if isinstance(model, Ensemble) else model(x)[None]).numpy().astype(np.float64)
            problem = arrays.problems[g][1]
            pool = decision_pool(problem, features, config_rows([arrays.configs[i] for i in rows]))
            try:
                decision = decide(problem, pool, members, policy)
            except NoUsableCandidate:
                continue
            pick, safe = decision.first, safe_choice(decision.order, pool.extern)
            if safe is None or pick == safe:
                continue
            difference = members[:, pick] - members[:, safe]
            measured = arrays.log_time_us[rows].astype(np.float64)
            cases.append(
                (
                    difference.mean(),
                    difference.std(ddof=1) if len(difference) > 1 else 0.0,
                    float(measured[pick] - measured[safe] > math.log(LOSS_MARGIN)),
                )
            )
    return np.array(cases, dtype=np.float64).reshape(-1, 3)


MIN_CALIBRATION_CASES = 20  # a loss calibration fits two numbers: no fit from fewer cases

MIN_CALIBRATION_LOSSES = 5  # nor from fewer losses, whose log loss a residual near 0 minimises


def fit_loss_calibration(cases: np.ndarray) -> LossCalibration | None:
    """The LossCalibration of least log loss on ``cases`` (:func:`loss_cases`), on a grid; None
    with fewer than MIN_CALIBRATION_CASES cases or fewer than MIN_CALIBRATION_LOSSES losses among
    them (with one loss the fit narrows the residual to the grid's least, a contract sure of every
    pick that it has seen once go wrong; the misaligned problems then read the calibration of all)."""
    mean, spread, lost = cases.reshape(-1, 3).T
    if len(mean) < MIN_CALIBRATION_CASES or lost.sum() < MIN_CALIBRATION_LOSSES:
        return None
    best = (math.inf, 1.0, 0.1)
    for scale in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0) if spread.any() else (1.0,):
        for residual in np.linspace(0.01, 0.6, 60):
            sigma = np.hypot(scale * spread, residual)
            p = np.clip(0.5 * _erfc((math.log(LOSS_MARGIN) - mean) / (sigma * math.sqrt(2.0))), 1e-6, 1 - 1e-6)
            loss = -np.mean(lost * np.log(p) + (1 - lost) * np.log(1 - p))
            if loss < best[0] - 1e-12:
                best = (loss, scale, float(residual))
    return LossCalibration(best[1], round(best[2], 4), len(cases))


def _erfc(x: np.ndarray) -> np.ndarray:
    return torch.special.erfc(torch.from_numpy(np.asarray(x, dtype=np.float64))).numpy()


def held_out_contract(
    model: Regressor | Ensemble, arrays: TrainingArrays, val_problem: np.ndarray, own: np.ndarray | None = None
) -> Confidence:
    """The contract of ``model`` judged on the held-out problems ``val_problem`` (a mask), of which
    ``own`` (a mask, default all) are measured on the model's GPU: the first picks and loss cases
    are those of ``own``; where they are too few for a loss calibration (a model adapted to a
    hundred problems holds out about fifteen), the calibration is fitted on all held-out problems."""
    own = val_problem if own is None else own & val_problem
    # the handler is unsure of a kind whose held-out first picks are slow (selection.unsure_reason)
    policy = Policy.from_config()
    heldout = heldout_top1_slowdown(model, arrays, np.flatnonzero(own), policy)
    # the handler reads the model's uncertainty through these (selection.loss_probability): one of
    # all held-out problems, and one of the misaligned ones alone, which the handler reads for them
    calibration, misaligned_calibration = _calibrations(model, arrays, np.flatnonzero(own), policy)
    if calibration is None and (own != val_problem).any():
        calibration, misaligned_calibration = _calibrations(model, arrays, np.flatnonzero(val_problem), policy)
    return contract_of(arrays, heldout, calibration, misaligned_calibration)


def _calibrations(
    model: Regressor | Ensemble, arrays: TrainingArrays, validation: np.ndarray, policy: Policy
) -> tuple[LossCalibration | None, LossCalibration | None]:
    """The loss calibrations of all ``validation`` problems and of the misaligned ones alone."""
    odd = np.array([bool(arrays.problems[g][1].misaligned_operands) for g in validation], dtype=bool)
    aligned_cases = loss_cases(model, arrays, validation[~odd], policy)
    misaligned_cases = loss_cases(model, arrays, validation[odd], policy)
    return fit_loss_calibration(np.concatenate([aligned_cases, misaligned_cases])), fit_loss_calibration(
        misaligned_cases
    )

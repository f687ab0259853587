"""Validating models: error and ranking metrics, and comparison with max-autotune's choices.

Every figure is computed over the whole dataset given (optionally one hardware / op). Failed
choices (no measured time) take no part: they cannot be chosen at run time. Per-problem ranking
metrics come from the C++ core (``_C.ranking_metrics``); this module aggregates them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._C import ranking_metrics
from .errors import UserError
from .inductor.config_space import decision_pool
from .predict import load_model, predict_log_time_us
from .training.data import matches_hardware
from .types import Dataset, Hardware, KernelConfig, Problem

TOP_NS = (1, 5, 10, 20, 50)
EQUAL_TOLERANCE = 0.01  # within 1%: "equal" in validate-max-autotune


@dataclass
class Predictions:
    """Measured and predicted times of every (problem, config), grouped by problem."""

    problems: list[tuple[Hardware, Problem]]
    configs: list[KernelConfig]
    measured_us: np.ndarray  # float64[N], inf where the choice failed
    predicted_log_us: np.ndarray  # float64[N]
    offsets: np.ndarray  # int64[P + 1]

    def rows(self, p: int) -> slice:
        return slice(int(self.offsets[p]), int(self.offsets[p + 1]))

    def of_op(self, op: str) -> Predictions:
        """The problems of one op (mm, addmm, ...) alone."""
        keep = [p for p, (_, problem) in enumerate(self.problems) if problem.op == op]
        rows = [np.arange(self.offsets[p], self.offsets[p + 1]) for p in keep]
        index = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        return Predictions(
            [self.problems[p] for p in keep],
            [self.configs[i] for i in index],
            self.measured_us[index],
            self.predicted_log_us[index],
            np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64),
        )

    @property
    def ops(self) -> list[str]:
        return sorted({problem.op for _, problem in self.problems})


def collect_predictions(
    model: str | os.PathLike, dataset: Dataset, hardware_name: str | None = None, op_name: str | None = None
) -> Predictions:
    engine = load_model(model)
    problems, configs, measured, predicted, offsets = [], [], [], [], [0]
    for hardware, problem, timings in dataset.problems():
        if not matches_hardware(hardware, hardware_name) or (op_name and problem.op != op_name):
            continue
        cfgs = [t.config for t in timings]
        problems.append((hardware, problem))
        configs.extend(cfgs)
        measured.append(np.array([t.time_us if not t.failed else math.inf for t in timings], dtype=np.float64))
        predicted.append(predict_log_time_us(engine, problem, cfgs, hardware).astype(np.float64))
        offsets.append(offsets[-1] + len(cfgs))
    if not problems:
        raise UserError(f"no problems to evaluate (hardware={hardware_name!r}, op={op_name!r})")
    return Predictions(
        problems, configs, np.concatenate(measured), np.concatenate(predicted), np.array(offsets, np.int64)
    )


def _geomean(x: np.ndarray) -> float:
    x = x[np.isfinite(x) & (x > 0)]
    return float(np.exp(np.mean(np.log(x)))) if len(x) else math.nan


def validate_model(
    model: str | os.PathLike,
    dataset: Dataset,
    *,
    hardware_name: str | None = None,
    op_name: str | None = None,
    top_n_worst: int = 10,
) -> dict[str, Any]:
    """The validate-model report (keys listed in docs/architecture.md), with ``by_op``: the same
    figures (all but the per-problem and worst lists) for each op's problems alone."""
    pr = collect_predictions(model, dataset, hardware_name, op_name)
    if not np.isfinite(pr.measured_us).any():
        raise UserError(
            f"no successful timing among the {len(pr.problems)} problems to evaluate "
            f"(hardware={hardware_name!r}, op={op_name!r}): every choice failed"
        )
    report = _report(pr, top_n_worst)
    report["by_op"] = {
        op: {k: v for k, v in _report(pr.of_op(op), 0).items() if k not in _PER_PROBLEM_KEYS} for op in pr.ops
    }
    report["calibration"] = loss_calibration(model, dataset, hardware_name=hardware_name, op_name=op_name)
    report["_predictions"] = pr  # for plots; dropped before writing JSON
    return report


_PER_PROBLEM_KEYS = ("worst_predictions", "per_problem")


def _report(pr: Predictions, top_n_worst: int) -> dict[str, Any]:
    ok = np.isfinite(pr.measured_us)
    err = pr.predicted_log_us[ok] - np.log(pr.measured_us[ok])
    mse = float(np.mean(err**2))
    rank = ranking_metrics(pr.measured_us, pr.predicted_log_us, pr.offsets, list(TOP_NS))
    slowdown = np.asarray(rank["top1_slowdown"])
    valid = np.isfinite(slowdown)
    rows_ok = np.flatnonzero(ok)
    worst_idx = rows_ok[np.argsort(-np.abs(err))[:top_n_worst]]
    problem_of = np.searchsorted(pr.offsets, np.arange(len(pr.configs)), side="right") - 1
    worst = [
        {
            "problem": pr.problems[problem_of[i]][1].short(),
            "config": pr.configs[i].short(),
            "predicted_us": float(np.exp(pr.predicted_log_us[i])),
            "measured_us": float(pr.measured_us[i]),
            "ratio": float(np.exp(pr.predicted_log_us[i]) / pr.measured_us[i]),
        }
        for i in worst_idx
    ]
    return {
        "num_problems": int(valid.sum()),
        "num_timed_configs": int(ok.sum()),
        "mse": mse,
        "rmse": math.sqrt(mse),
        "exp_rmse": math.exp(math.sqrt(mse)),
        "top1_perf_geomean": _geomean(np.asarray(rank["top1_perf"])),
        "top5_perf_geomean": _geomean(np.asarray(rank["top5_perf"])),
        "kendall_tau_mean": float(np.nanmean(np.asarray(rank["kendall_tau"])))
        if np.isfinite(rank["kendall_tau"]).any()
        else math.nan,
        "within_5pct_fraction": float(np.mean(slowdown[valid] <= 1.05)) if valid.any() else math.nan,
        "worst_top1_slowdown": float(np.max(slowdown[valid])) if valid.any() else math.nan,
        "top1_slowdown_geomean": _geomean(slowdown),
        "worst_predictions": worst,
        "per_problem": [
            {"problem": p.short(), "top1_slowdown": float(s), "kendall_tau": float(k), "best_us": float(b)}
            for (_, p), s, k, b in zip(pr.problems, slowdown, rank["kendall_tau"], rank["best_us"])
        ],
    }


CALIBRATION_BINS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


def loss_calibration(
    model: str | os.PathLike, dataset: Dataset, *, hardware_name: str | None = None, op_name: str | None = None
) -> dict[str, Any] | None:
    """How well the model's estimated probability of a loss (its first pick, in the handler's
    order, measured more than LOSS_MARGIN times slower than the best ATen choice:
    :func:`torch_diode.selection.loss_probability`) matches what was measured: per bin of the
    estimate, the problems, the mean estimate and the observed fraction of losses; the Brier
    score over all; the same means by kind (``by_kind``: aligned, misaligned), each problem's
    estimate read through the calibration of its kind (``Confidence.calibration_for``: the
    misaligned problems' own, ``misaligned_calibration``, where the model records one). Problems
    whose pick is the ATen choice (estimate 0) are counted apart. None where the model's contract
    records no calibration (a model trained before it)."""
    import json as _json

    from .features import config_rows, featurize
    from .selection import LOSS_MARGIN, Confidence, NoUsableCandidate, Policy, decide, safe_choice

    engine = load_model(model)
    contract = Confidence.from_dict(_json.loads(engine.metadata_json).get("training_data"))
    if contract.loss_calibration is None:
        return None
    policy = Policy.from_config()
    estimates, losses, misaligned, aten_picks = [], [], [], 0
    for hardware, problem, timings in dataset.problems():
        if not matches_hardware(hardware, hardware_name) or (op_name and problem.op != op_name):
            continue
        ok = [t for t in timings if not t.failed]
        if not ok:
            continue
        configs = [t.config for t in ok]
        pool = decision_pool(problem, featurize(problem, configs, hardware), config_rows(configs))
        try:
            decision = decide(problem, pool, engine.predict_members(pool.features), policy, contract)
        except NoUsableCandidate:
            continue
        safe = safe_choice(decision.order, pool.extern)
        if safe is None:
            continue
        if decision.first == safe:
            aten_picks += 1
            continue
        measured = np.array([t.time_us for t in ok])
        estimates.append(decision.loss_risk)
        losses.append(float(measured[decision.first] > LOSS_MARGIN * measured[safe]))
        misaligned.append(bool(problem.misaligned_operands))
    p, y, odd = np.array(estimates, dtype=np.float64), np.array(losses), np.array(misaligned, dtype=bool)

    def among(rows: np.ndarray) -> dict[str, Any]:
        return {
            "problems": int(rows.sum()),
            "estimate_mean": float(p[rows].mean()) if rows.any() else None,
            "observed_loss_fraction": float(y[rows].mean()) if rows.any() else None,
        }

    bins = [
        {"estimate_from": lo, "estimate_to": hi, **among((p >= lo) & ((p < hi) if hi < 1.0 else (p <= hi)))}
        for lo, hi in zip(CALIBRATION_BINS[:-1], CALIBRATION_BINS[1:])
    ]
    return {
        "margin": LOSS_MARGIN,
        "problems": len(p),
        "aten_first_picks": aten_picks,
        "observed_loss_fraction": float(y.mean()) if len(y) else None,
        "estimate_mean": float(p.mean()) if len(p) else None,
        "brier": float(np.mean((p - y) ** 2)) if len(p) else None,
        "calibration": contract.loss_calibration.to_dict(),
        "misaligned_calibration": None
        if contract.misaligned_loss_calibration is None
        else contract.misaligned_loss_calibration.to_dict(),
        # each kind's risk is read through its own calibration where the model records one
        "by_kind": {"aligned": among(~odd), "misaligned": among(odd)},
        "bins": bins,
    }


def plot_validation(report: dict[str, Any], out_dir: str | os.PathLike) -> list[Path]:
    """predicted-vs-measured and top-1 slowdown CDF plots (PNG) in ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pr: Predictions = report["_predictions"]
    ok = np.isfinite(pr.measured_us)
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(pr.measured_us[ok], np.exp(pr.predicted_log_us[ok]), s=3, alpha=0.4)
    lo, hi = pr.measured_us[ok].min(), pr.measured_us[ok].max()
    ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="measured time (us)",
        ylabel="predicted time (us)",
        title=f"exp(RMSE) = {report['exp_rmse']:.3f}",
    )
    fig.tight_layout()
    scatter = out / "predicted_vs_measured.png"
    fig.savefig(scatter, dpi=120)
    plt.close(fig)
    slow = np.sort([p["top1_slowdown"] for p in report["per_problem"] if math.isfinite(p["top1_slowdown"])])
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.step(slow, np.arange(1, len(slow) + 1) / max(1, len(slow)), where="post")
    ax.set(
        xlabel="top-1 slowdown (model's pick / best measured)",
        ylabel="fraction of problems",
        title=f"top-1 perf geomean {report['top1_perf_geomean']:.3f}",
    )
    ax.axvline(1.05, color="gray", ls=":", lw=1)
    fig.tight_layout()
    cdf = out / "top1_slowdown_cdf.png"
    fig.savefig(cdf, dpi=120)
    plt.close(fig)
    return [scatter, cdf]


# ----- validate-max-autotune -------------------------------------------------------------------
def load_solution(path: str | os.PathLike) -> list[dict[str, Any]]:
    """A max-autotune solution file: {"name": ..., "configs": [{"M", "N", "K", ["op", "B",
    "dtype"], "template_id" or "block_m", "block_n", "block_k", ["num_stages", "num_warps"]}]}."""
    from .formats import DatasetFormatError, decode_bytes, read_input_bytes

    data = decode_bytes(read_input_bytes(path), "json", False, path)
    if not isinstance(data, dict) or not isinstance(data.get("configs"), list):
        raise DatasetFormatError(path, "configs", "expected a list")
    for i, c in enumerate(data["configs"]):
        if not isinstance(c, dict):
            raise DatasetFormatError(path, f"configs[{i}]", f"expected an object, got {type(c).__name__}")
        for key in ("M", "N", "K"):
            if not isinstance(c.get(key), int) or isinstance(c.get(key), bool):
                raise DatasetFormatError(path, f"configs[{i}].{key}", "expected an int")
    return data["configs"]


def _solution_matches(entry: dict, problem: Problem, config: KernelConfig) -> bool:
    if (entry["M"], entry["N"], entry["K"]) != (problem.M, problem.N, problem.K):
        return False
    for key, value in (("op", problem.op), ("B", problem.B), ("dtype", problem.dtype_a)):
        if key in entry and entry[key] != value:
            return False
    if "template_id" in entry and entry["template_id"] != config.template_id:
        return False
    for key in ("block_m", "block_n", "block_k", "num_stages", "num_warps", "group_m"):
        if key in entry and entry[key] != getattr(config, key):
            return False
    return "template_id" in entry or "block_m" in entry


def validate_max_autotune(
    model: str | os.PathLike,
    dataset: Dataset,
    *,
    solution: str | os.PathLike | None = None,
    hardware_name: str | None = None,
    op_name: str | None = None,
    top_ns: Sequence[int] = TOP_NS,
    extern_preference: float | None = None,
) -> dict[str, Any]:
    """max-autotune's chosen kernel time / the best measured time among the model's top-N, per
    problem (> 1: diode's pick is faster). Without a solution file max-autotune's choice is the
    best measured of ATen + the DEFAULT list, as stock max-autotune chooses. The model's top-N is
    the handler's order (:func:`torch_diode.selection.decide`: its usable rule and extern
    preference, ``extern_preference`` defaulting to ``torch_diode.config.extern_preference``)
    among the choices with a measured time; its top-1 is the handler's first pick."""
    from . import config
    from .features import config_rows, featurize
    from .selection import NoUsableCandidate, Policy, decide

    preference = config.extern_preference if extern_preference is None else extern_preference
    policy = Policy.from_config(extern_preference=preference)
    pr = collect_predictions(model, dataset, hardware_name, op_name)
    entries = load_solution(solution) if solution else None
    ratios: dict[int, list[float]] = {n: [] for n in top_ns}
    saved: dict[int, list[float]] = {n: [] for n in top_ns}
    ops: list[str] = []  # the op of each problem used
    used = 0
    for p, (hardware, problem) in enumerate(pr.problems):
        rows = pr.rows(p)
        measured, predicted, configs = pr.measured_us[rows], pr.predicted_log_us[rows], pr.configs[rows]
        ok = np.isfinite(measured)
        config_table = config_rows(configs)
        ma_time = _max_autotune_time(problem, configs, config_table, measured, entries)
        if ma_time is None:
            continue
        pool = decision_pool(problem, featurize(problem, configs, hardware), config_table, allowed=ok)
        try:
            order = decide(problem, pool, predicted, policy).order
        except NoUsableCandidate:
            continue
        used += 1
        ops.append(problem.op)
        for n in top_ns:
            top = order[:n]
            diode_time = float(measured[top].min())
            ratios[n].append(ma_time / diode_time)
            saved[n].append(ma_time - diode_time)
    if not used:
        raise UserError(
            "no problem of the dataset has a successful timing of max-autotune's choice"
            + (f" (none matches {solution})" if solution else "")
        )
    out: dict[str, Any] = {
        "num_problems": used,
        "max_autotune_source": str(solution) if solution else "ATen + DEFAULT (derived)",
        "extern_preference": preference,
        "top_n": {str(n): _ratio_summary(np.array(ratios[n]), np.array(saved[n])) for n in top_ns},
    }
    op_of = np.array(ops)
    # the same per op (the seeds' model_performance_analysis_by_op.json)
    out["by_op"] = {
        op: {
            "num_problems": int((op_of == op).sum()),
            "top_n": {
                str(n): _ratio_summary(np.array(ratios[n])[op_of == op], np.array(saved[n])[op_of == op])
                for n in top_ns
            },
        }
        for op in sorted(set(ops))
    }
    return out


def _max_autotune_time(
    problem: Problem, configs: Sequence[KernelConfig], config_table: np.ndarray, measured: np.ndarray, entries
) -> float | None:
    """The measured time of max-autotune's choice: the solution file's (``entries``), else the best
    of ATen + the DEFAULT list; None where it has no successful timing."""
    from .inductor.config_space import beyond_default_list

    ok = np.isfinite(measured)
    if entries is not None:
        hits = [i for i, c in enumerate(configs) for e in entries if _solution_matches(e, problem, c) and ok[i]]
        return float(min(measured[i] for i in hits)) if hits else None
    mask = ~beyond_default_list(problem, config_table) & ok
    return float(measured[mask].min()) if mask.any() else None


def _ratio_summary(r: np.ndarray, saved_us: np.ndarray) -> dict[str, float]:
    return {
        "ratio_geomean": _geomean(r),
        "ratio_mean": float(r.mean()),
        "ratio_median": float(np.median(r)),
        "ratio_p10": float(np.quantile(r, 0.1)),
        "ratio_p90": float(np.quantile(r, 0.9)),
        "ratio_min": float(r.min()),
        "ratio_max": float(r.max()),
        "better_pct": float(100 * np.mean(r > 1 + EQUAL_TOLERANCE)),
        "equal_pct": float(100 * np.mean(np.abs(r - 1) <= EQUAL_TOLERANCE)),
        "worse_pct": float(100 * np.mean(r < 1 - EQUAL_TOLERANCE)),
        "time_saved_us_total": float(saved_us.sum()),
    }

"""Can a rule or the sample catch an adapted model's worst first pick? (CPU, replays)

An adapted model (benchmarks.adapt_curve's ``ADAPT``, 100 problems, each ``--seeds`` seed) keeps its
source's ranking, and with it the source's slowest first pick where the source was wrong on its own
GPU too: a cuBLAS first pick with a Triton config far faster, which no unsure rule marks (they judge
a Triton pick's risk against cuBLAS). Two remedies, both ways between the H100 and the H200, judged
as the handler decides on the new GPU's held-out real models:

- ``gain-risk``: an unsure rule for cuBLAS first picks, the ``loss_risk`` estimate with the pick and
  the best predicted Triton config swapped (the probability that the Triton config runs more than
  LOSS_MARGIN times faster), at each ``--thresholds`` value: the unsure fraction it adds and the
  worst first pick it leaves (an unsure decision benchmarks: its pick is the benchmark's, not the model's);
- ``misfit-sample``: the sample drawn with each problem's weight also scaled by how far the source
  model misjudges cuBLAS against the best compiled kernel on the source GPU's own data
  (|predicted - measured| ln ratio, weight 1/2 + 1/2 (1 - exp(-misfit / RACE_SCALE))): problems
  where the source is wrong measured first on the new GPU.

    python -m benchmarks.studies.adapt_tail --source-model h100=h100_alone.diode h200=h200_alone.diode \\
        --out benchmarks/results/adapt_tail_cpu.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import adapt_curve
from benchmarks.selection_replay import model_contract, replays
from torch_diode.collection.design import RACE_SCALE
from torch_diode.dataset_io import merge_all
from torch_diode.features import is_aten
from torch_diode.predict import load_model, predict_log_time_us
from torch_diode.selection.decide import NoUsableCandidate, decide, loss_probability
from torch_diode.selection.policy import Policy
from torch_diode.types import problem_key

KEYS = ("first_pick_geomean", "first_pick_worst", "unsure_fraction")


def gain_risk(model: str, gpu: str, thresholds: list[float]) -> dict:
    """The handler's decisions of ``model`` on the GPU's held-out real models, with the gain rule
    at each threshold: unsure fraction and the worst first pick left to the model."""
    policy, contract = Policy.from_config(), model_contract(model)
    picks = []  # (first pick / best measured, already unsure, gain probability or None)
    for problem, pool, members, measured, tf32 in replays(model, [f"data/{gpu}/realmodels"], with_tf32=True):
        try:
            decision = decide(problem, pool, members, policy, contract, tf32)
        except NoUsableCandidate:
            continue
        extern = np.asarray(pool.extern, dtype=bool)
        gain = None
        if extern[decision.first]:
            triton = [int(i) for i in decision.order if not extern[i]]
            calibration = contract.calibration_for(bool(problem.misaligned_operands))
            if triton:
                gain = loss_probability(members, decision.first, triton[0], calibration)
        picks.append((float(measured[decision.first] / measured.min()), bool(decision.unsure), gain))
    out = {"problems": len(picks), "calibrated": any(g is not None for _, _, g in picks)}
    for threshold in thresholds:
        unsure = [u or (g is not None and g > threshold) for _, u, g in picks]
        out[str(threshold)] = {
            "unsure_fraction": sum(unsure) / len(picks),
            "worst_first_pick_left": max(p for (p, _, _), u in zip(picks, unsure) if not u),
        }
    return out


def misfits(model: str, data) -> dict[str, float]:
    """Per problem of ``data`` (problem_key): |predicted - measured| ln(best ATen / best compiled)."""
    engine, out = load_model(model), {}
    for hardware, problem, timings in data.problems():
        ok = [t for t in timings if not t.failed]
        aten = np.array([is_aten(t.config) for t in ok])
        if not aten.any() or aten.all():
            continue
        predicted = predict_log_time_us(engine, problem, [t.config for t in ok], hardware)
        measured = np.log([t.time_us for t in ok])
        race = predicted[aten].min() - predicted[~aten].min() - (measured[aten].min() - measured[~aten].min())
        out[problem_key(problem)] = abs(float(race))
    return out


def misfit_pool(pool: list, misfit: dict[str, float]) -> list:
    """``pool`` with each candidate's race term scaled by its misfit weight: design's gain factor
    1/2 + 1/2 race becomes (1/2 + 1/2 race) x (1/2 + 1/2 (1 - exp(-misfit / RACE_SCALE)))."""
    out = []
    for c in pool:
        weight = 0.5 + 0.5 * (1.0 - math.exp(-misfit.get(problem_key(c.problem), 0.0) / RACE_SCALE))
        out.append(dataclasses.replace(c, race=((0.5 + 0.5 * c.race) * weight - 0.5) / 0.5))
    return out


def direction(source: str, new: str, seeds: list[int], thresholds: list[float], model: str | None) -> list[dict]:
    model = adapt_curve.source_model(source, new, model)
    source_files = adapt_curve.gpu_files(source)
    source_data, new_data = merge_all(source_files), merge_all(adapt_curve.gpu_files(new))
    pool = adapt_curve.sample_pool(source_files, new_data)
    weighted = misfit_pool(pool, misfits(model, source_data))
    rows = []
    with tempfile.TemporaryDirectory(prefix="adapt_tail_") as tmp:
        (Path(tmp) / "m").mkdir()
        for seed in seeds:
            row = {"source": source, "new": new, "seed": seed}
            path, _ = adapt_curve.adapted(model, source_data, new_data, pool, 100, seed, Path(tmp))
            row["sample"] = adapt_curve.judged(str(path), new, keys=KEYS)
            row["gain_risk"] = gain_risk(str(path), new, thresholds)
            path, _ = adapt_curve.adapted(model, source_data, new_data, weighted, 100, seed, Path(tmp) / "m")
            row["misfit_sample"] = adapt_curve.judged(str(path), new, keys=KEYS)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.1, 0.2, 0.3])
    adapt_curve.add_study_options(parser)
    args = parser.parse_args()

    def run(source: str, new: str, model: str | None) -> list[dict]:
        return direction(source, new, args.seeds, args.thresholds, model)

    rows = adapt_curve.both_ways(args, run)
    adapt_curve.write_study(args.out, rows, adapt=adapt_curve.ADAPT, problems=100)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

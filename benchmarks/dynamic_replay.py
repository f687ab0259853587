"""The handler's dynamic decision (torch_diode.selection.decide_range) replayed on measured data,
CPU only: each problem of a dataset taken as a graph whose rows (M) are dynamic, with the problem's
M as the hint, judged over ``torch_diode.config.dynamic_sizes``.

For each problem it records the dynamic pick and the static pick at the hint, and how the pick is
predicted to fare against the best ATen choice at every size. Where the data measured the same
layer at several row counts (a model's prefill and decode), the pick's measured time at each of
them is set against the measured cuBLAS time (``measured``: only configs timed at that size).

    python -m benchmarks.dynamic_replay --model NVIDIA-H100-matmul --data data/h100/realmodels \\
        --out benchmarks/results/dynamic_replay_h100_cpu.json
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Iterator

import numpy as np

from benchmarks.common import cpu_report_header, geomean, write_json
from torch_diode import config
from torch_diode.dataset_io import load_datasets
from torch_diode.features import config_rows, featurize, is_extern
from torch_diode.inductor.config_space import decision_pool
from torch_diode.predict import load_model
from torch_diode.selection import DYNAMIC_MARGIN, Policy, SizeRange, decide, decide_range
from torch_diode.types import Problem


def at_rows(problem: Problem, m: int) -> Problem:
    """``problem`` with ``m`` rows, its operands dense in the same layout."""
    if m == problem.M:
        return problem
    return dataclasses.replace(problem, M=m, strides_a=None, strides_b=None)


def replays(model: str, data: list[str], contract, policy: Policy) -> Iterator[dict]:
    """One record per problem of ``data``: the dynamic and static decisions and their predictions."""
    engine = load_model(model)
    sizes = SizeRange(hint=0, lower=2)
    for hardware, problem, timings in load_datasets(data).problems():
        ok = [t for t in timings if not t.failed]
        configs = [t.config for t in ok]
        rows = config_rows(configs)
        extern = is_extern(rows)
        if not ok or not extern.any():
            continue
        ms = dataclasses.replace(sizes, hint=problem.M).sizes(config.dynamic_sizes)
        problems = [at_rows(problem, m) for m in ms]
        features = [featurize(p, configs, hardware) for p in problems]
        members = [np.asarray(engine.predict_members(f), dtype=np.float64) for f in features]
        pool = decision_pool(problem, features[0], rows)
        dynamic = decide_range(problems, pool, members, features, policy, contract)
        static = decide(problem, pool, members[0], policy, contract)
        predicted = [m.mean(axis=0) for m in members]
        gaps = [float(p[dynamic.first] - p[extern].min()) for p in predicted]
        static_gaps = [float(p[static.first] - p[extern].min()) for p in predicted]
        yield {
            "problem": problem.short(),
            "key": (
                problem.op,
                problem.B,
                problem.N,
                problem.K,
                problem.dtype_a,
                problem.transpose_a,
                problem.transpose_b,
            ),
            "sizes": list(ms),
            "dynamic_pick": configs[dynamic.first].short(),
            "dynamic_pick_is_aten": bool(extern[dynamic.first]),
            "static_pick": configs[static.first].short(),
            "static_pick_is_aten": bool(extern[static.first]),
            "unsure": dynamic.unsure,
            "predicted_over_aten_worst": math.exp(max(gaps)),
            "predicted_over_aten_geomean": math.exp(float(np.mean(gaps))),
            "static_predicted_over_aten_worst": math.exp(max(static_gaps)),
            "measured": {problem.M: _measured(ok, extern)},
            "pick_config": configs[dynamic.first],
        }


def _measured(ok: list, extern: np.ndarray) -> dict:
    return {"times": {t.config: t.time_us for t in ok}, "aten_us": min(t.time_us for t, e in zip(ok, extern) if e)}


def measured_ratios(records: list[dict]) -> list[float]:
    """A dynamic Triton pick's measured time over the best ATen choice's at each row count the data
    measured the same layer at (same op, batch, N, K, dtype, layout), where the pick's config was
    timed there."""
    by_key: dict = {}
    for r in records:
        by_key.setdefault(r["key"], {}).update(r["measured"])
    out = []
    for r in records:
        if r["dynamic_pick_is_aten"]:
            continue
        for measured in by_key[r["key"]].values():
            t = measured["times"].get(r["pick_config"])
            if t is not None:
                out.append(t / measured["aten_us"])
    return out


def summarize(records: list[dict]) -> dict:
    triton = [r for r in records if not r["dynamic_pick_is_aten"]]
    worst = [r["predicted_over_aten_worst"] for r in triton]
    ratios = measured_ratios(records)
    return {
        "problems": len(records),
        "dynamic_triton_picks": sum(not r["dynamic_pick_is_aten"] for r in records),
        "static_triton_picks": sum(not r["static_pick_is_aten"] for r in records),
        "static_triton_picks_predicted_slower_than_aten_at_some_size": sum(
            not r["static_pick_is_aten"] and r["static_predicted_over_aten_worst"] > DYNAMIC_MARGIN * (1 + 1e-9)
            for r in records
        ),
        "dynamic_triton_pick_predicted_over_aten_worst": max(worst, default=None),
        "dynamic_triton_pick_predicted_over_aten_geomean": geomean([r["predicted_over_aten_geomean"] for r in triton]),
        "measured_triton_pick_over_aten_worst": max(ratios, default=None),
        "measured_triton_pick_over_aten_geomean": geomean(ratios),
        "measured_pairs": len(ratios),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="model name or file")
    parser.add_argument("--data", nargs="+", required=True, help="dataset files or folders")
    parser.add_argument("--out", required=True, help="JSON report")
    args = parser.parse_args(argv)
    from benchmarks.selection_replay import model_contract

    records = list(replays(args.model, args.data, model_contract(args.model), Policy.from_config()))
    summary = summarize(records)
    for r in records:
        r.pop("measured"), r.pop("pick_config"), r.pop("key")
    report = {**cpu_report_header("CPU (predictions against data measured on the GPU named in the dataset)")}
    report.update(model=args.model, data=args.data, dynamic_sizes=list(config.dynamic_sizes), summary=summary)
    report["rows"] = records
    write_json(args.out, report)
    for key, value in summary.items():
        print(f"{key}: {value:.4f}" if isinstance(value, float) else f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""(CPU) How good are the handler's picks on measured data? The handler's decision
(:func:`torch_diode.selection.decide`, the same code) replayed on datasets, judged by their
measured times: the replays behind the results table. The studies of the handler's rules
(benchmarks/studies/selection_rules.py, benchmarks/studies/slow_picks.py) replay with
:func:`replays` too.

``heldout``: for every problem of each dataset and each model, at the current settings:

  first      measured time of the first pick / best measured time
  widened    best measured time among what an unsure decision hands Inductor's benchmark (the
             unsure_top_k best predicted, the best ATen choice and the best of Inductor's DEFAULT
             Triton configs among them) / best measured time
  kept       how many candidates that is

Geometric means and worst cases per dataset are printed last and written to --out.

``realmodels``: the handler's decision with the model's own confidence contract on a dataset
collected from the held-out shapeset of real models' GEMMs (`diode collect-shapeset --shapeset
realmodels_heldout`): the first pick's measured time over the best measured (geomean, worst), what
the handler ends with (the first pick where it is sure, the best of what it hands Inductor's
benchmark where it is not), and the fraction of problems it is unsure of; each problem named by
the models and layers it comes from.

``ranking``: per model and held-out set, top-1 and top-5 normalised performance among the Triton
candidates alone, the handler-ordered first pick and the MSE of ln time.

``bias``: predicted over measured time (geomean over every timed candidate), ATen choices and
Triton configs apart, per measured-time regime (under 10 us, 10-30 us, 30 us and over), per model
and held-out set: whether the model takes short Triton kernels for slower than cuBLAS against the
measurements (training data timed without the collector's lead does, on the H200).

    python -m benchmarks.selection_replay heldout --out benchmarks/results/heldout_selection_cpu.json
    python -m benchmarks.selection_replay heldout --model NVIDIA-H100-matmul other.diode --data DIR ... --out sel.json
    python -m benchmarks.selection_replay realmodels --model NVIDIA-H100-matmul --data data/h100/realmodels \
        --out benchmarks/results/heldout_realmodels_h100.json
    python -m benchmarks.selection_replay ranking --model NVIDIA-H100-matmul --data data/h100/realmodels \
        --out benchmarks/results/ranking_realmodels_h100.json
    python -m benchmarks.selection_replay bias --out benchmarks/results/prediction_bias_cpu.json
"""

from __future__ import annotations

import argparse
import bisect
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.common import cpu_report_header, write_json
from torch_diode.dataset_io import load_datasets
from torch_diode.features import config_rows, featurize
from torch_diode.inductor.config_space import decision_pool
from torch_diode.predict import load_model
from torch_diode.selection import Confidence, NoUsableCandidate, Policy, Pool, decide
from torch_diode.types import Problem

ROOT = Path(__file__).resolve().parents[1]
# every file of the H100 validation set, each judged on its own, and the unaligned sets odd and odd2
HELDOUT_DATA = sorted(str(p) for p in (ROOT / "data" / "h100" / "validation").glob("*.msgpack.gz")) + [
    str(ROOT / "data" / "h100" / "odd"),
    str(ROOT / "data" / "h100" / "odd2"),
]
HELDOUT_SETS = [str(ROOT / "data" / "h100" / name) for name in ("validation", "odd", "odd2")]
REALMODELS_AND_HELDOUT = [str(ROOT / "data" / "h100" / "realmodels"), *HELDOUT_SETS]
REALMODELS_AND_HELDOUT_HELP = (
    "dataset files or folders, each judged on its own (default: data/h100/realmodels and the H100 held-out sets)"
)


def replays(model: str, data: list[str], with_tf32: bool = False) -> Iterator[tuple]:
    """(problem, its candidates with a measured time, every ensemble member's predicted ln time
    ([K, N], as the handler passes them to decide: their mean ranks, their spread is the loss_risk
    rule's), measured time) of each problem; with ``with_tf32`` also whether it was measured with
    TF32 allowed."""
    engine = load_model(model)
    for hardware, problem, timings in load_datasets(data).problems():
        ok = [t for t in timings if not t.failed]
        if not ok:
            continue  # nothing measured to judge a pick by
        configs = [t.config for t in ok]
        rows = config_rows(configs)
        pool = decision_pool(problem, featurize(problem, configs, hardware), rows)
        replay = (
            problem,
            pool,
            np.asarray(engine.predict_members(pool.features), dtype=np.float64),
            np.array([t.time_us for t in ok]),
        )
        yield (*replay, any(c.allow_tf32 and c.is_tiled for c in configs)) if with_tf32 else replay


def model_contract(model: str) -> Confidence:
    """The confidence contract the model file records (what the handler reads)."""
    from torch_diode.model_file import model_metadata
    from torch_diode.registry import resolve_model

    return Confidence.from_dict(model_metadata(resolve_model(model)).get("training_data"))


def judge(model: str, data: str, policy: Policy) -> dict:
    first, best_widened, kept = [], [], []
    for problem, pool, predicted, measured in replays(model, [data]):
        try:
            decision = decide(problem, pool, predicted, policy, Confidence.never_trusted())
        except NoUsableCandidate:
            continue
        best = measured[decision.order].min()
        first.append(measured[decision.first] / best)
        best_widened.append(measured[list(decision.widened)].min() / best)
        kept.append(len(decision.widened))
    if not first:
        return {"model": model, "data": data, "problems": 0}

    def summary(x: list[float]) -> dict:
        return {
            "geomean": float(math.exp(np.mean(np.log(x)))),
            "worst": float(max(x)),
            "over_1.3": int(sum(v > 1.3 for v in x)),
        }

    return {
        "model": model,
        "data": data,
        "problems": len(first),
        "first": summary(first),
        "widened": summary(best_widened),
        "kept_mean": float(np.mean(kept)),
    }


def heldout(args: argparse.Namespace) -> int:
    policy = Policy.from_config()
    settings = {
        "unsure_top_k": policy.unsure_top_k,
        "extern_preference": policy.extern_preference,
    }
    # a file with no problem (a chunk a collection had not reached) has nothing to judge
    rows = [r for r in (judge(m, d, policy) for m in args.model for d in args.data) if r["problems"]]
    _write(args, {"settings": settings, "rows": rows})
    print(
        f"{'model':28s} {'data':52s} {'n':>4s} {'first gm':>9s} {'worst':>6s} "
        f"{'wide gm':>8s} {'worst':>6s} {'kept':>5s}"
    )
    for r in rows:
        print(
            f"{r['model'][-28:]:28s} {r['data'][-52:]:52s} {r['problems']:4d} {r['first']['geomean']:9.3f} "
            f"{r['first']['worst']:6.2f} {r['widened']['geomean']:8.3f} {r['widened']['worst']:6.2f} "
            f"{r['kept_mean']:5.1f}"
        )
    return 0


def judge_realmodels(model: str, data: list[str], shapeset: str, policy: Policy | None = None) -> tuple[dict, list]:
    """(summary, rows) of the handler's decisions with ``model``'s own confidence contract on the
    held-out real models' data ``data`` (``realmodels`` below)."""
    from torch_diode.collection.shapes import load_shapeset, problem_identity

    policy = policy or Policy.from_config()
    contract = model_contract(model)
    names: dict[Problem, list[str]] = {}
    for entry in load_shapeset(shapeset):
        names.setdefault(problem_identity(entry.problem), []).append(f"{entry.model}: {entry.layer}")
    rows = []
    for problem, pool, predicted, measured, tf32 in replays(model, data, with_tf32=True):
        try:
            decision = decide(problem, pool, predicted, policy, contract, tf32)
        except NoUsableCandidate:
            continue
        best = float(measured.min())
        alone = triton_alone(problem, pool, predicted, measured, policy)
        rows.append(
            {
                "problem": problem.short(),
                "layers": names.get(problem_identity(problem), []),
                "first_pick": float(measured[decision.first]) / best,
                "outcome": float(measured[list(decision.chosen)].min()) / best,
                "unsure": decision.unsure,
                "chosen": len(decision.chosen),
                "triton_top1": None if alone is None else alone[0],
            }
        )
    if not rows:
        raise SystemExit(f"no problem with a usable candidate in {' '.join(data)}")
    first = np.array([r["first_pick"] for r in rows])
    outcome = np.array([r["outcome"] for r in rows])
    top1 = [r["triton_top1"] for r in rows if r["triton_top1"] is not None]
    summary = {
        "num_problems": len(rows),
        "first_pick_geomean": float(np.exp(np.log(first).mean())),
        "first_pick_worst": float(first.max()),
        "unsure_fraction": sum(bool(r["unsure"]) for r in rows) / len(rows),
        "outcome_geomean": float(np.exp(np.log(outcome).mean())),
        "outcome_worst": float(outcome.max()),
        "triton_top1_perf_geomean": float(np.exp(np.log(top1).mean())) if top1 else None,
        "unmatched_problems": sum(not r["layers"] for r in rows),
    }
    return summary, rows


def realmodels(args: argparse.Namespace) -> int:
    summary, rows = judge_realmodels(args.model, args.data, args.shapeset)
    report = cpu_report_header("CPU (predictions against data measured on the GPU named in the dataset)") | {
        "model": args.model,
        "data": args.data,
        "shapeset": args.shapeset,
        **summary,
        "rows": rows,
    }
    write_json(args.out, report)
    for r in sorted(rows, key=lambda r: -r["first_pick"])[:10]:
        print(
            f"{r['first_pick']:6.3f} {r['outcome']:6.3f} {str(r['unsure']):>14s} {r['problem']:40s} "
            f"{'; '.join(r['layers'])[:60]}"
        )
    print(" ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in summary.items()))
    return 0


def _summary(x: list[float]) -> dict:
    return {"geomean": float(math.exp(np.mean(np.log(x)))), "worst": float(max(x))} if x else {}


def triton_alone(
    problem: Problem, pool: Pool, members: np.ndarray, measured: np.ndarray, policy: Policy
) -> tuple[float, float] | None:
    """(top-1, top-5) normalised performance of the model among the usable Triton candidates
    alone: best measured Triton time over the measured time of the one it predicts best, or of the
    best of its five best predicted; None where the problem has no usable Triton candidate."""
    try:
        alone = decide(problem, replace(pool, allowed=~pool.extern), members, replace(policy, extern_preference=1.0))
    except NoUsableCandidate:
        return None
    best = measured[alone.order].min()
    return float(best / measured[alone.first]), float(best / measured[alone.order[:5]].min())


def ranking(args: argparse.Namespace) -> int:
    """Per model and held-out set: top-1 and top-5 normalised performance among the Triton
    candidates alone (best measured Triton time / the measured time of the model's argmin among
    them, or the best of its five best predicted), the handler-ordered first pick (measured / best
    measured, no unsure rule) and the MSE of ln time."""
    policy = Policy.from_config()
    rows = []
    for model in args.model:
        for data in args.data:
            triton, triton5, first, errors = [], [], [], []
            for problem, pool, members, measured in replays(model, [data]):
                predicted = members.mean(axis=0)
                alone = triton_alone(problem, pool, members, measured, policy)
                if alone is not None:
                    triton.append(alone[0])
                    triton5.append(alone[1])
                try:
                    decision = decide(problem, pool, members, policy)
                except NoUsableCandidate:
                    continue
                first.append(measured[decision.first] / measured[decision.order].min())
                errors.extend(predicted - np.log(measured))
            rows.append(
                {
                    "model": model,
                    "data": data,
                    "problems": len(first),
                    "triton_top1_perf_geomean": _summary(triton).get("geomean"),
                    "triton_top1_perf_worst": float(min(triton)) if triton else None,
                    "triton_top5_perf_geomean": _summary(triton5).get("geomean"),
                    "first_pick": _summary(first),
                    "mse_ln_time": float(np.mean(np.square(errors))),
                }
            )
    _write(args, {"rows": rows})
    print(
        f"{'model':28s} {'data':24s} {'n':>4s} {'triton top1':>11s} {'worst':>6s} {'top5':>7s} "
        f"{'first gm':>9s} {'worst':>6s} {'mse':>7s}"
    )
    for r in rows:
        print(
            f"{r['model'][-28:]:28s} {r['data'][-24:]:24s} {r['problems']:4d} {r['triton_top1_perf_geomean']:11.4f} "
            f"{r['triton_top1_perf_worst']:6.3f} {r['triton_top5_perf_geomean']:7.4f} "
            f"{r['first_pick']['geomean']:9.4f} {r['first_pick']['worst']:6.2f} {r['mse_ln_time']:7.4f}"
        )
    return 0


# measured-time regimes of the bias report, in us: short kernels are where a timing's host
# overhead weighs most (the collector's lead, docs/data.md "How kernels are timed")
BIAS_REGIMES_US = ((0.0, 10.0), (10.0, 30.0), (30.0, math.inf))


def _regime(time_us: float) -> int:
    """The index of the BIAS_REGIMES_US regime holding ``time_us`` (each holds its lower bound)."""
    return bisect.bisect_right([lo for lo, _ in BIAS_REGIMES_US[1:]], time_us)


def bias(args: argparse.Namespace) -> int:
    """Per model and the held-out set paired with it: how the model's predicted times (the members'
    mean) stand to the measured ones, ATen choices and Triton configs apart, by the measured
    time's regime: the geomean of predicted / measured over every timed candidate. Grouping by
    measured time leans each group toward over-prediction in the shortest regime (regression to
    the mean) for both kinds alike; a ratio of the Triton figure to the ATen one over 1 there
    means the model takes short Triton kernels for slower than cuBLAS against the measurements,
    and turns first picks to cuBLAS."""
    regimes = [[lo, None if math.isinf(hi) else hi] for lo, hi in BIAS_REGIMES_US]
    rows = []
    for model, data in _pairs(args):
        ratios: dict[tuple[str, int], list[float]] = {}
        for _problem, pool, members, measured in replays(model, [data]):
            predicted = np.exp(members.mean(axis=0))
            for kind, mask in (("aten", pool.extern), ("triton", ~pool.extern)):
                for t, r in zip(measured[mask], predicted[mask] / measured[mask]):
                    ratios.setdefault((kind, _regime(t)), []).append(float(r))
        for regime, measured_us in enumerate(regimes):
            row = {"model": model, "data": data, "measured_us": measured_us}
            for kind in ("aten", "triton"):
                r = ratios.get((kind, regime), [])
                row[f"{kind}_candidates"] = len(r)
                row[f"{kind}_predicted_over_measured"] = _summary(r).get("geomean")
            a, t = row["aten_predicted_over_measured"], row["triton_predicted_over_measured"]
            row["triton_over_aten"] = t / a if a and t else None
            rows.append(row)
    _write(args, {"regimes_us": regimes, "rows": rows})
    print(
        f"{'model':28s} {'data':24s} {'measured us':>11s} {'ATen n':>7s} {'pred/meas':>9s} "
        f"{'Triton n':>8s} {'pred/meas':>9s} {'T/A':>6s}"
    )
    for r in rows:
        lo, hi = r["measured_us"]
        print(
            f"{r['model'][-28:]:28s} {r['data'][-24:]:24s} {f'{lo:g}-{hi:g}' if hi else f'>= {lo:g}':>11s} "
            f"{r['aten_candidates']:7d} {_fixed(r['aten_predicted_over_measured'], 9)} {r['triton_candidates']:8d} "
            f"{_fixed(r['triton_predicted_over_measured'], 9)} {_fixed(r['triton_over_aten'], 6)}"
        )
    return 0


def _fixed(value: float | None, width: int) -> str:
    """``value`` with three decimals in ``width`` columns, or a dash where there is none."""
    return f"{value:{width}.3f}" if value is not None else f"{'-':>{width}s}"


def _write(args: argparse.Namespace, body: dict) -> None:
    import platform

    machine = f"CPU ({platform.machine()}): predictions against data measured on the GPU named in each dataset"
    report = cpu_report_header(machine) | body
    write_json(args.out, report)


def _paired_model_and_data(parser: argparse.ArgumentParser) -> None:
    """--model and --data, one held-out set per model in the same order (default: each shipped
    model with its GPU's real models' GEMMs); :func:`_pairs` reads them."""
    parser.add_argument("--model", nargs="+", default=["NVIDIA-H100-matmul", "NVIDIA-H200-matmul"])
    parser.add_argument(
        "--data",
        nargs="+",
        default=[str(ROOT / "data" / gpu / "realmodels") for gpu in ("h100", "h200")],
        help="one held-out set per --model, in the same order (default: the H100's and the H200's real models)",
    )


def _pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(model, held-out set) of :func:`_paired_model_and_data`'s options."""
    if len(args.model) != len(args.data):
        raise SystemExit("--model and --data pair up: give as many of each")
    return list(zip(args.model, args.data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("heldout", help="first pick and unsure widening per dataset")
    p.add_argument("--model", nargs="+", default=["NVIDIA-H100-matmul"], help="model files or shipped model names")
    p.add_argument(
        "--data",
        nargs="+",
        default=HELDOUT_DATA,
        help="dataset files or folders, each judged on its own "
        "(default: the H100 validation files, data/h100/odd, data/h100/odd2)",
    )
    p.add_argument("--out", required=True)
    p.set_defaults(run=heldout)
    p = sub.add_parser("realmodels", help="the handler's decisions on the held-out real models' GEMMs")
    p.add_argument("--model", default="NVIDIA-H100-matmul", help="model file or shipped model name")
    p.add_argument("--data", nargs="+", required=True, help="dataset files or folders collected from the shapeset")
    p.add_argument(
        "--shapeset", default="realmodels_heldout", help="the shapeset naming each problem's models and layers"
    )
    p.add_argument("--out", required=True)
    p.set_defaults(run=realmodels)
    p = sub.add_parser("ranking", help="held-out ranking metrics of several models (Triton-only top-1, first pick)")
    p.add_argument("--model", nargs="+", default=["NVIDIA-H100-matmul"])
    p.add_argument("--data", nargs="+", default=HELDOUT_SETS)
    p.add_argument("--out", required=True)
    p.set_defaults(run=ranking)
    p = sub.add_parser("bias", help="predicted over measured time, ATen and Triton apart, by measured-time regime")
    _paired_model_and_data(p)
    p.add_argument("--out", required=True)
    p.set_defaults(run=bias)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())

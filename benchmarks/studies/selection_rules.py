"""(CPU) How do the handler's rules fare when changed? Each subcommand replays the handler's
decision (benchmarks/selection_replay.py's :func:`replays`) on held-out sets with one rule varied.

``extern-preference``: the handler's first pick per dataset for several values of
``extern_preference``, applied to every problem or (as the handler does) to those whose rows are
aligned only: its slowdown against the best measured (geomean and worst; aligned and misaligned
problems apart), and how often the pick is ATen/cuBLAS (no kernel to compile).

``spread-penalty``: the handler's decision (the model's own contract) where each candidate ranks by
its predicted ln time plus ``--penalties`` times the members' spread (a cautious ranking: of two
candidates predicted alike, the one the members agree on first): first pick and outcome (geomean,
worst, how many over 1.10x the best measured) and the unsure fraction per penalty and dataset.

``unsure-rules``: each unsure rule on and off, on the held-out sets (:func:`unsure_rules`).

``unsure-pool``: the handler's outcome where unsure decisions fill their places from every candidate
or from the ATen choices and Inductor's DEFAULT list alone, per model and dataset.

    python -m benchmarks.studies.selection_rules extern-preference --out benchmarks/results/extern_preference_cpu.json
    python -m benchmarks.studies.selection_rules extern-preference --model NVIDIA-H200-matmul --data DIR --out pref.json
    python -m benchmarks.studies.selection_rules unsure-rules --out benchmarks/results/unsure_rules_cpu.json
    python -m benchmarks.studies.selection_rules unsure-pool --out benchmarks/results/unsure_pool_cpu.json
    python -m benchmarks.studies.selection_rules spread-penalty --model NVIDIA-H200-matmul --data DIR ... --out pen.json
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.selection_replay import (
    HELDOUT_DATA,
    HELDOUT_SETS,
    REALMODELS_AND_HELDOUT,
    REALMODELS_AND_HELDOUT_HELP,
    ROOT,
    _contract,
    _paired_model_and_data,
    _pairs,
    _summary,
    _write,
    replays,
)
from torch_diode.selection import NoUsableCandidate, Policy, decide


def _sweep(args: argparse.Namespace, values: list[float]) -> Iterator[tuple[str, float, list[tuple]]]:
    """(dataset, value, the dataset's replays with TF32) for each of ``args.data`` and each of
    ``values``: one setting swept over the held-out sets, each replayed once."""
    for data in args.data:
        problems = list(replays(args.model, [data], with_tf32=True))
        for value in values:
            yield data, value, problems


def extern_preference(args: argparse.Namespace) -> int:
    base = Policy.from_config()
    contract = _contract(args.model)
    rows = []
    for data, preference, problems in _sweep(args, args.preferences):
        for misaligned_too in (True, False):
            policy = replace(base, extern_preference=preference, misaligned_extern_preference=misaligned_too)
            slowdowns: dict[str, list[float]] = {"aligned": [], "misaligned": []}
            extern_picks = 0
            for problem, pool, predicted, measured, tf32 in problems:
                try:
                    pick = decide(problem, pool, predicted, policy, contract, tf32).first
                except NoUsableCandidate:
                    continue
                extern_picks += bool(pool.extern[pick])
                kind = "misaligned" if problem.misaligned_operands else "aligned"
                slowdowns[kind].append(float(measured[pick] / measured.min()))
            every = slowdowns["aligned"] + slowdowns["misaligned"]
            rows.append(
                {
                    "data": data,
                    "extern_preference": preference,
                    "misaligned_too": misaligned_too,
                    "problems": len(every),
                    "first_pick": _summary(every),
                    **{f"first_pick_{k}": _summary(v) for k, v in slowdowns.items() if v},
                    "extern_picks": extern_picks,
                }
            )
    _write(args, {"model": args.model, "rows": rows})
    print(
        f"{'data':40s} {'pref':>5s} {'unaligned too':>13s} {'n':>4s} {'first gm':>8s} {'worst':>6s} "
        f"{'unaligned gm':>12s} {'ATen picks':>10s}"
    )
    for r in rows:
        if not r["problems"]:
            continue
        mis = r.get("first_pick_misaligned", {}).get("geomean", float("nan"))
        print(
            f"{r['data'][-40:]:40s} {r['extern_preference']:5.2f} {str(r['misaligned_too']):>13s} {r['problems']:4d} "
            f"{r['first_pick']['geomean']:8.4f} {r['first_pick']['worst']:6.2f} {mis:12.4f} {r['extern_picks']:10d}"
        )
    return 0


def spread_penalty(args: argparse.Namespace) -> int:
    policy = Policy.from_config()
    contract = _contract(args.model)
    rows = []
    for data, penalty, problems in _sweep(args, args.penalties):
        first, outcome, unsure = [], [], 0
        for problem, pool, predicted, measured, tf32 in problems:
            # the same shift for every member: their mean moves by penalty x spread, their spread stays
            shifted = predicted + penalty * predicted.std(axis=0)
            try:
                decision = decide(problem, pool, shifted, policy, contract, tf32)
            except NoUsableCandidate:
                continue
            best = measured.min()
            first.append(float(measured[decision.first] / best))
            outcome.append(float(measured[list(decision.chosen)].min() / best))
            unsure += bool(decision.unsure)
        rows.append(
            {
                "data": data,
                "penalty": penalty,
                "problems": len(first),
                "first_pick": _summary(first) | {"over_1.10": sum(x > 1.1 for x in first)},
                "outcome": _summary(outcome) | {"over_1.10": sum(x > 1.1 for x in outcome)},
                "unsure_fraction": unsure / max(len(first), 1),
            }
        )
    _write(args, {"model": args.model, "rows": rows})
    print(
        f"{'data':32s} {'penalty':>7s} {'n':>4s} {'first gm':>8s} {'worst':>6s} {'>1.10':>5s} "
        f"{'outcome gm':>10s} {'worst':>6s} {'unsure':>6s}"
    )
    for r in rows:
        f, o = r["first_pick"], r["outcome"]
        if r["problems"]:
            print(
                f"{r['data'][-32:]:32s} {r['penalty']:7.2f} {r['problems']:4d} {f['geomean']:8.4f} {f['worst']:6.2f} "
                f"{f['over_1.10']:5d} {o['geomean']:10.4f} {o['worst']:6.2f} {r['unsure_fraction']:6.3f}"
            )
    return 0


def unsure_rules(args: argparse.Namespace) -> int:
    """The unsure rules measured one by one on the held-out sets with the model's own contract:
    for each variant (every rule; every rule but one; the hand-made rules alone; the loss_risk rule
    alone at several thresholds; where the model records a loss calibration of its misaligned
    problems, every rule but ``misaligned`` with their risk read through the one of all problems) the
    best measured time among what the handler hands Inductor (its first pick alone where it is
    sure) / best measured, and the unsure fraction. A misaligned problem's loss_risk is read through
    the misaligned problems' own calibration where the model records one, in every variant but the
    last: files of models without it are comparable with those of models before it."""
    from torch_diode.selection import UNSURE_RULES

    contract = _contract(args.model)
    base = Policy.from_config()
    hand = tuple(r for r in UNSURE_RULES if r != "loss_risk")
    variants = {"all": replace(base, unsure_rules=UNSURE_RULES), "none": replace(base, unsure_rules=())}
    variants.update(
        {f"all but {r}": replace(base, unsure_rules=tuple(x for x in UNSURE_RULES if x != r)) for r in UNSURE_RULES}
    )
    variants["hand-made rules alone"] = replace(base, unsure_rules=hand)
    for threshold in args.thresholds:
        variants[f"loss_risk alone > {threshold:g}"] = replace(
            base, unsure_rules=("loss_risk",), unsure_loss_probability=threshold
        )
        variants[f"loss_risk > {threshold:g} and misaligned"] = replace(
            base, unsure_rules=("loss_risk", "misaligned"), unsure_loss_probability=threshold
        )
    contracts = {name: contract for name in variants}
    if contract.misaligned_loss_calibration is not None:
        # the misaligned problems judged each by its loss risk, read through the calibration of all
        # problems ("all but misaligned" reads it through theirs)
        name = "all but misaligned, one calibration"
        variants[name] = variants["all but misaligned"]
        contracts[name] = replace(contract, misaligned_loss_calibration=None)
    rows = []
    for data in args.data:
        problems = list(replays(args.model, [data]))
        for name, policy in variants.items():
            got, unsure, kept = [], 0, []
            for problem, pool, members, measured in problems:
                try:
                    decision = decide(problem, pool, members, policy, contracts[name])
                except NoUsableCandidate:
                    continue
                got.append(measured[list(decision.chosen)].min() / measured[decision.order].min())
                unsure += decision.unsure is not None
                kept.append(len(decision.chosen))
            rows.append(
                {
                    "data": data,
                    "variant": name,
                    "rules": list(policy.unsure_rules),
                    "unsure_loss_probability": policy.unsure_loss_probability,
                    "problems": len(got),
                    "result": _summary(got),
                    "over_1.10": int(sum(v > 1.10 for v in got)),
                    "unsure_fraction": unsure / max(1, len(got)),
                    "kept_mean": float(np.mean(kept)),
                }
            )
    _write(
        args,
        {
            "model": args.model,
            "calibration": None if contract.loss_calibration is None else contract.loss_calibration.to_dict(),
            "misaligned_calibration": None
            if contract.misaligned_loss_calibration is None
            else contract.misaligned_loss_calibration.to_dict(),
            "rows": rows,
        },
    )
    print(
        f"{'data':10s} {'variant':40s} {'n':>4s} {'geomean':>8s} {'worst':>6s} "
        f"{'>1.10':>5s} {'unsure':>7s} {'kept':>5s}"
    )
    for r in rows:
        print(
            f"{Path(r['data']).name:10s} {r['variant']:40s} {r['problems']:4d} {r['result']['geomean']:8.4f} "
            f"{r['result']['worst']:6.2f} {r['over_1.10']:5d} {100 * r['unsure_fraction']:6.1f}% {r['kept_mean']:5.1f}"
        )
    return 0


def unsure_pool(args: argparse.Namespace) -> int:
    """Where an unsure decision fills its places from (``Policy.unsure_pool``: every candidate, or
    the ATen choices and Inductor's DEFAULT list), for each model and the dataset paired with it,
    with the model's own contract: the handler's outcome (the best measured time among what it
    hands Inductor / the best measured), the unsure fraction and the candidates benchmarked."""
    from torch_diode.selection import UNSURE_POOLS

    base = Policy.from_config()
    rows = []
    for model, data in _pairs(args):
        contract = _contract(model)
        problems = list(replays(model, [data], with_tf32=True))
        for pool_name in UNSURE_POOLS:
            for top_k in args.top_k:
                policy = replace(base, unsure_pool=pool_name, unsure_top_k=top_k)
                got, unsure, benchmarked = [], 0, []
                for problem, pool, members, measured, tf32 in problems:
                    try:
                        decision = decide(problem, pool, members, policy, contract, tf32)
                    except NoUsableCandidate:
                        continue
                    got.append(measured[list(decision.chosen)].min() / measured.min())
                    if decision.unsure:
                        unsure += 1
                        benchmarked.append(len(decision.chosen))
                rows.append(
                    {
                        "model": model,
                        "data": data,
                        "unsure_pool": pool_name,
                        "unsure_top_k": top_k,
                        "problems": len(got),
                        "outcome": _summary(got),
                        "over_1.10": int(sum(v > 1.10 for v in got)),
                        "unsure_fraction": unsure / max(1, len(got)),
                        "benchmarked_mean": float(np.mean(benchmarked)) if benchmarked else 0.0,
                    }
                )
    _write(args, {"rows": rows})
    print(
        f"{'model':22s} {'data':20s} {'pool':8s} {'k':>2s} {'n':>4s} {'outcome':>8s} {'worst':>6s} "
        f"{'>1.10':>5s} {'unsure':>7s}"
    )
    for r in rows:
        print(
            f"{r['model'][-22:]:22s} {r['data'][-20:]:20s} {r['unsure_pool']:8s} {r['unsure_top_k']:2d} "
            f"{r['problems']:4d} {r['outcome']['geomean']:8.4f} {r['outcome']['worst']:6.3f} {r['over_1.10']:5d} "
            f"{100 * r['unsure_fraction']:6.1f}%"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("extern-preference", help="the first pick for several extern_preference values")
    p.add_argument("--model", default="NVIDIA-H100-matmul")
    p.add_argument("--data", nargs="+", default=REALMODELS_AND_HELDOUT, help=REALMODELS_AND_HELDOUT_HELP)
    p.add_argument("--preferences", type=float, nargs="+", default=[1.0, 1.1, 1.2])
    p.add_argument("--out", required=True)
    p.set_defaults(run=extern_preference)
    p = sub.add_parser("spread-penalty", help="the decision with candidates ranked by mean + penalty x spread")
    p.add_argument("--model", default="NVIDIA-H100-matmul")
    p.add_argument("--data", nargs="+", default=[str(ROOT / "data" / "h100" / "realmodels"), *HELDOUT_DATA])
    p.add_argument("--penalties", nargs="+", type=float, default=[0.0, 0.5, 1.0, 2.0])
    p.add_argument("--out", required=True)
    p.set_defaults(run=spread_penalty)
    p = sub.add_parser("unsure-rules", help="each unsure rule on and off, on the held-out sets")
    p.add_argument("--model", default="NVIDIA-H100-matmul")
    p.add_argument("--data", nargs="+", default=HELDOUT_SETS)
    p.add_argument("--thresholds", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5])
    p.add_argument("--out", required=True)
    p.set_defaults(run=unsure_rules)
    p = sub.add_parser("unsure-pool", help="where an unsure decision fills its places from, per model and dataset")
    _paired_model_and_data(p)
    p.add_argument("--top-k", type=int, nargs="+", default=[3, 5], help="unsure_top_k values to replay")
    p.add_argument("--out", required=True)
    p.set_defaults(run=unsure_pool)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())

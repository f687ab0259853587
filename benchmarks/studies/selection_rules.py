"""(CPU) How do the handler's rules fare when changed? Each subcommand replays the handler's
decision (benchmarks/selection_replay.py's :func:`replays`) on held-out sets with one rule varied.

``extern-preference``: the handler's first pick per dataset for several values of
``extern_preference`` (applied, as the handler does, to the problems whose rows are aligned): its
slowdown against the best measured (geomean and worst; aligned and misaligned problems apart), and
how often the pick is ATen/cuBLAS (no kernel to compile).

``spread-penalty``: the handler's decision (the model's own contract) where each candidate ranks by
its predicted ln time plus ``--penalties`` times the members' spread (a cautious ranking: of two
candidates predicted alike, the one the members agree on first): first pick and outcome (geomean,
worst, how many over 1.10x the best measured) and the unsure fraction per penalty and dataset.

    python -m benchmarks.studies.selection_rules extern-preference --out benchmarks/results/extern_preference_cpu.json
    python -m benchmarks.studies.selection_rules extern-preference --model NVIDIA-H200-matmul --data DIR --out pref.json
    python -m benchmarks.studies.selection_rules spread-penalty --model NVIDIA-H200-matmul --data DIR ... --out pen.json
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import replace

from benchmarks.selection_replay import (
    HELDOUT_DATA,
    REALMODELS_AND_HELDOUT,
    REALMODELS_AND_HELDOUT_HELP,
    ROOT,
    _summary,
    _write,
    model_contract,
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
    contract = model_contract(args.model)
    rows = []
    for data, preference, problems in _sweep(args, args.preferences):
        policy = replace(base, extern_preference=preference)
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
                "problems": len(every),
                "first_pick": _summary(every),
                **{f"first_pick_{k}": _summary(v) for k, v in slowdowns.items() if v},
                "extern_picks": extern_picks,
            }
        )
    _write(args, {"model": args.model, "rows": rows})
    header = f"{'data':40s} {'pref':>5s} {'n':>4s} {'first gm':>8s} {'worst':>6s}"
    print(f"{header} {'unaligned gm':>12s} {'ATen picks':>10s}")
    for r in rows:
        if not r["problems"]:
            continue
        mis = r.get("first_pick_misaligned", {}).get("geomean", float("nan"))
        print(
            f"{r['data'][-40:]:40s} {r['extern_preference']:5.2f} {r['problems']:4d} "
            f"{r['first_pick']['geomean']:8.4f} {r['first_pick']['worst']:6.2f} {mis:12.4f} {r['extern_picks']:10d}"
        )
    return 0


def spread_penalty(args: argparse.Namespace) -> int:
    policy = Policy.from_config()
    contract = model_contract(args.model)
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
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())

"""(CPU) What tells the handler's slow first picks apart? Each subcommand replays the handler's
decision (benchmarks/selection_replay.py's :func:`replays`) on held-out sets and groups or scores
its first picks.

``uncertainty``: whether what the ensemble's members say of the first pick (their predicted
regret, its spread, how many of them would pick otherwise) tells apart the first picks that run
over ``--slow`` times the best measured: the AUC of each signal, aligned and misaligned problems
apart (0.5: no signal).

``learned-risk``: whether a classifier learned from held-out outcomes can stand in for the hand-made
unsure rules: a logistic regression of "the first pick runs over ``--loss-margin`` times the best
measured" on what a decision knows (RISK_FEATURES: the problem's shape, op, layout, row alignment,
and the ensemble's predicted margins and spread), fitted on ``--fit-data`` and judged on
``--judge-data`` against the shipped rules: the handler's outcome (the first pick where sure, the
best of the widened set where unsure), the unsure fraction and the classifier's AUC.

``misaligned-groups``: the first picks of the problems the ``misaligned`` unsure rule covers,
grouped by op, dtype, operands, row alignment, attention or not, the pick's kind and the members'
agreement: whether any group is as safe as the aligned problems.

``config-coverage``: the handler's first picks grouped by how often the training data timed each
problem's fastest measured config (the same kernel design, ``benchmarks.common.config_design``,
among the training problems of its op): whether the slow first picks are those whose fastest config the
data rarely holds.

``deciding-configs``: a dataset of the configs that decide each first pick, for
``python -m benchmarks.collector_fidelity --recorded`` to time again on the GPU.

    python -m benchmarks.studies.slow_picks uncertainty --out benchmarks/results/uncertainty_cpu.json
    python -m benchmarks.studies.slow_picks learned-risk --out benchmarks/results/learned_risk_h100_cpu.json
    python -m benchmarks.studies.slow_picks misaligned-groups --out benchmarks/results/misaligned_groups_h100_cpu.json
    python -m benchmarks.studies.slow_picks config-coverage --out benchmarks/results/config_coverage_cpu.json
    python -m benchmarks.studies.slow_picks deciding-configs --data DIR --misaligned-only --out focus.msgpack.gz
"""

from __future__ import annotations

import argparse
import bisect
import math
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, config_design
from benchmarks.selection_replay import (
    REALMODELS_AND_HELDOUT,
    REALMODELS_AND_HELDOUT_HELP,
    ROOT,
    _paired_model_and_data,
    _pairs,
    _summary,
    _write,
    model_contract,
    replays,
)
from torch_diode.dataset_io import load_datasets
from torch_diode.selection import NoUsableCandidate, Policy, Pool, decide
from torch_diode.selection.decide import safe_choice
from torch_diode.types import Problem


def _auc(score: np.ndarray, positive: np.ndarray) -> float | None:
    """Probability that a positive case scores above a negative one (ties half): 0.5 is no signal."""
    pos, neg = score[positive], score[~positive]
    if not len(pos) or not len(neg):
        return None
    return float(((pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])).mean())


# what an ensemble's members say of the first pick: each member's predicted regret (its ln time of
# the pick over its own best), their mean and spread, the share of members whose best is the pick,
# and how many other usable candidates their mean predicts within 5% of the pick, either way (near ties)
UNCERTAINTY_SIGNALS = ("regret_mean", "regret_spread", "disagreement", "near_ties")


def uncertainty(args: argparse.Namespace) -> int:
    policy = Policy.from_config()
    rows = []
    for model in args.model:
        contract = model_contract(model)
        for data in args.data:
            cases: dict[str, list[tuple]] = {"aligned": [], "misaligned": []}
            members = 1
            for problem, pool, predicted, measured, tf32 in replays(model, [data], with_tf32=True):
                members = len(predicted)
                try:
                    decision = decide(problem, pool, predicted, policy, contract, tf32)
                except NoUsableCandidate:
                    continue
                usable = np.asarray(decision.order)
                regret = predicted[:, decision.first] - predicted[:, usable].min(axis=1)
                best_is_pick = usable[np.argmin(predicted[:, usable], axis=1)] == decision.first
                mean = predicted.mean(axis=0)
                near_ties = int(np.sum(np.abs(mean[usable] - mean[decision.first]) < math.log(1.05))) - 1
                cases["misaligned" if problem.misaligned_operands else "aligned"].append(
                    (
                        float(measured[decision.first] / measured.min()),
                        float(regret.mean()),
                        float(regret.std(ddof=1)) if len(regret) > 1 else 0.0,
                        float(1.0 - best_is_pick.mean()),
                        float(near_ties),
                    )
                )
            for kind, values in cases.items():
                if not values:
                    continue
                table = np.array(values)
                slow = table[:, 0] > args.slow
                # one member: no spread, no disagreement to read
                spread_signals = members > 1
                rows.append(
                    {
                        "model": model,
                        "data": data,
                        "kind": kind,
                        "problems": len(table),
                        "slow": int(slow.sum()),
                        "members": members,
                        "auc": {
                            name: _auc(table[:, i + 1], slow)
                            if name in ("regret_mean", "near_ties") or spread_signals
                            else None
                            for i, name in enumerate(UNCERTAINTY_SIGNALS)
                        },
                    }
                )
    _write(
        args,
        {
            "slow": args.slow,
            "signals": list(UNCERTAINTY_SIGNALS),
            "rows": rows,
        },
    )
    print(f"AUC of each signal for a first pick over {args.slow}x the best measured (0.5: no signal)")
    print(
        f"{'model':24s} {'data':22s} {'kind':10s} {'n':>4s} {'slow':>4s} "
        + " ".join(f"{s:>13s}" for s in UNCERTAINTY_SIGNALS)
    )
    for r in rows:
        aucs = " ".join(f"{'-' if v is None else f'{v:.3f}':>13s}" for v in r["auc"].values())
        print(f"{r['model'][-24:]:24s} {r['data'][-22:]:22s} {r['kind']:10s} {r['problems']:4d} {r['slow']:4d} {aucs}")
    return 0


# what the learned risk classifier reads of a decision (learned-risk)
RISK_FEATURES = (
    "misaligned", "log2_row_alignment_bytes", "misaligned_a", "misaligned_b", "misaligned_out",
    "predicted_ln_us", "margin_to_second_ln", "members_spread", "margin_to_aten_ln", "first_is_aten",
    "attention_bmm", "log2_b", "log2_m", "log2_n", "log2_k", "op_mm", "op_addmm", "op_bmm", "op_baddbmm",
    "fp32", "transpose_a", "transpose_b", "top5_members_spread",
)  # fmt: skip


def _risk_cases(model: str, data: str) -> list[dict]:
    """Per problem of ``data``: RISK_FEATURES of the decision with the model trusted; measured over
    the best measured time, that decision's first pick (``first``), the best of what it hands
    Inductor's benchmark when made unsure (``widened``) and the handler's outcome under the shipped
    rules (``shipped``); and whether those rules are unsure of it."""
    policy = Policy.from_config()
    contract = model_contract(model)
    cases = []
    for problem, pool, members, measured, tf32 in replays(model, [data], with_tf32=True):
        try:
            trusted = decide(problem, pool, members, policy, None, tf32)
            shipped = decide(problem, pool, members, policy, contract, tf32)
            widened = decide(problem, pool, members, policy, None, tf32, unsure="learned")
        except NoUsableCandidate:
            continue
        order, first = trusted.order, trusted.first
        best = measured.min()
        mean = members.mean(axis=0)
        spread = members.std(axis=0, ddof=1) if len(members) > 1 else np.zeros_like(mean)
        safe = safe_choice(order, pool.extern)
        misaligned = problem.misaligned_operands
        features = (
            float(bool(misaligned)),
            math.log2(min(problem.row_alignment_bytes())),
            *(float(name in misaligned) for name in ("a", "b", "out")),
            float(mean[first]),
            float(mean[order[1]] - mean[first]) if len(order) > 1 else 1.0,
            float(spread[first]),
            float(mean[safe] - mean[first]) if safe is not None else 0.0,
            float(pool.extern[first]),
            float(_attention_bmm(problem)),
            *(math.log2(v) for v in (problem.B, problem.M, problem.N, problem.K)),
            *(float(problem.op == op) for op in ("mm", "addmm", "bmm", "baddbmm")),
            float(problem.dtype_a == "float32"),
            float(problem.transpose_a),
            float(problem.transpose_b),
            float(spread[order[:5]].mean()),
        )
        assert len(features) == len(RISK_FEATURES)
        cases.append(
            {
                "features": features,
                "first": float(measured[first] / best),
                "widened": float(measured[list(widened.chosen)].min() / best),
                "shipped": float(measured[list(shipped.chosen)].min() / best),
                "shipped_unsure": bool(shipped.unsure),
            }
        )
    return cases


def _outcome(result: list[float], unsure: np.ndarray) -> dict:
    """Outcome figures of ``result`` (per problem, over the best measured), ``unsure`` marking the
    problems benchmarked."""
    over = int(sum(r > 1.10 for r in result))
    return {**_summary(result), "over_1.10": over, "unsure_fraction": float(np.mean(unsure))}


def learned_risk(args: argparse.Namespace) -> int:
    import torch

    fit = _risk_cases(args.model, args.fit_data)
    x = torch.tensor([c["features"] for c in fit], dtype=torch.float32)
    y = torch.tensor([c["first"] > args.loss_margin for c in fit], dtype=torch.float32)
    mean, scale = x.mean(dim=0), x.std(dim=0).clamp_min(1e-3)
    torch.manual_seed(0)
    classifier = torch.nn.Linear(x.shape[1], 1)
    optimizer = torch.optim.Adam(classifier.parameters(), lr=0.01, weight_decay=1e-3)
    for _ in range(2000):
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(classifier((x - mean) / scale).squeeze(1), y)
        loss.backward()
        optimizer.step()
    sets, rows = {}, []
    for role, data, cases in (("fit", args.fit_data, fit), ("judge", args.judge_data, None)):
        cases = cases if cases is not None else _risk_cases(args.model, data)
        with torch.no_grad():
            features = torch.tensor([c["features"] for c in cases], dtype=torch.float32)
            risk = torch.sigmoid(classifier((features - mean) / scale).squeeze(1)).numpy()
        lost = np.array([c["first"] > args.loss_margin for c in cases])
        sets[role] = {"data": data, "problems": len(cases), "lost": int(lost.sum()), "auc": _auc(risk, lost)}
        shipped = np.array([c["shipped_unsure"] for c in cases])
        rows.append({"role": role, "variant": "shipped rules", **_outcome([c["shipped"] for c in cases], shipped)})
        for name, unsure in [("none", np.zeros(len(cases), dtype=bool))] + [
            (f"learned > {t:g}", risk > t) for t in args.thresholds
        ]:
            result = [c["widened"] if u else c["first"] for c, u in zip(cases, unsure)]
            rows.append({"role": role, "variant": name, **_outcome(result, unsure)})
    weights = dict(zip(RISK_FEATURES, (classifier.weight[0] / scale).tolist(), strict=True))
    _write(
        args,
        {"model": args.model, "loss_margin": args.loss_margin, "sets": sets, "weights_per_unit": weights, "rows": rows},
    )
    print(f"outcome (first pick where sure, best of the widened set where unsure) / best measured; {args.model}")
    for role, fact in sets.items():
        auc = "-" if fact["auc"] is None else f"{fact['auc']:.3f}"
        print(
            f"{role}: {fact['data']}, {fact['problems']} problems, {fact['lost']} first picks lost, "
            f"classifier AUC {auc}"
        )
    print(f"{'role':6s} {'variant':16s} {'gm':>7s} {'worst':>6s} {'>1.10':>5s} {'unsure':>6s}")
    for r in rows:
        print(
            f"{r['role']:6s} {r['variant']:16s} {r['geomean']:7.4f} {r['worst']:6.3f} {r['over_1.10']:5d} "
            f"{r['unsure_fraction']:6.3f}"
        )
    return 0


# head dims of attention (q @ k^T has K, p @ v has N one of them)
HEAD_DIMS = frozenset((32, 40, 48, 64, 72, 80, 96, 112, 128, 160, 192, 256))


def _attention_bmm(problem: Problem) -> bool:
    """A bmm/baddbmm with a head dim as N or K: attention's scores or values."""
    return problem.op in ("bmm", "baddbmm") and bool({problem.N, problem.K} & HEAD_DIMS)


# bounds (ln time) of the groups by how much faster than the best ATen choice the first pick is predicted
MARGIN_BOUNDS = (0.1, 0.2, 0.4)


def _margin_group(members: np.ndarray, first: int, safe: int | None) -> str:
    """How far the first pick is predicted faster than the best ATen choice (ln of the mean
    members' times), as one of MARGIN_BOUNDS' groups; "ATen first" where the pick is ATen."""
    if safe is None or first == safe:
        return "ATen first" if safe is not None else "no ATen choice"
    mean = np.atleast_2d(members).mean(axis=0)
    edges = ("-inf", *MARGIN_BOUNDS, "inf")
    i = bisect.bisect_right(MARGIN_BOUNDS, float(mean[safe] - mean[first]))
    return f"[{edges[i]}, {edges[i + 1]})"


def _misaligned_groups(
    problem: Problem, pool: Pool, members: np.ndarray, first: int, safe: int | None
) -> dict[str, str]:
    """The groups a misaligned problem's decision falls in, by each grouping of misaligned_groups;
    ``safe``: the best ATen choice of the decision's order."""
    row_bytes = min(
        align
        for name, align in zip(("a", "b", "out"), problem.row_alignment_bytes())
        if name in problem.misaligned_operands
    )
    attention = _attention_bmm(problem)
    agree = bool((members.argmin(axis=1) == first).all())
    return {
        "op": problem.op,
        "dtype": problem.dtype_a,
        "misaligned operands": ",".join(problem.misaligned_operands),
        "row alignment (bytes)": str(row_bytes),
        "attention bmm (a head dim)": str(attention),
        "first pick is ATen": str(bool(pool.extern[first])),
        "every member picks it": str(agree),
        "predicted margin over ATen (ln)": _margin_group(members, first, safe),
    }


def misaligned_groups(args: argparse.Namespace) -> int:
    """The first picks of the misaligned problems (an operand's rows not 16-byte aligned, the
    unsure rule ``misaligned``), grouped by op, dtype, which operands, how far their rows are
    aligned, attention or not, the pick's kind, whether every ensemble member picks it and how much
    faster than the best ATen choice the model predicts it (MARGIN_BOUNDS): the
    first pick / best measured per group (geomean, how many over ``--slow``). A group whose first
    picks are as good as the aligned problems' would be one the rule could leave to the model."""
    policy = Policy.from_config()
    contract = model_contract(args.model)
    rows = []
    for data in args.data:
        aligned, groups = [], {}
        for problem, pool, members, measured in replays(args.model, [data]):
            try:
                decision = decide(problem, pool, members, policy, contract)
            except NoUsableCandidate:
                continue
            ratio = float(measured[decision.first] / measured[decision.order].min())
            if not problem.misaligned_operands:
                aligned.append(ratio)
                continue
            safe = safe_choice(decision.order, pool.extern)
            for grouping, group in _misaligned_groups(problem, pool, members, decision.first, safe).items():
                groups.setdefault((grouping, group), []).append(ratio)
        # the aligned problems last (where the data holds any): the figure each group is held against
        held_against = [(("aligned problems", "all"), aligned)] if aligned else []
        for (grouping, group), ratios in [*sorted(groups.items()), *held_against]:
            rows.append(
                {
                    "data": data,
                    "grouping": grouping,
                    "group": group,
                    "problems": len(ratios),
                    "first": _summary(ratios),
                    "slow": int(sum(r > args.slow for r in ratios)),
                }
            )
    _write(args, {"model": args.model, "slow": args.slow, "rows": rows})
    print(f"{'data':12s} {'grouping':28s} {'group':16s} {'n':>4s} {'first gm':>9s} {'worst':>6s} {'slow':>5s}")
    for r in rows:
        print(
            f"{Path(r['data']).name:12s} {r['grouping']:28s} {r['group'][:16]:16s} {r['problems']:4d} "
            f"{r['first']['geomean']:9.3f} {r['first']['worst']:6.2f} {r['slow']:5d}"
        )
    return 0


def deciding_configs(args: argparse.Namespace) -> int:
    """A dataset of what decides each problem's first pick, to time again
    (``python -m benchmarks.collector_fidelity --recorded``): its ATen choices, the ``--top``
    fastest recorded, the handler's first ``--top`` in its order, and ``--others`` more drawn at
    random (seeded), with the recorded timings."""
    from torch_diode.dataset_io import save_dataset
    from torch_diode.types import Dataset

    policy = Policy.from_config()
    contract = model_contract(args.model)
    source = load_datasets(args.data)
    hardware_of = {problem: hw for hw, problem, _ in source.problems()}
    rng = np.random.default_rng(args.seed)
    out = Dataset()
    out.metadata["sources"].append(
        {"tool": "benchmarks.studies.slow_picks deciding-configs", "command": command_line()}
    )
    for problem, pool, predicted, measured, tf32 in replays(args.model, args.data, with_tf32=True):
        if args.misaligned_only and not problem.misaligned_operands:
            continue
        try:
            decision = decide(problem, pool, predicted, policy, contract, tf32)
        except NoUsableCandidate:
            continue
        keep = set(np.flatnonzero(pool.extern).tolist())
        keep |= set(np.argsort(measured)[: args.top].tolist())
        keep |= set(list(decision.order)[: args.top])
        rest = sorted(set(range(len(measured))) - keep)
        keep |= set(rng.choice(rest, size=min(args.others, len(rest)), replace=False).tolist()) if rest else set()
        timings = [t for t in source.entry_for(hardware_of[problem]).ops[problem.op][problem] if not t.failed]
        out.add(hardware_of[problem], problem, [timings[i] for i in sorted(keep)])
    save_dataset(out, args.out)
    print(f"{out.num_problems} problems, {out.num_timed_configs} configs: {args.out}")
    return 0


CONFIG_SHARE_GROUPS = ((0.0, 0.02), (0.02, 0.1), (0.1, math.inf))  # share of the op's training problems


def _share_group(lo: float, hi: float) -> str:
    share = f"{lo:.0%} and more" if math.isinf(hi) else f"[{lo:.0%}, {hi:.0%})"
    return f"fastest config timed in {share} of the op's training problems"


def config_coverage(args: argparse.Namespace) -> int:
    """The first picks grouped by how often the training data timed each problem's fastest
    measured config: ATen fastest, or the fastest Triton config timed in under 2%, 2-10% or 10% and
    more of the training problems of its op."""
    if len(args.train_data) != len(args.model):
        raise SystemExit("--train-data: give one training set per --model, in the same order")
    policy = Policy.from_config()
    results = []
    for (model, data), train in zip(_pairs(args), args.train_data):
        problems_of_op: Counter[str] = Counter()
        timed: Counter[tuple] = Counter()
        for _, problem, timings in load_datasets([train]).problems():
            problems_of_op[problem.op] += 1
            timed.update({(problem.op, config_design(t.config)) for t in timings if not t.failed and t.config.is_tiled})
        held = [(p, [t.config for t in ts if not t.failed]) for _, p, ts in load_datasets([data]).problems()]
        configs = dict(held)
        if len(configs) < len(held):  # replays names a problem, not its GPU: one GPU's set at a time
            raise SystemExit(f"{data}: a problem is held for more than one GPU; give one GPU's data")
        contract = model_contract(model)
        groups: dict[str, list[float]] = {}
        for problem, pool, predicted, measured in replays(model, [data]):
            try:
                decision = decide(problem, pool, predicted, policy, contract)
            except NoUsableCandidate:
                continue
            fastest = configs[problem][int(np.argmin(measured))]
            if not fastest.is_tiled:
                name = "ATen fastest"
            else:
                share = timed[(problem.op, config_design(fastest))] / max(problems_of_op[problem.op], 1)
                name = next(_share_group(lo, hi) for lo, hi in CONFIG_SHARE_GROUPS if lo <= share < hi)
            groups.setdefault(name, []).append(float(measured[decision.first] / measured.min()))
        order = ["ATen fastest", *(_share_group(lo, hi) for lo, hi in CONFIG_SHARE_GROUPS)]
        for name, first in sorted(groups.items(), key=lambda g: order.index(g[0])):
            slow = sum(x > args.slow for x in first)
            results.append(
                {"model": model, "data": data, "train_data": train, "group": name, "problems": len(first)}
                | {"first_pick": _summary(first), "slow_first_picks": slow}
            )
            print(
                f"{model[-22:]:22s} {Path(data).name:12s} {name:66s} {len(first):4d} "
                f"{results[-1]['first_pick']['geomean']:6.3f} {results[-1]['first_pick']['worst']:6.2f} {slow:3d}"
            )
    _write(args, {"slow": args.slow, "results": results})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("uncertainty", help="whether the ensemble's spread tells the slow first picks apart")
    p.add_argument("--model", nargs="+", default=["NVIDIA-H100-matmul"], help="model files or shipped model names")
    p.add_argument("--data", nargs="+", default=REALMODELS_AND_HELDOUT, help=REALMODELS_AND_HELDOUT_HELP)
    p.add_argument("--slow", type=float, default=1.1, help="a first pick this many times the best is slow")
    p.add_argument("--out", required=True)
    p.set_defaults(run=uncertainty)
    p = sub.add_parser("learned-risk", help="a classifier of slow first picks against the hand-made unsure rules")
    p.add_argument("--model", default="NVIDIA-H100-matmul")
    p.add_argument("--fit-data", default="data/h100/validation", help="held-out set to fit on")
    p.add_argument("--judge-data", default="data/h100/realmodels", help="held-out set to judge on")
    p.add_argument("--loss-margin", type=float, default=1.05, help="a first pick this many times the best is lost")
    p.add_argument("--thresholds", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.4, 0.5])
    p.add_argument("--out", required=True)
    p.set_defaults(run=learned_risk)
    p = sub.add_parser("misaligned-groups", help="the misaligned problems' first picks, group by group")
    p.add_argument("--model", default="NVIDIA-H100-matmul")
    p.add_argument(
        "--data",
        nargs="+",
        default=[str(ROOT / "data" / "h100" / name) for name in ("realmodels", "validation")],
        help="dataset files or folders, each judged on its own (default: the H100 real models and validation)",
    )
    p.add_argument("--slow", type=float, default=1.1, help="a first pick this many times the best is slow")
    p.add_argument("--out", required=True)
    p.set_defaults(run=misaligned_groups)
    p = sub.add_parser("config-coverage", help="first picks by how often training timed the fastest config")
    _paired_model_and_data(p)
    p.add_argument(
        "--train-data",
        nargs="+",
        default=[str(ROOT / "data" / gpu / "train") for gpu in ("h100", "h200")],
        help="one training set per --model, in the same order (default: the H100's and the H200's)",
    )
    p.add_argument("--slow", type=float, default=1.1, help="a first pick this many times the best is slow")
    p.add_argument("--out", required=True)
    p.set_defaults(run=config_coverage)
    p = sub.add_parser(
        "deciding-configs", help="a dataset of the configs that decide each first pick, to time again on the GPU"
    )
    p.add_argument("--model", default="NVIDIA-H100-matmul")
    p.add_argument("--data", nargs="+", required=True)
    p.add_argument("--misaligned-only", action="store_true", help="only problems with misaligned rows")
    p.add_argument("--top", type=int, default=8, help="the fastest recorded and the handler's first, each")
    p.add_argument("--others", type=int, default=8, help="more configs drawn at random per problem")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="dataset file to write")
    p.set_defaults(run=deciding_configs)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())

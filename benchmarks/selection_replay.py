"""(CPU) How good are the handler's picks on measured data? The handler's decision
(:func:`torch_diode.selection.decide`, the same code) replayed on datasets, judged by their
measured times.

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

``unsure-pool``: the handler's outcome where unsure decisions fill their places from every candidate
or from the ATen choices and Inductor's DEFAULT list alone, per model and dataset.

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

``bias``: predicted over measured time (geomean over every timed candidate), ATen choices and
Triton configs apart, per measured-time regime (under 10 us, 10-30 us, 30 us and over), per model
and held-out set: whether the model takes short Triton kernels for slower than cuBLAS against the
measurements (training data timed without the collector's lead does, on the H200).

``config-coverage``: the handler's first picks grouped by how often the training data timed each
problem's fastest measured config (the same kernel design, ``benchmarks.common.config_design``,
among the training problems of its op): whether the slow first picks are those whose fastest config the
data rarely holds.

``spread-penalty``: the handler's decision (the model's own contract) where each candidate ranks by
its predicted ln time plus ``--penalties`` times the members' spread (a cautious ranking: of two
candidates predicted alike, the one the members agree on first): first pick and outcome (geomean,
worst, how many over 1.10x the best measured) and the unsure fraction per penalty and dataset.

``extern-preference``: the handler's first pick per dataset for several values of
``extern_preference``, applied to every problem or (as the handler does) to those whose rows are
aligned only: its slowdown against the best measured (geomean and worst; aligned and misaligned
problems apart), and how often the pick is ATen/cuBLAS (no kernel to compile).

    python -m benchmarks.selection_replay heldout --out benchmarks/results/heldout_selection_cpu.json
    python -m benchmarks.selection_replay heldout --model NVIDIA-H100-matmul other.diode --data DIR ... --out sel.json
    python -m benchmarks.selection_replay realmodels --data DIR --out benchmarks/results/heldout_realmodels_h100.json
    python -m benchmarks.selection_replay extern-preference --out benchmarks/results/extern_preference_cpu.json
    python -m benchmarks.selection_replay extern-preference --model NVIDIA-H200-matmul --data DIR --out pref.json
    python -m benchmarks.selection_replay unsure-pool --out benchmarks/results/unsure_pool_cpu.json
    python -m benchmarks.selection_replay learned-risk --out benchmarks/results/learned_risk_h100_cpu.json
    python -m benchmarks.selection_replay bias --out benchmarks/results/prediction_bias_cpu.json
    python -m benchmarks.selection_replay config-coverage --out benchmarks/results/config_coverage_cpu.json
    python -m benchmarks.selection_replay spread-penalty --model NVIDIA-H200-matmul --data DIR ... --out pen.json
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, config_design, cpu_report_header
from torch_diode.features import config_rows, featurize, is_extern
from torch_diode.inductor.config_space import beyond_default_list
from torch_diode.predict import load_model
from torch_diode.selection import Confidence, NoUsableCandidate, Policy, Pool, decide
from torch_diode.selection.decide import safe_choice
from torch_diode.types import Problem, load_datasets

ROOT = Path(__file__).resolve().parents[1]
# every file of the H100 validation set, each judged on its own, and the older unaligned sets
HELDOUT_DATA = sorted(str(p) for p in (ROOT / "data" / "h100" / "validation").glob("*.msgpack.gz")) + [
    str(ROOT / "data" / "h100" / "odd"),
    str(ROOT / "data" / "h100" / "odd2"),
]


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
        pool = Pool(featurize(problem, configs, hardware), is_extern(rows), beyond_default_list(problem, rows))
        replay = (
            problem,
            pool,
            np.asarray(engine.predict_members(pool.features), dtype=np.float64),
            np.array([t.time_us for t in ok]),
        )
        yield (*replay, any(c.allow_tf32 and c.is_tiled for c in configs)) if with_tf32 else replay


def _contract(model: str) -> Confidence:
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
        "unsure_pool": policy.unsure_pool,
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


def realmodels(args: argparse.Namespace) -> int:
    from torch_diode.collection.shapes import load_shapeset, problem_identity

    policy = Policy.from_config()
    contract = _contract(args.model)
    names: dict[Problem, list[str]] = {}
    for entry in load_shapeset(args.shapeset):
        names.setdefault(problem_identity(entry.problem), []).append(f"{entry.model}: {entry.layer}")
    rows = []
    for problem, pool, predicted, measured, tf32 in replays(args.model, args.data, with_tf32=True):
        try:
            decision = decide(problem, pool, predicted, policy, contract, tf32)
        except NoUsableCandidate:
            continue
        best = float(measured.min())
        rows.append(
            {
                "problem": problem.short(),
                "layers": names.get(problem_identity(problem), []),
                "first_pick": float(measured[decision.first]) / best,
                "outcome": float(measured[list(decision.chosen)].min()) / best,
                "unsure": decision.unsure,
                "chosen": len(decision.chosen),
            }
        )
    if not rows:
        raise SystemExit(f"no problem with a usable candidate in {' '.join(args.data)}")
    first = np.array([r["first_pick"] for r in rows])
    outcome = np.array([r["outcome"] for r in rows])
    summary = {
        "num_problems": len(rows),
        "first_pick_geomean": float(np.exp(np.log(first).mean())),
        "first_pick_worst": float(first.max()),
        "unsure_fraction": sum(bool(r["unsure"]) for r in rows) / len(rows),
        "outcome_geomean": float(np.exp(np.log(outcome).mean())),
        "outcome_worst": float(outcome.max()),
        "unmatched_problems": sum(not r["layers"] for r in rows),
    }
    report = cpu_report_header("CPU (predictions against data measured on the GPU named in the dataset)") | {
        "model": args.model,
        "data": args.data,
        "shapeset": args.shapeset,
        **summary,
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(report, indent=1))
    for r in sorted(rows, key=lambda r: -r["first_pick"])[:10]:
        print(
            f"{r['first_pick']:6.3f} {r['outcome']:6.3f} {str(r['unsure']):>14s} {r['problem']:40s} "
            f"{'; '.join(r['layers'])[:60]}"
        )
    print(" ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in summary.items()))
    return 0


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
        contract = _contract(model)
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
    contract = _contract(model)
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


HELDOUT_SETS = [str(ROOT / "data" / "h100" / name) for name in ("validation", "odd", "odd2")]
REALMODELS_AND_HELDOUT = [str(ROOT / "data" / "h100" / "realmodels"), *HELDOUT_SETS]
REALMODELS_AND_HELDOUT_HELP = (
    "dataset files or folders, each judged on its own (default: data/h100/realmodels and the H100 held-out sets)"
)


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


def _summary(x: list[float]) -> dict:
    return {"geomean": float(math.exp(np.mean(np.log(x)))), "worst": float(max(x))} if x else {}


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
                try:  # the model's best among the usable Triton candidates alone
                    alone = decide(
                        problem, replace(pool, allowed=~pool.extern), members, replace(policy, extern_preference=1.0)
                    )
                    triton.append(measured[alone.order].min() / measured[alone.first])
                    triton5.append(measured[alone.order].min() / measured[alone.order[:5]].min())
                except NoUsableCandidate:
                    pass
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
# overhead weighs most (the collector's lead, data/README.md "Timed without the lead")
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
    contract = _contract(args.model)
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


def deciding_configs(args: argparse.Namespace) -> int:
    """A dataset of what decides each problem's first pick, to time again
    (``python -m benchmarks.collector_fidelity --recorded``): its ATen choices, the ``--top``
    fastest recorded, the handler's first ``--top`` in its order, and ``--others`` more drawn at
    random (seeded), with the recorded timings."""
    from torch_diode.types import Dataset, save_dataset

    policy = Policy.from_config()
    contract = _contract(args.model)
    source = load_datasets(args.data)
    hardware_of = {problem: hw for hw, problem, _ in source.problems()}
    rng = np.random.default_rng(args.seed)
    out = Dataset()
    out.metadata["sources"].append({"tool": "benchmarks.selection_replay deciding-configs", "command": command_line()})
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
        contract = _contract(model)
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


def _write(args: argparse.Namespace, body: dict) -> None:
    import platform

    machine = f"CPU ({platform.machine()}): predictions against data measured on the GPU named in each dataset"
    report = cpu_report_header(machine) | body
    Path(args.out).write_text(json.dumps(report, indent=1))


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
    p = sub.add_parser("ranking", help="held-out ranking metrics of several models (Triton-only top-1, first pick)")
    p.add_argument("--model", nargs="+", default=["NVIDIA-H100-matmul"])
    p.add_argument("--data", nargs="+", default=HELDOUT_SETS)
    p.add_argument("--out", required=True)
    p.set_defaults(run=ranking)
    p = sub.add_parser("bias", help="predicted over measured time, ATen and Triton apart, by measured-time regime")
    _paired_model_and_data(p)
    p.add_argument("--out", required=True)
    p.set_defaults(run=bias)
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

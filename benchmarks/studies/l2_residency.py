"""Does a GEMM's time, replayed from a CUDA graph, depend on where its operands lie in memory?
(one GPU run)

A CUDA graph replaying one GEMM back to back on the same operands finds them in the L2 cache after
the first call where they fit; where they nearly fill it, the share that stays depends on their
addresses. benchmarks.e2e times every method in its own process, so two methods running the same
kernel on operands allocated at different addresses could read differently. For each GEMM drawn
as e2e.py draws them (``--shapes``, ``--per-model``, ``--seed``; ``--match`` keeps labels holding
one of its substrings): the eager op (the ATen call default mode generates) on ``--copies`` sets
of operands, each allocated after a spacer of its own size, each replayed on its own
(``bench_cudagraph_us`` on one copy, e2e's ``runtime_cudagraph_warm_l2_us``), in turns for
``--reps`` rounds; and the calls over ``input_copies`` (together over twice the L2 cache: e2e's
``runtime_us``), as often. Per GEMM: its operands' bytes, the warm figures' spread across copies
(slowest copy's median over the fastest's) and the rotating figure over the fastest warm one.

    python -m benchmarks.studies.l2_residency --out benchmarks/results/l2_residency_h200.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from typing import Any

os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"  # nothing here is compiled; the import stays inert

from benchmarks.common import load_shapes, report_header, stage, write_json  # noqa: E402


def measure(problem: Any, copies: int, reps: int, seed: int) -> dict[str, Any]:
    import torch

    from benchmarks.common import bench_cudagraph_us, input_copies, operand_bytes
    from torch_diode.collection.inductor_sweep import make_inputs, op_function

    fn = op_function(problem.op)
    l2_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    spacers, sets = [], []
    for i in range(copies):
        # a spacer of its own size before each copy, so the copies start at unrelated addresses
        spacers.append(torch.empty((i * 7919 + 1) * 4096, dtype=torch.uint8, device="cuda"))
        sets.append(make_inputs(problem, "cuda", seed=seed))
    rotating = input_copies(sets[0], l2_bytes)
    warm_us: list[list[float]] = [[] for _ in sets]
    rotating_us: list[float] = []
    with torch.no_grad():
        for _ in range(reps):
            for i, x in enumerate(sets):
                warm_us[i].append(bench_cudagraph_us(fn, [x]))
            rotating_us.append(bench_cudagraph_us(fn, rotating))
    medians = [statistics.median(t) for t in warm_us]
    return {
        "operand_bytes": operand_bytes(sets[0]),
        "l2_bytes": l2_bytes,
        "input_copies": len(rotating),
        "warm_us": warm_us,
        "rotating_us": rotating_us,
        "warm_spread": max(medians) / min(medians),
        "rotating_over_fastest_warm": statistics.median(rotating_us) / min(medians),
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if "error" not in r]
    return {
        "gemms": len(rows),
        "warm_spread_over_1_05": sum(r["warm_spread"] > 1.05 for r in ok),
        "warm_spread_worst": max((r["warm_spread"] for r in ok), default=None),
        "rotating_over_fastest_warm_median": (
            statistics.median(r["rotating_over_fastest_warm"] for r in ok) if ok else None
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="realmodels_heldout", help="as benchmarks.e2e (default: %(default)s)")
    parser.add_argument("--per-model", type=int, default=1, help="as benchmarks.e2e (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="as benchmarks.e2e (default: %(default)s)")
    parser.add_argument("--match", nargs="+", help="only labels holding one of these substrings")
    parser.add_argument("--copies", type=int, default=6, help="operand sets each timed on its own")
    parser.add_argument("--reps", type=int, default=2, help="rounds of turns")
    parser.add_argument("--out", required=True, help="JSON report")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        raise SystemExit("l2_residency.py measures on a CUDA GPU; none is available here")
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for label, problem, _ in load_shapes(args.shapes, args.per_model, args.seed):
        if args.match and not any(m in label for m in args.match):
            continue
        row = {"label": label, "problem": problem.short()}
        try:
            row.update(measure(problem, args.copies, args.reps, args.seed))
        except Exception as e:  # reported; the run goes on
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
        nan = float("nan")
        stage(
            f"{label}: spread {row.get('warm_spread', nan):.3f}, "
            f"rotating {row.get('rotating_over_fastest_warm', nan):.3f}"
        )
        rows.append(row)
        torch.cuda.empty_cache()
        summary = summarize(rows)
        # after every GEMM, so that a run stopped at a time limit keeps what it measured
        report = {**report_header(), "summary": summary, "rows": rows}
        write_json(args.out, report)
    ok = [r for r in rows if "error" not in r]
    header = ("GEMM", "MB", "copies", "warm us (per copy)", "spread", "rot us", "rot/warm")
    print("{:70s} {:>7s} {:>6s} {:>40s} {:>6s} {:>8s} {:>8s}".format(*header))
    for r in sorted(ok, key=lambda r: -r["warm_spread"]):
        warm = " ".join(f"{statistics.median(t):.1f}" for t in r["warm_us"])
        print(
            f"{r['label'][:70]:70s} {r['operand_bytes'] / 2**20:7.1f} {r['input_copies']:6d} {warm:>40s} "
            f"{r['warm_spread']:6.3f} {statistics.median(r['rotating_us']):8.1f} {r['rotating_over_fastest_warm']:8.3f}"
        )
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

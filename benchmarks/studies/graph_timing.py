"""Do the collector's timings order a short GEMM's choices as a CUDA graph runs them? (one GPU run)

The collector times one launch between events after a flush of the cache (timing.time_launchers,
Inductor's method); benchmarks/e2e.py times a compiled GEMM as a CUDA graph replays it, back to back
over input copies that leave L2 cold (benchmarks.common.bench_cudagraph_us). Under about 10 us a
fixed cost lies in the first figure and not in the second. This takes the recorded problems whose
fastest choice ran under ``--below-us`` (a dataset as collected, such as data/h100/realmodels), their
ATen choices and their ``--top`` fastest recorded Triton configs, and times each both ways, now, in
one process. Per problem: the choice each way finds fastest, what the collector's choice costs in the
graph (its graph time over the fastest graph time), and cuBLAS's time over the fastest Triton
config's each way.

    python -m benchmarks.studies.graph_timing --recorded data/h100/realmodels --out $OUT/graph_timing.json
"""

from __future__ import annotations

import argparse
import time

from benchmarks.common import bench_cudagraph_us, command_line, geomean, input_copies, report_header, stage, write_json
from torch_diode.collection.fast_sweep import FastSweep, launchers_for
from torch_diode.collection.kernel_compiler import precompile, variant_key
from torch_diode.collection.operands import layout_tensors
from torch_diode.collection.timing import flush_buffer, time_launchers
from torch_diode.dataset_io import load_datasets

# each config's graph replays its launches over every input copy for this long; shorter than e2e's
# REP_MS, as the graph of a short GEMM holds one launch per copy (up to 256) per repetition
GRAPH_REP_MS = 25


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recorded", nargs="+", required=True, help="dataset files or folders as collected")
    parser.add_argument("--below-us", type=float, default=12.0, help="problems whose fastest recorded time is under")
    parser.add_argument("--top", type=int, default=8, help="the fastest recorded Triton configs of each problem")
    parser.add_argument("--max-problems", type=int, default=60, help="the shortest problems first")
    parser.add_argument("--reps", type=int, default=FastSweep().reps, help="the collector's repetitions")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    for flag, value in (("--top", args.top), ("--max-problems", args.max_problems), ("--reps", args.reps)):
        if value < 1:
            parser.error(f"{flag}: expected at least 1, got {value}")
    return args


def short_problems(recorded: list[str], below_us: float) -> list[tuple]:
    """(problem, its successful timings fastest first) of the recorded problems whose fastest
    choice ran under ``below_us``, shortest first."""
    picked = []
    for _, problem, timings in load_datasets(recorded).problems():
        ok = sorted((t for t in timings if not t.failed), key=lambda t: t.time_us)
        if ok and ok[0].time_us < below_us:
            picked.append((problem, ok))
    return sorted(picked, key=lambda x: x[1][0].time_us)


def chosen(recorded: list[str], below_us: float, top: int, max_problems: int) -> list:
    """(problem, timings to measure): the problems under ``below_us``, shortest first, each with its
    ATen choices and its ``top`` fastest Triton configs as recorded."""
    picked = []
    for problem, ok in short_problems(recorded, below_us):
        aten = [t for t in ok if not t.config.is_tiled and t.config.template_id.startswith("aten::")]
        triton = [t for t in ok if t.config.is_tiled][:top]
        if aten and triton:
            picked.append((problem, aten + triton))
    return picked[:max_problems]


def measure(problem, timings, reps: int, flush) -> list[tuple[float | None, float | None]]:
    """(collector's time, graph time) in microseconds per timing's config; None where it failed."""
    copies = input_copies(layout_tensors(problem, "cuda"))
    configs = [t.config for t in timings]
    per_copy = [launchers_for(problem, configs, *x) for x in copies]
    collector = time_launchers(per_copy[0], reps, flush)
    out = []
    for i, ms in enumerate(collector):
        graph = None
        if ms is not None:
            try:
                graph = bench_cudagraph_us(lambda launch: launch(), [(c[i],) for c in per_copy], rep_ms=GRAPH_REP_MS)
            except Exception as e:  # kept: the row says it failed
                stage(f"{problem.short()} {configs[i].short()}: graph failed: {type(e).__name__}: {e}")
        out.append((None if ms is None else ms * 1000.0, graph))
    return out


def compare(problem, timings, times) -> dict | None:
    """One problem's row: each way's fastest choice and what the collector's costs in the graph."""
    rows = [
        (t.config.short(), t.config.is_tiled, t.time_us, c, g)
        for t, (c, g) in zip(timings, times)
        if c is not None and g is not None
    ]
    aten = [r for r in rows if not r[1]]
    triton = [r for r in rows if r[1]]
    if not aten or not triton:
        return None
    by_collector, by_graph = min(rows, key=lambda r: r[3]), min(rows, key=lambda r: r[4])
    by_recorded = min(rows, key=lambda r: r[2])
    best_aten, best_triton = min(aten, key=lambda r: r[4]), min(triton, key=lambda r: r[4])
    return {
        "problem": problem.short(),
        "fastest_graph_us": by_graph[4],
        "collector_pick": by_collector[0],
        "graph_pick": by_graph[0],
        "collector_pick_graph_slowdown": by_collector[4] / by_graph[4],
        "recorded_pick_graph_slowdown": by_recorded[4] / by_graph[4],
        "aten_over_triton_collector": min(r[3] for r in aten) / min(r[3] for r in triton),
        "aten_over_triton_graph": best_aten[4] / best_triton[4],
        "choices": [{"choice": r[0], "recorded_us": r[2], "collector_us": r[3], "graph_us": r[4]} for r in rows],
    }


def summarise(rows: list[dict]) -> dict:
    picks = [r["collector_pick_graph_slowdown"] for r in rows]
    return {
        "problems": len(rows),
        "different_pick": sum(r["collector_pick"] != r["graph_pick"] for r in rows),
        "collector_pick_graph_slowdown_geomean": geomean(picks),
        "collector_pick_graph_slowdown_worst": max(picks, default=None),
        "recorded_pick_graph_slowdown_geomean": geomean([r["recorded_pick_graph_slowdown"] for r in rows]),
        "aten_over_triton_collector_geomean": geomean([r["aten_over_triton_collector"] for r in rows]),
        "aten_over_triton_graph_geomean": geomean([r["aten_over_triton_graph"] for r in rows]),
        "aten_faster_collector_not_graph": sum(
            r["aten_over_triton_collector"] <= 1 < r["aten_over_triton_graph"] for r in rows
        ),
        "aten_faster_graph_not_collector": sum(
            r["aten_over_triton_graph"] <= 1 < r["aten_over_triton_collector"] for r in rows
        ),
    }


def main() -> int:
    args = parse_args()
    problems = chosen(args.recorded, args.below_us, args.top, args.max_problems)
    t0 = time.perf_counter()
    errors = precompile([(p, t.config) for p, ts in problems for t in ts if t.config.is_tiled], FastSweep().workers)
    compiled = sum(error is None for error in errors.values())
    stage(f"{len(problems)} problems, {compiled} of {len(errors)} kernels compiled in {time.perf_counter() - t0:.1f} s")
    flush = flush_buffer("cuda")
    rows: list[dict] = []
    for i, (problem, timings) in enumerate(problems):
        timings = [t for t in timings if not t.config.is_tiled or errors.get(variant_key(problem, t.config)) is None]
        row = compare(problem, timings, measure(problem, timings, args.reps, flush))
        if row:
            rows.append(row)
        write_json(args.out, {**report_header(), "command": command_line(), "summary": summarise(rows), "rows": rows})
        if (i + 1) % 10 == 0:
            stage(f"{i + 1} of {len(problems)} problems in {time.perf_counter() - t0:.0f} s")
    print(f"\n{'problem':34s} {'graph us':>8s} {'pick cost':>9s} {'aten/tri coll':>13s} {'graph':>6s}  picks")
    for r in sorted(rows, key=lambda r: -r["collector_pick_graph_slowdown"])[:15]:
        print(
            f"{r['problem'][:34]:34s} {r['fastest_graph_us']:8.2f} {r['collector_pick_graph_slowdown']:9.3f} "
            f"{r['aten_over_triton_collector']:13.3f} {r['aten_over_triton_graph']:6.3f}  "
            f"{r['collector_pick']} / {r['graph_pick']}"
        )
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in summarise(rows).items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

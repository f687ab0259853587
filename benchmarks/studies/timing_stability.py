"""Are the fast path's timings of short kernels the GPU's, or partly the host's? (one GPU run)

The fast path times a launch with events after a flush of the cache (timing.time_launchers).
While the GPU zeroes the flush buffer, the host enqueues the start event and the launch; where the
host takes longer than the flush, the GPU waits between the events and the kernel reads slower.
A short kernel leaves the GPU idle before every repetition, so each one depends on the host. This
times the configs of recorded problems (a dataset, such as `slow_picks deciding-configs` writes)
in several passes, every method in turn on each problem, with the host idle and with
``--busy`` processes spinning on its cores (as the collector's compile workers do while it times):

  flush   the method with no lead (the collector without timing.LEAD_US)
  lead    the same with ``--lead-us`` of GPU time (torch.cuda._sleep) queued before each flush

Per method and host state: how a config's timings differ from pass to pass (slowest / fastest - 1:
median, 90th percentile, share over 10%), and its time over the fastest that any method and state
measured for it (median, 90th percentile), by that fastest time; the recorded timings over the
same fastest.

    python -m benchmarks.studies.timing_stability --recorded FOCUS.msgpack.gz --out $OUT/timing_stability.json
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import time

import numpy as np

from benchmarks.common import command_line, report_header, stage, write_json
from torch_diode.collection.fast_sweep import FastSweep, launchers_for
from torch_diode.collection.kernel_compiler import precompile, variant_key
from torch_diode.collection.operands import layout_tensors
from torch_diode.collection.timing import flush_buffer, time_launchers
from torch_diode.dataset_io import load_datasets

# the fastest time of a config, in microseconds: the bins its rows are summarised in
LENGTH_BINS_US = ((0.0, 10.0), (10.0, 30.0), (30.0, float("inf")))
STATES = ("idle", "busy")  # the host while it times: no other work, or --busy processes spinning


def _spin(ready) -> None:
    ready.set()
    while True:
        pass


class BusyHost:
    """``n`` processes spinning on the host's cores while the context is open (entered once
    every one of them spins)."""

    def __init__(self, n: int):
        self.n = n
        self.procs: list = []

    def __enter__(self) -> BusyHost:
        ctx = multiprocessing.get_context("spawn")
        ready = [ctx.Event() for _ in range(self.n)]
        self.procs = [ctx.Process(target=_spin, args=(r,), daemon=True) for r in ready]
        for p in self.procs:
            p.start()
        for r in ready:
            r.wait(timeout=120)
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.join()


def summarise(times: dict, floor: dict, keys: list) -> dict:
    """Pass-to-pass spread and time over the floor of one method and host state."""
    spreads, over, lengths = [], [], []
    for k in keys:
        v = [t for t in times.get(k, []) if t is not None]
        if len(v) < 2 or floor.get(k) is None:
            continue
        spreads.append(max(v) / min(v) - 1)
        over.append(min(v) / floor[k])
        lengths.append(floor[k])
    return by_length(np.array(over), np.array(lengths), {"pass_spread": np.array(spreads)})


def by_length(over: np.ndarray, lengths: np.ndarray, spread: dict[str, np.ndarray]) -> dict:
    """Per bin of LENGTH_BINS_US (by ``lengths``): the configs, their time over the floor (median,
    90th percentile), and the pass-to-pass spread where ``spread`` gives it."""
    out = {}
    for lo, hi in LENGTH_BINS_US:
        sel = (lengths >= lo) & (lengths < hi)
        if not sel.any():
            continue
        row: dict = {"configs": int(sel.sum())}
        for name, v in spread.items():
            row[f"{name}_median"] = float(np.median(v[sel]))
            row[f"{name}_p90"] = float(np.quantile(v[sel], 0.9))
            row[f"{name}_over_10_percent"] = float((v[sel] > 0.1).mean())
        row["over_floor_median"] = float(np.median(over[sel]))
        row["over_floor_p90"] = float(np.quantile(over[sel], 0.9))
        out[f"{lo:g}-{hi:g}us"] = row
    return out


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recorded", nargs="+", required=True, help="dataset files of the problems and configs")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--lead-us", type=float, default=100.0, help="GPU time queued before each flush (lead)")
    parser.add_argument(
        "--busy", type=int, default=max(1, (os.cpu_count() or 2) - 1), help="spinning processes in the busy state"
    )
    parser.add_argument("--reps", type=int, default=FastSweep().reps)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.passes < 2:
        parser.error(f"--passes: expected at least 2, got {args.passes}")
    return args


def compiled_problems(recorded: list[str]) -> list:
    """The recorded problems with their successful timings, less the configs that do not compile
    (a launcher would compile them in this process)."""
    source = load_datasets(recorded)
    problems = [(p, [t for t in ts if not t.failed]) for _, p, ts in source.problems()]
    pairs = [(p, t.config) for p, ts in problems for t in ts if t.config.is_tiled]
    t0 = time.perf_counter()
    errors = precompile(pairs, FastSweep().workers, progress=False)
    stage(f"{len(problems)} problems, {len(errors)} kernels compiled in {time.perf_counter() - t0:.1f} s")
    return [
        (p, [t for t in ts if not t.config.is_tiled or errors.get(variant_key(p, t.config)) is None])
        for p, ts in problems
    ]


def measure(problems: list, methods: dict[str, float], args: argparse.Namespace) -> dict:
    """(method, host state) -> (problem, config) -> the time of each pass in microseconds (None
    where it failed)."""
    flush = flush_buffer("cuda")
    times: dict[tuple[str, str], dict] = {(m, s): {} for m in methods for s in STATES}
    for i in range(args.passes):
        for state in STATES:
            t0 = time.perf_counter()
            with BusyHost(args.busy) if state == "busy" else contextlib.nullcontext():
                for problem, timings in problems:
                    a, b, out, bias = layout_tensors(problem, "cuda")
                    launchers = launchers_for(problem, [t.config for t in timings], a, b, out, bias)
                    # the methods take turns on each problem, in an order that alternates by pass
                    for method in list(methods)[:: 1 if i % 2 == 0 else -1]:
                        got = time_launchers(launchers, args.reps, flush, lead_us=methods[method])
                        for t, ms in zip(timings, got):
                            times[method, state].setdefault((problem, t.config), []).append(
                                None if ms is None else ms * 1000.0
                            )
            stage(f"pass {i + 1}, host {state}: {time.perf_counter() - t0:.1f} s")
    return times


def summaries(problems: list, times: dict) -> tuple[dict, dict]:
    """(per "method state": :func:`summarise`, the recorded timings over the floor by length)."""
    keys = [(p, t.config) for p, ts in problems for t in ts]
    floor = {}
    for k in keys:
        v = [t for d in times.values() for t in d.get(k, []) if t is not None]
        floor[k] = min(v) if v else None
    recorded = {(p, t.config): t.time_us for p, ts in problems for t in ts}
    rows = {f"{m} {s}": summarise(d, floor, keys) for (m, s), d in times.items()}
    rec = [(recorded[k] / floor[k], floor[k]) for k in keys if floor[k]]
    return rows, by_length(np.array([r for r, _ in rec]), np.array([n for _, n in rec]), {})


def print_table(rows: dict, rec_rows: dict) -> None:
    print(
        f"\n{'method, host':16s} {'fastest':>10s} {'configs':>7s} {'pass spread':>11s} {'p90':>6s} {'>10%':>5s} "
        f"{'over floor':>10s} {'p90':>6s}"
    )
    for name, by_len in list(rows.items()) + [("recorded", rec_rows)]:
        for length, r in by_len.items():
            spread = (
                f"{r['pass_spread_median']:11.3f} {r['pass_spread_p90']:6.3f} "
                f"{100 * r['pass_spread_over_10_percent']:4.0f}%"
                if "pass_spread_median" in r
                else f"{'':11s} {'':6s} {'':5s}"
            )
            print(
                f"{name:16s} {length:>10s} {r['configs']:7d} {spread} {r['over_floor_median']:10.3f} "
                f"{r['over_floor_p90']:6.3f}"
            )


def main() -> int:
    args = parse_args()
    problems = compiled_problems(args.recorded)
    methods = {"flush": 0.0, "lead": args.lead_us}
    rows, rec_rows = summaries(problems, measure(problems, methods, args))
    report = {
        **report_header(),
        "command": command_line(),
        "recorded": args.recorded,
        "passes": args.passes,
        "lead_us": args.lead_us,
        "busy_processes": args.busy,
        "reps": args.reps,
        "problems": len(problems),
        "methods": rows,
        "recorded_over_floor": rec_rows,
    }
    write_json(args.out, report)
    print_table(rows, rec_rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""benchmarks/e2e.py's reports: the summary of their rows (ratios of one method to another), the
plot and the printed table, the report written after each worker, ``--compile-repeats``' rounds
folded into one row, the draw's slices (``--part``) and ``--combine``, which joins several runs'
reports into one."""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

from benchmarks.common import combinable_reports, geomean, runtime_over_default, write_json

# the methods a report's rows may hold, in the order of its table and plot
METHODS = ("default", "diode_top1", "diode_top3", "max_autotune", "exhaustive", "diode_max_autotune_mode")
GUIDE_MODE = "diode_max_autotune_mode"  # compiled as the integration guide compiles
RUNTIME = (  # the report's description of its runtimes
    "do_bench_cudagraph median over input copies (runtime_us), on one copy (runtime_cudagraph_warm_l2_us); "
    "do_bench median (runtime_do_bench_us)"
)


# ----- summary ----------------------------------------------------------------------------------
def ratios(rows: list[dict], method: str, base: str, field: str) -> list[float]:
    """Per row measured by both: ``method``'s ``field`` over ``base``'s."""
    return best_of_ratios(rows, method, (base,), field)


def over_default(row: dict, method: str) -> float | None:
    """``method``'s runtime over default mode's (:func:`benchmarks.common.runtime_over_default`);
    None where either is missing."""
    m = row["methods"].get(method, {})
    if "runtime_us" not in m:
        return None
    if method == "default":
        return 1.0
    default_us = row["methods"].get("default", {}).get("runtime_us")
    return runtime_over_default(m["runtime_us"], m.get("default_runtime_us"), default_us)


def best_of_ratios(rows: list[dict], method: str, bases: tuple[str, ...], field: str = "runtime_us") -> list[float]:
    """Per row measured by ``method`` and every base: its ``field`` over the smallest base's. A
    runtime goes through default mode's (:func:`over_default`) where every one has a figure
    against it: two methods timed in other processes (another run, another machine) compare as
    the quotient of their ratios to the default timing each was paired with."""
    out = []
    for r in rows:
        if field == "runtime_us":
            mine, theirs = over_default(r, method), [over_default(r, b) for b in bases]
            if mine is not None and None not in theirs:
                out.append(mine / min(theirs))
                continue
        m = r["methods"].get(method, {})
        base_values = [r["methods"].get(b, {}).get(field) for b in bases]
        if field in m and all(v is not None for v in base_values):
            out.append(m[field] / min(base_values))
    return out


def sole_pick(row: dict) -> str:
    """The one choice diode top-1 handed Inductor for the row's first GEMM; "" where it decided
    none or handed several (an unsure decision, which Inductor benchmarks)."""
    decisions = row["methods"].get("diode_top1", {}).get("diode", {}).get("decisions") or [{}]
    chosen = decisions[0].get("chosen") or []
    return chosen[0] if len(chosen) == 1 else ""


def summarize(rows: list[dict]) -> dict[str, Any]:
    s: dict[str, Any] = {}
    for method in ("diode_top1", "diode_top3"):
        suffix = "" if method == "diode_top1" else "_top3"
        compile_vs_ma = ratios(rows, "max_autotune", method, "compile_s")  # max-autotune time / diode time
        compile_vs_default = ratios(rows, method, "default", "compile_s")
        rt_ma = ratios(rows, method, "max_autotune", "runtime_us")
        rt_ex = ratios(rows, method, "exhaustive", "runtime_us")
        s[f"compile_speedup_vs_max_autotune_geomean{suffix}"] = geomean(compile_vs_ma)
        s[f"compile_ratio_vs_default_geomean{suffix}"] = geomean(compile_vs_default)
        s[f"runtime_ratio_vs_max_autotune_geomean{suffix}"] = geomean(rt_ma)
        s[f"runtime_ratio_vs_max_autotune_worst{suffix}"] = max(rt_ma) if rt_ma else None
        s[f"runtime_ratio_vs_exhaustive_geomean{suffix}"] = geomean(rt_ex)
        s[f"rows_compared{suffix}"] = len(rt_ma)
        s[f"exhaustive_rows{suffix}"] = len(rt_ex)
    for method in ("diode_top1", "diode_top3"):
        suffix = "" if method == "diode_top1" else "_top3"
        db = ratios(rows, method, "max_autotune", "runtime_do_bench_us")
        s[f"runtime_ratio_vs_max_autotune_geomean_do_bench{suffix}"] = geomean(db)
        s[f"runtime_ratio_vs_max_autotune_worst_do_bench{suffix}"] = max(db) if db else None
    guide = ratios(rows, GUIDE_MODE, "diode_top1", "compile_s")
    if guide:  # what mode="max-autotune" adds to diode's compile: Inductor autotuning the non-GEMM kernels
        s["compile_ratio_max_autotune_mode_vs_diode_top1_geomean"] = geomean(guide)
        s["compile_ratio_max_autotune_mode_vs_default_geomean"] = geomean(
            ratios(rows, GUIDE_MODE, "default", "compile_s")
        )
        s["compile_ratio_diode_top1_vs_default_geomean_same_rows"] = geomean(
            [
                r
                for row in rows
                if GUIDE_MODE in row["methods"]
                for r in ratios([row], "diode_top1", "default", "compile_s")
            ]
        )
        # per call as the caller sees it: the mode replays its own CUDA graphs, diode_top1 launches
        # its kernels one by one (the mode's graphs cannot be captured again to time its kernels alone)
        s["wall_ratio_max_autotune_mode_vs_diode_top1_geomean"] = geomean(
            ratios(rows, GUIDE_MODE, "diode_top1", "wall_us_per_call")
        )
        s["rows_compared_max_autotune_mode"] = len(guide)
    s["runtime_ratio_max_autotune_vs_default_geomean"] = geomean(ratios(rows, "max_autotune", "default", "runtime_us"))
    s["runtime_ratio_diode_top1_vs_default_geomean"] = geomean(ratios(rows, "diode_top1", "default", "runtime_us"))
    # the targets: per GEMM, diode top-1 against the faster of what the user had (default mode or
    # max-autotune), and against default mode; the whole models' compile time against default mode's
    gemms = [r for r in rows if r["kind"] == "gemm"]
    best = best_of_ratios(gemms, "diode_top1", ("default", "max_autotune"))
    s["runtime_ratio_vs_best_of_default_and_max_autotune_geomean"] = geomean(best)
    s["runtime_ratio_vs_best_of_default_and_max_autotune_worst"] = max(best) if best else None
    vs_default = ratios(gemms, "diode_top1", "default", "runtime_us")
    # what a Triton pick adds to a GEMM's compile (its kernel's compile) against an ATen pick's
    # (none), over the decisions that handed Inductor one choice
    for kind in ("triton", "aten"):
        picked = [r for r in gemms if sole_pick(r).startswith(kind)]
        s[f"compile_ratio_vs_default_geomean_{kind}_first_picks"] = geomean(
            ratios(picked, "diode_top1", "default", "compile_s")
        )
        s[f"{kind}_first_picks"] = len(picked)
    s["runtime_ratio_vs_default_geomean"] = geomean(vs_default)
    s["runtime_ratio_vs_default_worst"] = max(vs_default) if vs_default else None
    s["gemm_rows_compared"] = len(best)
    s["gemm_rows_compared_with_default"] = len(vs_default)
    if any("run" in timing for r in rows for timing in r["methods"].values()):  # combined: which run timed what
        runs = [
            (r["methods"]["default"].get("run"), r["methods"]["diode_top1"].get("run"))
            for r in gemms
            if all("runtime_us" in r["methods"].get(m, {}) for m in ("default", "diode_top1"))
        ]
        # a run not known (None) cannot vouch that both were timed together
        s["gemm_rows_default_and_diode_top1_from_different_runs"] = sum(
            1 for default, diode in runs if default is None or diode is None or default != diode
        )
    models_ = [r for r in rows if r["kind"] == "model"]
    models_compile = ratios(models_, "diode_top1", "default", "compile_s")
    s["compile_ratio_vs_default_models_geomean"] = geomean(models_compile)
    s["runtime_ratio_vs_default_models_geomean"] = geomean(ratios(models_, "diode_top1", "default", "runtime_us"))
    s["compile_speedup_vs_max_autotune_models_geomean"] = geomean(
        ratios(models_, "max_autotune", "diode_top1", "compile_s")
    )
    s["model_rows_compared"] = len(models_compile)
    return s


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 6))
    markers = dict(zip(METHODS, "osD^vP"))
    for method in METHODS:
        both = [
            (
                r["methods"][method]["compile_s"],
                r["methods"][method]["runtime_us"] / r["methods"]["default"]["runtime_us"],
            )
            for r in rows
            if "runtime_us" in r["methods"].get(method, {}) and "runtime_us" in r["methods"].get("default", {})
        ]
        if both:
            ax.scatter([x for x, _ in both], [y for _, y in both], label=method, marker=markers[method], alpha=0.75)
    ax.set_xscale("log")
    ax.set_xlabel("compile time, first call (s, log scale)")
    ax.set_ylabel("runtime relative to default mode (lower is faster)")
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_title("torch-diode vs stock Inductor, per GEMM and model")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def print_table(rows: list[dict], summary: dict) -> None:
    shown = [m for m in METHODS if any(m in r["methods"] for r in rows)]
    print(f"\n{'item':52s} " + " ".join(f"{m[:21]:>21s}" for m in shown))
    print(f"{'':52s} " + " ".join(f"{'compile s / run us':>21s}" for _ in shown))
    for r in rows:
        cells = []
        for m in shown:
            v = r["methods"].get(m)
            cells.append(
                f"{'-':>21s}"
                if not v
                else f"{'error':>21s}"
                if "error" in v
                else f"{v['compile_s']:8.2f} /{v.get('runtime_us', math.nan):10.1f}"
            )
        print(f"{r['label'][:52]:52s} " + " ".join(f"{c:>21s}" for c in cells))
    print()
    for k, v in summary.items():
        print(f"{k:48s} {v:.3f}" if isinstance(v, float) else f"{k:48s} {v}")


# ----- the draw and its slices (--part) ---------------------------------------------------------
def part_arg(text: str) -> tuple[int, int]:
    """``I/N`` of --part: 1 <= I <= N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N (e.g. 1/2)") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be between 1 and N")
    return i, n


def part_of(items: list, part: tuple[int, int] | None) -> list:
    """The ``part`` (I, N) slice of ``items``: N contiguous slices whose sizes differ by at most one."""
    if part is None:
        return items
    i, n = part
    return items[(i - 1) * len(items) // n : i * len(items) // n]


def draw_of(shapes: list) -> dict | str | None:
    """What a combined report's runs measured, from each run's ``shapes``: the draw they share,
    where the runs of its slices (--part) cover it, 1/N to N/N; a line saying they differ otherwise;
    None where no run says."""
    if all(s is None for s in shapes):
        return None
    differ = "differs between the runs: see each run's"
    if not all(isinstance(s, dict) for s in shapes):
        return differ
    draws = {json.dumps({k: v for k, v in s.items() if k != "part"}, sort_keys=True) for s in shapes}
    parts = {s["part"] for s in shapes if "part" in s}
    counts = {part_arg(part)[1] for part in parts}
    covered = not parts or (len(counts) == 1 and parts == {f"{i}/{n}" for n in counts for i in range(1, n + 1)})
    return json.loads(draws.pop()) if len(draws) == 1 and covered else differ


# ----- the report: written after each worker, combined (--combine) ------------------------------
def timed_over_input_copies(rows: list[dict]) -> bool | None:
    """Whether ``rows``' runtimes were timed over input copies (``input_copies`` in each measured
    method's record) or on one copy (no ``input_copies``); None where no method has a runtime."""
    timed = [m for row in rows for m in row["methods"].values() if "runtime_cudagraph_us" in m]
    return None if not timed else all("input_copies" in m for m in timed)


def combine(args: argparse.Namespace) -> int:
    """One report from several runs' reports: their rows, a summary over all of them."""
    parts = combinable_reports(args.combine, args.out, ("device", "torch", "triton", "model"))
    timings = {timed_over_input_copies(part["rows"]) for part in parts} - {None}
    if len(timings) > 1:
        raise SystemExit(
            "--combine: some reports time the runtime over input copies and some on one copy "
            "(runtime_cudagraph_warm_l2_us); their rows do not compare"
        )
    per_run = (
        "command",
        "date",
        "device",
        "torch",
        "triton",
        "workers",
        "note",
        "pad_mm",
        "pad_mm_pass",
        "shapes",
        "compile_repeats",
    )
    dropped = ("command", "date", "workers", "pad_mm_pass", "rows", "summary", "runs", "note", "compile_repeats")
    report = {k: v for k, v in parts[0].items() if k not in dropped}
    if timings == {True}:  # rows timed over input copies: the report says how (RUNTIME)
        report["runtime"] = RUNTIME
    for key in ("pad_mm", "shapes"):
        report.pop(key, None)
    part_runs = [part.get("runs") or [{k: part[k] for k in per_run if k in part}] for part in parts]
    runs = [
        {**{k: part[k] for k in ("pad_mm", "shapes") if k in part}, **run}
        for part, its_runs in zip(parts, part_runs)
        for run in its_runs
    ]
    pad_mm = {json.dumps(run.get("pad_mm"), sort_keys=True) for run in runs}
    if len(pad_mm) == 1 and "pad_mm" in runs[0]:
        report["pad_mm"] = runs[0]["pad_mm"]
    elif len(pad_mm) > 1:
        report["pad_mm"] = "differs between the runs: see each run's"
    shapes = draw_of([run.get("shapes") for run in runs])
    if shapes is not None:
        report["shapes"] = shapes
    report["runs"] = runs
    complete = all(part.get("complete", True) for part in parts)
    rc = finish(report, run_tagged_rows(parts, [len(its_runs) for its_runs in part_runs]), args, complete)
    apart = report["summary"].get("gemm_rows_default_and_diode_top1_from_different_runs")
    if apart:
        print(
            f"--combine: {apart} GEMM rows compare diode_top1 with default mode timed in another run "
            "(other processes, perhaps another machine): measure both in one run to compare them"
        )
    return rc


def run_tagged_rows(parts: list[dict], run_counts: list[int]) -> list[dict]:
    """The parts' rows, each method's timings tagged with the index of the run that measured them
    in the combined report's ``runs`` (``run_counts``: each part's runs there). A part that is itself
    a combined report keeps its tags, offset; where it holds several runs without tags, which of
    them measured a timing is not known (``None``)."""
    rows, first = [], 0
    for part, count in zip(parts, run_counts):
        for row in part["rows"]:
            methods = {}
            for method, timing in row["methods"].items():
                run = timing.get("run", 0 if count == 1 else None)
                methods[method] = {**timing, "run": None if run is None else first + run}
            rows.append({**row, "methods": methods})
        first += count
    return rows


def write_e2e_report(report: dict[str, Any], rows: list[dict], out: str | Path, complete: bool) -> None:
    """Rows merged by label (a later row's methods win) and their summary, written to ``out`` in one
    step (a run stopped between two writes leaves the last whole report in place). ``complete``: every
    worker has run (a report written after each worker says which ran, ``workers``)."""
    merged: dict[str, dict] = {}
    for row in rows:
        merged.setdefault(row["label"], {k: v for k, v in row.items() if k != "methods"} | {"methods": {}})
        merged[row["label"]]["methods"].update(row["methods"])
    report["complete"] = complete
    report["rows"] = list(merged.values())
    report["summary"] = summarize(report["rows"])
    write_json(out, report)


def finish(report: dict[str, Any], rows: list[dict], args: argparse.Namespace, complete: bool = True) -> int:
    """The report (``complete``: of every worker), then the plot and table."""
    write_e2e_report(report, rows, args.out, complete)
    if args.plot:
        plot(report["rows"], args.plot)
    print_table(report["rows"], report["summary"])
    return 0


def merge_compile_repeats(rows: list[dict]) -> list[dict]:
    """``rows`` with each model's measurements of a method by --compile-repeats' rounds folded into
    one, the first that has a compile time (its runtimes are kept): ``compile_s`` becomes the median
    of every round's compile time, listed in ``compile_s_repeats``."""
    records: dict[tuple[str, str], list[dict]] = {}
    out: list[dict] = []
    for row in rows:
        if row["kind"] != "model":
            out.append({**row, "methods": {k: dict(m) for k, m in row["methods"].items()}})
            continue
        methods: dict[str, dict] = {}
        for method, m in row["methods"].items():
            key = (row["label"], method)
            if key in records:
                records[key].append(m)
            else:
                methods[method] = {}  # filled below, where the first measurement of it lands
                records[key] = [m]
        if methods:
            out.append({**row, "methods": methods})
    for row in out:
        for method in row["methods"] if row["kind"] == "model" else ():
            measured = records[(row["label"], method)]
            timed = [m for m in measured if "compile_s" in m]
            kept = dict(timed[0] if timed else measured[0])
            if len(timed) > 1:
                kept["compile_s_repeats"] = [m["compile_s"] for m in timed]
                kept["compile_s"] = statistics.median(kept["compile_s_repeats"])
            row["methods"][method] = kept
    return out

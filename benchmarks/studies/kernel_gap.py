"""Does a collected Triton config run as Inductor's kernel of the same config runs? (one GPU run)

For each ``--problem``, stock max-autotune (DEFAULT configs) benchmarks its generated kernels,
recorded by torch_diode.collect. Then the collector's kernel of each of the ``--top`` Triton
configs (mm and bmm templates) Inductor timed fastest is timed by the collector's method
(timing.time_launchers) in variants of :mod:`torch_diode.collection.triton_mm`'s kernel, each
chosen by kernel_spec's settings (:data:`VARIANTS`) and compiled first in the collector's worker
processes, as a collection compiles them: as the collector compiles it (sizes specialised as
Triton specialises ints); with K, then M, N and K, then every size and stride held as constants
(``kernel_spec.CONSTANT_INTS``; the last as in Inductor's generated kernels); and with sizes not
specialised at all. Per problem and config: the reference time and each variant's, so that a gap
between the collector and Inductor can be put down to the ints it compiles as runtime arguments
(or not), and the cheapest constants that close it found.

    python -m benchmarks.studies.kernel_gap --problem "mm 308x320x768 float16 NT" --out $OUT/kernel_gap.json

``--recorded DATASET...`` takes instead the problems of collected data whose fastest choice ran
under ``--below-us`` (shortest first, at most ``--max-problems``), their configs ranked by the
recorded timings, with no Inductor run: how widely the variants differ.

    python -m benchmarks.studies.kernel_gap --recorded data/h100/realmodels --out $OUT/kernel_gap_recorded.json
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, report_header, stage, write_json
from benchmarks.studies.collector_fault import parse_problem
from benchmarks.studies.graph_timing import short_problems
from torch_diode.collection import collect, kernel_spec
from torch_diode.collection.fast_sweep import FastSweep
from torch_diode.collection.inductor_sweep import compile_and_run, inductor_settings
from torch_diode.collection.kernel_compiler import precompile
from torch_diode.collection.operands import layout_tensors
from torch_diode.collection.timing import flush_buffer, time_launchers
from torch_diode.dataset_io import load_dataset

# each variant's kernel_spec settings: the collector's kernel as it collects, K, then M, N and K,
# then every size and stride held as constants (Inductor's kernels), sizes not specialised at all
VARIANTS = {
    "collector": {},
    "k_constexpr": {"CONSTANT_INTS": ("K",)},
    "sizes_constexpr": {"CONSTANT_INTS": ("M", "N", "K")},
    "all_constexpr": {"CONSTANT_INTS": kernel_spec.ALL_INTS},
    "sizes_unspecialized": {"SPECIALIZE_SIZES": False},
}
CONSTANTS = [v for v, settings in VARIANTS.items() if "CONSTANT_INTS" in settings]
TEMPLATES = ("triton::mm", "triton::bmm")  # the kernels the variants change (not the TMA template)


@contextlib.contextmanager
def kernel_settings(settings: dict):
    """kernel_spec's switches set to ``settings`` meanwhile (the compile workers take them over)."""
    before = {name: getattr(kernel_spec, name) for name in settings}
    for name, value in settings.items():
        setattr(kernel_spec, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(kernel_spec, name, value)


def precompiled(chosen: list[tuple], top: int) -> list[tuple]:
    """(problem, reference timings, the ``top`` Triton configs by them) of each problem, every
    variant's kernels of those configs compiled in the collector's worker processes first (so
    that the timing process only loads them)."""
    picked = [
        (p, ts, sorted((t for t in ts if t.config.template_id in TEMPLATES), key=lambda t: t.time_us)[:top])
        for p, ts in chosen
    ]
    for variant, settings in VARIANTS.items():
        start = time.perf_counter()
        with kernel_settings(settings):
            errors = precompile([(p, t.config) for p, _, triton in picked for t in triton], FastSweep().workers)
        failed = sum(e is not None for e in errors.values())
        stage(f"{variant}: {len(errors)} kernels compiled ({failed} failed) in {time.perf_counter() - start:.1f} s")
    return picked


def inductor_timings(problem) -> list:
    """Stock max-autotune's timings of the problem's choices (its own benchmark)."""
    path = Path(tempfile.mkdtemp()) / "inductor.json"
    with collect(path):
        compile_and_run(problem, "cuda", inductor_settings("DEFAULT", "ATEN,TRITON"))
    return [t for _, _, ts in load_dataset(path).problems() for t in ts if not t.failed]


def measure(problem, timings: list, triton: list, reps: int, flush, reference: str) -> dict:
    """Each variant's timings of the problem's Triton configs ``triton``, beside the ``reference``
    timings (Inductor's or the recorded ones)."""
    from torch_diode.collection.triton_mm import make_launcher

    tensors = layout_tensors(problem, "cuda")
    rows = []
    for t in triton:
        fns = []
        for settings in VARIANTS.values():
            with kernel_settings(settings):  # the launcher keeps the kernel these settings pick
                fns.append(make_launcher(*tensors, t.config))
        got = time_launchers(fns, reps, flush)
        rows.append(
            {"config": t.config.short(), f"{reference}_us": t.time_us}
            | {f"{v}_us": None if ms is None else ms * 1000.0 for v, ms in zip(VARIANTS, got)}
        )
    return {
        "problem": problem.short(),
        f"{reference}_aten": {t.config.template_id: t.time_us for t in timings if not t.config.is_tiled},
        "rows": rows,
    }


def summarise(problems: list[dict]) -> dict:
    """The collector's kernel over each constant variant's, over every config timed both ways."""
    out: dict = {}
    for variant in CONSTANTS:
        ratios = [
            r["collector_us"] / r[f"{variant}_us"]
            for p in problems
            for r in p["rows"]
            if r["collector_us"] and r.get(f"{variant}_us")
        ]
        out[f"collector_over_{variant}"] = {
            "configs": len(ratios),
            "median": float(np.median(ratios)) if ratios else None,
            "p10": float(np.quantile(ratios, 0.1)) if ratios else None,
            "p90": float(np.quantile(ratios, 0.9)) if ratios else None,
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", action="append", help="OP [Bx]MxNxK DTYPE LAYOUT (repeatable)")
    parser.add_argument("--recorded", nargs="+", help="collected data instead of --problem and Inductor")
    parser.add_argument("--below-us", type=float, default=12.0, help="with --recorded: the problems under")
    parser.add_argument("--max-problems", type=int, default=30, help="with --recorded")
    parser.add_argument("--top", type=int, default=6, help="the fastest Triton configs per problem")
    parser.add_argument("--reps", type=int, default=FastSweep().reps)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    for flag, value in (("--top", args.top), ("--max-problems", args.max_problems), ("--reps", args.reps)):
        if value < 1:
            parser.error(f"{flag}: expected at least 1, got {value}")
    if bool(args.problem) == bool(args.recorded):
        parser.error("give --problem or --recorded (one of them)")
    if args.recorded:
        reference, chosen = "recorded", short_problems(args.recorded, args.below_us)[: args.max_problems]
    else:
        problems = [parse_problem(label) for label in args.problem]
        # Inductor first, every problem, before this process compiles or allocates anything of its own
        reference, chosen = "inductor", [(p, inductor_timings(p)) for p in problems]
    picked = precompiled(chosen, args.top)
    flush = flush_buffer("cuda")
    report = {**report_header(), "command": command_line(), "reference": reference, "problems": []}
    for problem, timings, triton in picked:
        report["problems"].append(measure(problem, timings, triton, args.reps, flush, reference))
        write_json(args.out, {**report, "summary": summarise(report["problems"])})
    for p in report["problems"]:
        print(f"\n{p['problem']}: {reference} ATen {p[f'{reference}_aten']}")
        print(f"{'config':34s} {reference:>9s} " + " ".join(f"{v:>19s}" for v in VARIANTS))
        for r in p["rows"]:
            cells = " ".join(f"{r[f'{v}_us']:19.2f}" if r[f"{v}_us"] else f"{'-':>19s}" for v in VARIANTS)
            print(f"{r['config']:34s} {r[f'{reference}_us']:9.2f} {cells}")
    print(summarise(report["problems"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

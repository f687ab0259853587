"""Does a collected Triton config run as Inductor's kernel of the same config runs? (one GPU run)

For each ``--problem``, stock max-autotune (DEFAULT configs) benchmarks its generated kernels,
recorded by torch_diode.collect. Then the collector's kernel of each of the ``--top`` Triton
configs Inductor timed fastest is timed by the collector's method (timing.time_launchers) in
variants of :mod:`torch_diode.collection.triton_mm`'s kernel (as
``triton_mm.retyped_kernel`` builds them, ``kernel_spec.CONSTANT_INTS``'s kernels): as the collector compiles it (sizes
specialised as Triton specialises ints); K, then M, N and K, then every size and stride a
compile-time constant (the last as in Inductor's generated kernel); and sizes not specialised at
all. Per problem and config: Inductor's time and each variant's, so that a gap between the
collector and Inductor on a shape can be put down to the ints it compiles as runtime arguments
(or not), and the cheapest constants that close it found.

    python -m benchmarks.studies.kernel_gap --problem "mm 308x320x768 float16 NT" --out $OUT/kernel_gap.json

``--recorded DATASET...`` takes instead the mm/addmm problems of collected data whose fastest
choice ran under ``--below-us`` (shortest first, at most ``--max-problems``), their configs ranked
by the recorded timings, with no Inductor run: how widely the variants differ.

    python -m benchmarks.studies.kernel_gap --recorded data/h100/realmodels --out $OUT/kernel_gap_recorded.json
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, report_header, write_json
from benchmarks.studies.collector_fault import parse_problem
from torch_diode.collection import collect, kernel_spec
from torch_diode.collection.fast_sweep import FastSweep
from torch_diode.collection.inductor_sweep import compile_and_run, inductor_settings
from torch_diode.collection.operands import layout_tensors
from torch_diode.collection.timing import flush_buffer, time_launchers
from torch_diode.dataset_io import load_dataset, load_datasets

# the kernel's ints made compile-time constants in each constant variant (Inductor's kernels: all)
CONSTANTS = {
    "k_constexpr": ("K",),
    "sizes_constexpr": ("M", "N", "K"),
    "all_constexpr": kernel_spec.MM_INTS,
}
VARIANTS = ("collector", *CONSTANTS, "sizes_unspecialized")


def launcher(problem, config, variant: str, tensors: tuple, constant_kernels: dict):
    """The config's kernel on ``tensors`` in ``variant`` (mm/addmm)."""
    from torch_diode.collection import triton_mm

    kernel, grid, spec = triton_mm.launch_args(*tensors, config)
    if variant in constant_kernels:
        kernel = constant_kernels[variant]
    elif variant == "sizes_unspecialized":
        kernel = triton_mm._mm_kernel
    args, meta = spec["args"], spec["meta"]
    return lambda: kernel[grid](*args, **meta)


def inductor_timings(problem) -> list:
    """Stock max-autotune's timings of the problem's choices (its own benchmark)."""
    path = Path(tempfile.mkdtemp()) / "inductor.json"
    with collect(path):
        compile_and_run(problem, "cuda", inductor_settings("DEFAULT", "ATEN,TRITON"))
    return [t for _, _, ts in load_dataset(path).problems() for t in ts if not t.failed]


def recorded_timings(paths: list[str], below_us: float, max_problems: int) -> list[tuple]:
    """(problem, recorded timings): the mm/addmm problems of ``paths`` under ``below_us``, shortest first."""
    picked = []
    for _, problem, timings in load_datasets(paths).problems():
        ok = [t for t in timings if not t.failed]
        if problem.op in ("mm", "addmm") and ok and min(t.time_us for t in ok) < below_us:
            picked.append((min(t.time_us for t in ok), problem, ok))
    picked.sort(key=lambda x: x[0])
    return [(p, ts) for _, p, ts in picked[:max_problems]]


def measure(problem, timings: list, top: int, reps: int, flush, constant_kernels: dict, reference: str) -> dict:
    """Each variant's timings of the problem's ``top`` Triton configs by the ``reference``
    timings (Inductor's or the recorded ones)."""
    aten = [t for t in timings if not t.config.is_tiled]
    triton = sorted((t for t in timings if t.config.template_id == "triton::mm"), key=lambda t: t.time_us)[:top]
    tensors = layout_tensors(problem, "cuda")
    rows = []
    for t in triton:
        fns = [launcher(problem, t.config, v, tensors, constant_kernels) for v in VARIANTS]
        got = time_launchers(fns, reps, flush)
        rows.append(
            {"config": t.config.short(), f"{reference}_us": t.time_us}
            | {f"{v}_us": None if ms is None else ms * 1000.0 for v, ms in zip(VARIANTS, got)}
        )
    return {
        "problem": problem.short(),
        f"{reference}_aten": {t.config.template_id: t.time_us for t in aten},
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
    parser.add_argument("--problem", action="append", help="mm/addmm: OP MxNxK DTYPE LAYOUT")
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
        reference, chosen = "recorded", recorded_timings(args.recorded, args.below_us, args.max_problems)
    else:
        problems = [parse_problem(label) for label in args.problem]
        if any(p.op not in ("mm", "addmm") for p in problems):
            parser.error("--problem: mm or addmm only (the constexpr variant is the mm kernel's)")
        # Inductor first, every problem, before this process compiles or allocates anything of its own
        reference, chosen = "inductor", [(p, inductor_timings(p)) for p in problems]
    from torch_diode.collection.triton_mm import retyped_kernel

    constant_kernels = {name: retyped_kernel(False, ints) for name, ints in CONSTANTS.items()}
    flush = flush_buffer("cuda")
    report = {**report_header(), "command": command_line(), "reference": reference, "problems": []}
    for problem, timings in chosen:
        report["problems"].append(measure(problem, timings, args.top, args.reps, flush, constant_kernels, reference))
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

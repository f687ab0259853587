"""Does a collected Triton config run as Inductor's kernel of the same config runs? (one GPU run)

For each ``--problem``, stock max-autotune (DEFAULT configs) benchmarks its generated kernels,
recorded by torch_diode.collect. Then the collector's kernel of each of the ``--top`` Triton
configs Inductor timed fastest is timed by the collector's method (timing.time_launchers) in
three variants of :mod:`torch_diode.collection.triton_mm`'s kernel (as
``benchmarks.studies.collector_fault`` builds them): as the collector compiles it (sizes
specialised as Triton specialises ints), every size and stride a compile-time constant as in
Inductor's generated kernel, and sizes not specialised at all. Per problem and config: Inductor's
time and each variant's, so that a gap between the collector and Inductor on a shape can be put
down to the sizes it compiles as runtime arguments (or not).

    python -m benchmarks.studies.kernel_gap --problem "mm 308x320x768 float16 NT" --out $OUT/kernel_gap.json
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks.common import command_line, report_header, write_json
from benchmarks.studies.collector_fault import _SIZES_AND_STRIDES, _mm_kernel_variant, parse_problem
from torch_diode.collection import collect
from torch_diode.collection.fast_sweep import FastSweep
from torch_diode.collection.inductor_sweep import compile_and_run, inductor_settings
from torch_diode.collection.operands import layout_tensors
from torch_diode.collection.timing import flush_buffer, time_launchers
from torch_diode.dataset_io import load_dataset

VARIANTS = ("collector", "all_constexpr", "sizes_unspecialized")


def launcher(problem, config, variant: str, tensors: tuple, all_constexpr):
    """The config's kernel on ``tensors`` in ``variant`` (mm/addmm)."""
    from torch_diode.collection import triton_mm

    kernel, grid, spec = triton_mm.launch_args(*tensors, config)
    if variant == "all_constexpr":
        kernel = all_constexpr
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


def measure(problem, timings: list, top: int, reps: int, flush, all_constexpr) -> dict:
    """The three variants' timings of the problem's ``top`` Triton configs by Inductor's timings."""
    aten = [t for t in timings if not t.config.is_tiled]
    triton = sorted((t for t in timings if t.config.template_id == "triton::mm"), key=lambda t: t.time_us)[:top]
    tensors = layout_tensors(problem, "cuda")
    rows = []
    for t in triton:
        fns = [launcher(problem, t.config, v, tensors, all_constexpr) for v in VARIANTS]
        got = time_launchers(fns, reps, flush)
        rows.append(
            {"config": t.config.short(), "inductor_us": t.time_us}
            | {f"{v}_us": None if ms is None else ms * 1000.0 for v, ms in zip(VARIANTS, got)}
        )
    return {
        "problem": problem.short(),
        "inductor_aten": {t.config.template_id: t.time_us for t in aten},
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", action="append", required=True, help="mm/addmm: OP MxNxK DTYPE LAYOUT")
    parser.add_argument("--top", type=int, default=6, help="Inductor's fastest Triton configs per problem")
    parser.add_argument("--reps", type=int, default=FastSweep().reps)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    problems = [parse_problem(label) for label in args.problem]
    if any(p.op not in ("mm", "addmm") for p in problems):
        parser.error("--problem: mm or addmm only (the constexpr variant is the mm kernel's)")
    # Inductor first, every problem, before this process compiles or allocates anything of its own
    inductor = [inductor_timings(p) for p in problems]
    all_constexpr = _mm_kernel_variant(constexpr=_SIZES_AND_STRIDES)
    flush = flush_buffer("cuda")
    report = {**report_header(), "command": command_line(), "problems": []}
    for problem, timings in zip(problems, inductor):
        report["problems"].append(measure(problem, timings, args.top, args.reps, flush, all_constexpr))
        write_json(args.out, report)
    for p in report["problems"]:
        print(f"\n{p['problem']}: Inductor's ATen {p['inductor_aten']}")
        print(f"{'config':34s} {'inductor':>9s} " + " ".join(f"{v:>19s}" for v in VARIANTS))
        for r in p["rows"]:
            cells = " ".join(f"{r[f'{v}_us']:19.2f}" if r[f"{v}_us"] else f"{'-':>19s}" for v in VARIANTS)
            print(f"{r['config']:34s} {r['inductor_us']:9.2f} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

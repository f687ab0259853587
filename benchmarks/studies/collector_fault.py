"""Which of the fast collector's kernels end the process with a CUDA fault, and why.

A CUDA fault (``misaligned address``) ends the process's CUDA context, so every launch here runs
in a child process. First a child launches a problem's choices one at a time, synchronising after
each, in the order the collector times them; a child that dies names the faulting choice by the
last one it started, and the next child skips it. Then each faulting config is launched alone in
variants of :mod:`torch_diode.collection.triton_mm`'s kernel that each change one thing (no bias
epilogue, no A or B contiguity hint, sizes not specialised by Triton, every size and stride a
compile-time constant as in Inductor's generated kernels, the bias's strides passed at run time
as they were before they became constants), to tell which one the fault depends on.

    python -m benchmarks.studies.collector_fault --problem "addmm 384x1442x1595 float16 TN" \\
        --sample 48 --seed 8 --out collector_fault.json

Needs a CUDA GPU and triton.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from typing import Any

from benchmarks.common import report_header, write_json
from torch_diode.types import Problem

VARIANTS = (
    "as_is",
    "no_bias",
    "a_contig_off",
    "b_contig_off",
    "sizes_unspecialized",
    "all_constexpr",
    "bias_strides_runtime",
)

_BIAS_STRIDES = ("stride_biasm", "stride_biasn")
_LABEL = re.compile(r"^(mm|addmm|bmm|baddbmm) (?:(\d+)x)?(\d+)x(\d+)x(\d+) (\w+) ([NT])([NT])$")


def parse_problem(label: str) -> Problem:
    """``"addmm 384x1442x1595 float16 TN"`` (M x N x K; bmm: B x M x N x K) -> Problem."""
    m = _LABEL.match(label.strip())
    if not m:
        raise ValueError(f"--problem {label!r}: expected 'OP [Bx]MxNxK DTYPE LAYOUT'")
    op, b, mm, n, k, dtype, ta, tb = m.groups()
    return Problem(op, int(b or 1), int(mm), int(n), int(k), dtype, dtype, dtype, ta == "T", tb == "T")


def _launch(problem: Problem, config: Any, variant: str, tensors: tuple) -> None:
    import torch

    from torch_diode.collection import kernel_spec, triton_mm
    from torch_diode.collection.fast_sweep import untiled_launcher

    a, b, out, bias = tensors
    if not config.is_tiled:
        untiled_launcher(problem, config, a, b, out, bias)()
        return
    if variant == "no_bias":
        bias = None
    kernel, grid, spec = triton_mm.launch_args(a, b, out, bias, config)
    args, meta = list(spec["args"]), dict(spec["meta"])
    if variant == "a_contig_off":
        meta["A_CONTIG"] = False
    elif variant == "b_contig_off":
        meta["B_CONTIG"] = False
    elif variant == "sizes_unspecialized":
        kernel = triton_mm._bmm_kernel if a.dim() == 3 else triton_mm._mm_kernel
    elif variant in ("all_constexpr", "bias_strides_runtime"):
        if a.dim() == 3:
            raise SystemExit(f"{variant}: mm/addmm only")
        if variant == "all_constexpr":
            kernel = triton_mm.retyped_kernel(False, constant=kernel_spec.MM_INTS)
        else:
            kernel = triton_mm.retyped_kernel(False, runtime=_BIAS_STRIDES)
    kernel[grid](*args, **meta)
    torch.cuda.synchronize()


def child(problem: Problem, sample: int, seed: int, skip: set[int], only: int | None, variant: str) -> None:
    """Launches the choices (or choice ``only`` in ``variant``), printing TRY/OK lines; a fault
    ends this process."""
    from torch_diode.collection.fast_sweep import choices_for
    from torch_diode.collection.operands import layout_tensors

    configs = choices_for(problem, sample, seed)
    tensors = layout_tensors(problem, "cuda")
    for i, config in enumerate(configs):
        if i in skip or (only is not None and i != only):
            continue
        print(f"TRY {i}", flush=True)
        try:
            _launch(problem, config, variant, tensors)
        except Exception as e:  # compile errors (shared memory...) are ordinary failed configs
            if "misaligned" in str(e) or "illegal" in str(e):
                raise
            print(f"FAILED {i} {type(e).__name__}", flush=True)
            continue
        print(f"OK {i}", flush=True)
    print("ALLOK", flush=True)


def _run_child(args: list[str]) -> tuple[bool, int | None, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.studies.collector_fault", "--child", *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    tries = [int(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("TRY ")]
    ok = "ALLOK" in proc.stdout
    lines = proc.stderr.strip().splitlines() or ["?"]
    error = "" if ok else next((line for line in reversed(lines) if "Error" in line), lines[-1])[:200]
    return ok, (tries[-1] if tries and not ok else None), error


def investigate(problem: Problem, sample: int, seed: int, max_faults: int) -> dict[str, Any]:
    from torch_diode.collection.fast_sweep import choices_for
    from torch_diode.collection.kernel_compiler import precompile

    configs = choices_for(problem, sample, seed)
    precompile([(problem, c) for c in configs if c.is_tiled], workers=min(16, os.cpu_count() or 1))
    base = ["--problem", problem.short(), "--sample", str(sample), "--seed", str(seed)]
    faults: list[dict[str, Any]] = []
    skip: set[int] = set()
    while len(faults) < max_faults:
        ok, index, error = _run_child([*base, "--skip", ",".join(map(str, sorted(skip)))])
        if ok or index is None:
            break
        skip.add(index)
        faults.append({"index": index, "config": configs[index].to_dict(), "error": error})
        print(f"{problem.short()}: choice {index} faults: {configs[index].short()}: {error}", flush=True)
    for fault in faults:
        fault["variants"] = {}
        for variant in VARIANTS:
            ok, _, error = _run_child([*base, "--only", str(fault["index"]), "--variant", variant])
            fault["variants"][variant] = "ok" if ok else f"fault: {error}"
    return {"problem": problem.short(), "choices": len(configs), "faults": faults}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", action="append", required=True, help="OP [Bx]MxNxK DTYPE LAYOUT (repeatable)")
    p.add_argument("--sample", type=int, default=48, help="EXHAUSTIVE sample of the collector (default 48)")
    p.add_argument("--seed", type=int, default=0, help="the collector's --seed (picks the sample)")
    p.add_argument("--max-faults", type=int, default=4, help="faulting choices to look for per problem")
    p.add_argument("--out", help="JSON report")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--skip", default="", help=argparse.SUPPRESS)
    p.add_argument("--only", type=int, help=argparse.SUPPRESS)
    p.add_argument("--variant", default="as_is", choices=VARIANTS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        problems = [parse_problem(label) for label in args.problem]
    except ValueError as e:
        p.error(str(e))
    if args.child:
        skip = {int(x) for x in args.skip.split(",") if x}
        child(problems[0], args.sample, args.seed, skip, args.only, args.variant)
        return 0
    import torch

    if not torch.cuda.is_available():
        print("collector_fault: needs a CUDA GPU", file=sys.stderr)
        return 2
    results = [investigate(pr, args.sample, args.seed, args.max_faults) for pr in problems]
    report = {**report_header(), "results": results}
    if args.out:
        write_json(args.out, report)
    print(f"{'problem':40s} {'choice':>6s} " + " ".join(f"{v:>20s}" for v in VARIANTS))
    for result in report["results"]:
        for fault in result["faults"]:
            cells = " ".join(f"{fault['variants'][v][:20]:>20s}" for v in VARIANTS)
            print(f"{result['problem']:40s} {fault['index']:6d} {cells}")
        if not result["faults"]:
            print(f"{result['problem']:40s} {'none':>6s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

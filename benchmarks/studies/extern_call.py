"""Does one ATen GEMM run alike in default mode, in the max-autotune path handed the ATen choice
alone, in diode's and eagerly, inside one process? For GEMMs where e2e.py's workers (one process
each) disagree on a choice they share: each way is compiled with cold caches, then the four are
timed in turns (``do_bench_cudagraph`` medians on one copy of the inputs, benchmarks.e2e's
``runtime_cudagraph_warm_l2_us``, ``--reps`` rounds),
with the generated call and the CUDA kernels the profiler sees.

    python -m benchmarks.studies.extern_call --match "Falcon-7B self_attention.query_key_value (prefill" \\
        "DINOv2 ViT-B/14 mlp.fc2 (batch 1" --out benchmarks/results/extern_call_h200.json
"""

from __future__ import annotations

import argparse
import os
from typing import Any

# diode decides only where this script installs it (the "diode" way), never through the import
os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"

from benchmarks.common import DIODE_SETTINGS, bench_cudagraph_us, load_shapes, report_header, stage, write_json  # noqa: E402

# name -> (Inductor settings, whether diode decides); diode's as benchmarks.e2e compiles it
WAYS: dict[str, tuple[dict[str, Any], bool]] = {
    "default": ({}, False),
    "aten_only_autotune": ({"max_autotune_gemm": True, "max_autotune_gemm_backends": "ATEN"}, False),
    "diode": (DIODE_SETTINGS, True),
}


def compiled(fn: Any, inputs: tuple, settings: dict[str, Any], diode: bool, model: str) -> tuple[Any, list[str]]:
    """The compiled function (compiled on its first call here) and its generated GEMM call lines."""
    import contextlib

    import torch
    from torch._inductor import config as inductor_config
    from torch._inductor.utils import run_and_get_code

    from torch_diode.integration.install import diode_choices

    torch._dynamo.reset()
    compiled_fn = torch.compile(fn, dynamic=False)
    with inductor_config.patch({"force_disable_caches": True, **settings}), torch.no_grad():
        with diode_choices(model) if diode else contextlib.nullcontext():
            _, code = run_and_get_code(compiled_fn, *inputs)
    calls = [
        line.strip()
        for line in code[0].splitlines()
        if "extern_kernels." in line or ("triton_" in line and ".run(" in line)
    ]
    return compiled_fn, calls


def cuda_kernels(fn: Any, inputs: tuple) -> list[tuple[str, float]]:
    """(kernel name, mean device microseconds) of 20 calls after 5."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        fn(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn(*inputs)
        torch.cuda.synchronize()
    return sorted(
        {(e.key, round(e.device_time / max(e.count, 1), 2)) for e in prof.key_averages() if e.device_time > 0}
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="realmodels_heldout", help="shapeset or shapes file (default: %(default)s)")
    parser.add_argument("--match", nargs="+", required=True, help="label substrings of the GEMMs to run")
    parser.add_argument("--model", default="NVIDIA-H200-matmul", help="diode model name or file")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import torch

    from torch_diode.collection.inductor_sweep import make_inputs, op_function

    if not torch.cuda.is_available():
        raise SystemExit("extern_call.py measures on a CUDA GPU; none is available here")
    rows = []
    for label, problem, _ in load_shapes(args.shapes):
        if not any(m in label for m in args.match):
            continue
        stage(f"{label}: {problem.short()}")
        inputs = make_inputs(problem, "cuda")
        fn = op_function(problem.op)
        fns: dict[str, Any] = {"eager": fn}
        calls = {}
        for name, (settings, diode) in WAYS.items():
            fns[name], calls[name] = compiled(fn, inputs, settings, diode, args.model)
        us: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(args.reps):
            for name, f in fns.items():
                us[name].append(bench_cudagraph_us(lambda f=f, x=inputs: f(*x)))
        row = {
            "label": label,
            "problem": problem.short(),
            "calls": calls,
            "runtime_us": us,
            "kernels": {name: cuda_kernels(f, inputs) for name, f in fns.items()},
        }
        rows.append(row)
    write_json(args.out, {**report_header(), "rows": rows})
    for row in rows:
        print(row["label"], row["problem"])
        for name, times in row["runtime_us"].items():
            kernels = ", ".join(k for k, _ in row["kernels"][name])
            print(f"  {name:20s} {' '.join(f'{t:7.2f}' for t in times)} us   {kernels}")
        for name, lines in row["calls"].items():
            print(f"  {name:20s} {' | '.join(lines)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

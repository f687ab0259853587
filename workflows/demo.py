"""`make demo`: what diode does, on whatever machine this is.

With a CUDA GPU that has a shipped model (an H100): compiles a small MLP three ways, each in its own
process with empty caches (default mode, diode top-1, stock max-autotune) and prints compile time
and runtime. Elsewhere (a CPU machine, or a GPU without a model): lists the shipped models and
prints the shipped H100 model's comparison with max-autotune's choices on the shipped H100
validation set (measured kernel timings: no GPU needed).

    python workflows/demo.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"  # diode acts only where this script installs it
ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "data" / "h100" / "validation"
METHODS = ("default", "diode", "max-autotune")


def measure(method: str, model_name: str) -> dict:
    """One compile of the MLP in this process (a fresh one per method), then its runtime."""
    import torch
    import triton
    from torch import nn
    from torch._inductor import config as inductor_config

    from torch_diode.integration.install import diode_choices

    torch.manual_seed(0)
    model = (
        nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 1024))
        .cuda()
        .half()
        .eval()
    )
    x = torch.randn(512, 1024, device="cuda", dtype=torch.half)
    settings = {"force_disable_caches": True}
    if method == "max-autotune":
        settings.update(max_autotune=True, max_autotune_gemm_backends="ATEN,TRITON")
    elif method == "diode":
        settings.update(max_autotune_gemm=True)
    compiled = torch.compile(model)
    with torch.no_grad(), inductor_config.patch(settings):
        start = time.perf_counter()
        if method == "diode":
            with diode_choices(model_name):
                compiled(x)
        else:
            compiled(x)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - start
        # kernel time: replays of a CUDA graph (a plain do_bench of a small compiled function can
        # read the host's cost of the call instead; see benchmarks/e2e.py)
        runtime_us = 1000 * triton.testing.do_bench_cudagraph(lambda: compiled(x), rep=100, return_mode="median")
    return {"method": method, "compile_s": compile_s, "runtime_us": runtime_us}


def gpu_demo(model_name: str) -> None:
    print("Compiling an MLP (1024-4096-4096-1024, batch 512, fp16) three ways, each in a fresh process:\n")
    rows = []
    for method in METHODS:
        env = {**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp(), "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp()}
        out = subprocess.run(
            [sys.executable, __file__, "--measure", method, model_name], env=env, capture_output=True, text=True
        )
        if out.returncode != 0:
            print(f"{method}: failed\n{out.stderr[-2000:]}")
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'method':14s} {'compile (s)':>12s} {'runtime (us)':>13s}")
    for r in rows:
        print(f"{r['method']:14s} {r['compile_s']:12.2f} {r['runtime_us']:13.1f}")


def cpu_demo() -> None:
    print("No GPU with a shipped model here: the shipped H100 model, judged on measured H100 data.\n")
    subprocess.run([sys.executable, "-m", "torch_diode.cli", "list-models"], check=True)
    print()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torch_diode.cli",
            "validate-max-autotune",
            "--model",
            "NVIDIA-H100-matmul",
            "--data-dir",
            str(VALIDATION),
        ],
        check=True,
    )
    print(
        "\nRead: above 1, the model's pick ran faster than max-autotune's (the README's results table"
        "\nputs diode over the other, so there below 1 is faster). Top-1 is the model's first pick with"
        "\nnothing benchmarked; where the model is unsure the handler has Inductor benchmark its few best"
        "\n(the README's 'with the unsure widening' rows)."
    )


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
        return 0
    import torch

    from torch_diode.hardware import detect_hardware
    from torch_diode.model_file import model_metadata
    from torch_diode.registry import shipped_models

    if torch.cuda.is_available():
        hardware = detect_hardware("cuda")
        for name, path in shipped_models().items():
            if (model_metadata(path).get("hardware") or {}).get("hardware_id") == hardware.hardware_id:
                print(f"{hardware.device_name}: shipped model {name}")
                gpu_demo(name)
                return 0
        print(f"{hardware.device_name}: no shipped model for this GPU.")
    cpu_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())

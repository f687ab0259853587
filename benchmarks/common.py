"""What the benchmark scripts share: the held-out shapes file, worker processes with cold caches,
the warm-up every worker runs first, timing, and the summary statistics."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from torch_diode.types import Problem

HERE = Path(__file__).resolve().parent
SHAPES = HERE / "e2e_shapes.json"
# the throwaway GEMM (followed by a ReLU) every worker compiles first, so that CUDA, Inductor, the
# Triton compiler and Inductor's compile workers are started, as they are in any real model's compile
WARM_UP = Problem("mm", 1, 256, 256, 256, "float16", "float16", "float16")


def stage(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def load_shapes(
    path: Path | str = SHAPES, per_model: int | None = None, seed: int = 0
) -> list[tuple[str, Problem, bool]]:
    """(label, problem, measure EXHAUSTIVE too) of a shapes file, a JSON list of objects with op
    (mm, addmm, bmm, baddbmm), B, M, N, K, dtype, optional label, transpose_a, transpose_b,
    exhaustive; or of a shapeset (a shipped name such as realmodels_heldout, or its file),
    labelled "model layer". ``per_model`` keeps that many entries of each model of a shapeset
    (None: all), drawn with ``seed``; a shapes file is read whole. A shapeset's entries come in an
    order shuffled with ``seed``, so that a run stopped at its time limit has measured a sample of
    the models, not the first ones."""
    from torch_diode.collection.shapes import is_shapeset_file, list_shapesets, load_shapeset

    path_str = str(path)
    if path_str in list_shapesets() or is_shapeset_file(path_str):
        import random

        rng = random.Random(seed)
        by_model: dict[str, list] = {}
        for entry in load_shapeset(path_str):
            by_model.setdefault(entry.model, []).append(entry)
        chosen = [
            e
            for entries in by_model.values()
            for e in (rng.sample(entries, min(per_model, len(entries))) if per_model else entries)
        ]
        rng.shuffle(chosen)
        return [(f"{e.model} {e.layer}", e.problem, False) for e in chosen]
    path = Path(path)
    out = []
    for i, e in enumerate(json.loads(path.read_text())):
        try:
            dt = e["dtype"]
            p = Problem(
                e["op"],
                int(e.get("B", 1)),
                int(e["M"]),
                int(e["N"]),
                int(e["K"]),
                dt,
                dt,
                dt,
                transpose_a=bool(e.get("transpose_a", False)),
                transpose_b=bool(e.get("transpose_b", False)),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise SystemExit(f"{path}: entry {i}: {err!r} (needs op, M, N, K, dtype)") from None
        out.append((e.get("label") or p.short(), p, bool(e.get("exhaustive", False))))
    return out


def warm_up_function() -> Callable:
    import torch

    return lambda a, b: torch.relu(a @ b)


def wait_for_compile_pool(timeout_s: float = 120) -> None:
    """Waits until Inductor's compile worker pool is up (after the warm-up compile): until then
    Inductor compiles each kernel in the compiling process, so whichever compile came first would
    pay for the pool's start. Returns at once where Inductor compiles without a pool or lacks the
    call."""
    from torch._inductor.async_compile import AsyncCompile

    wait = getattr(AsyncCompile, "wait_pool_ready", None)
    if wait is not None:
        wait(timeout=timeout_s)


def run_worker(module: str, args: list[str], limit_s: float | None = None) -> tuple[list, Any, float]:
    """Runs ``python -m benchmarks.<module> --worker ... --out FILE`` in a new process with its own
    new Triton and Inductor cache directories (so it finds no kernel another compiled); returns the
    rows it wrote to FILE (those finished before a stop at ``limit_s`` included), its exit status
    ("stopped at its time limit" where it was stopped) and its wall seconds."""
    part = Path(tempfile.mkdtemp(prefix=f"{module}_")) / "rows.json"
    env = {
        **os.environ,
        "TRITON_CACHE_DIR": tempfile.mkdtemp(prefix=f"{module}_triton_"),
        "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix=f"{module}_inductor_"),
        "PYTHONUNBUFFERED": "1",
    }
    cmd = [sys.executable, "-m", f"benchmarks.{module}", *args, "--out", str(part)]
    start = time.perf_counter()
    try:
        code: Any = subprocess.run(cmd, env=env, timeout=limit_s, cwd=HERE.parent).returncode
    except subprocess.TimeoutExpired:
        code = "stopped at its time limit"
    rows = json.loads(part.read_text()) if part.exists() else []
    return rows, code, time.perf_counter() - start


def timed_first_call(fn: Callable, *inputs: Any) -> float:
    """Wall seconds of ``fn(*inputs)`` until the GPU is done (a compiled function's first call: its compile)."""
    import torch

    start = time.perf_counter()
    fn(*inputs)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def command_line() -> str:
    """The command as it was run: ``python -m benchmarks.NAME ...`` (``benchmarks.studies.NAME``)
    for a benchmark run as a module (its ``sys.argv[0]`` is then the file's absolute path)."""
    script = Path(sys.argv[0]).resolve()
    if script.suffix == ".py" and script.is_relative_to(HERE):
        module = ".".join(script.relative_to(HERE.parent).with_suffix("").parts)
        return " ".join(["python", "-m", module, *sys.argv[1:]])
    return " ".join(["python", *sys.argv])


def config_design(config: Any) -> tuple:
    """What makes two tiled configs one kernel design: template, block sizes, GROUP_M, stages, warps."""
    return (
        config.template_id,
        config.block_m,
        config.block_n,
        config.block_k,
        config.group_m,
        config.num_stages,
        config.num_warps,
    )


def first_collection_settings(dataset: Any) -> dict[str, Any]:
    """The settings the first collection of ``dataset`` recorded (``{}`` where none did)."""
    from torch_diode.collection.provenance import collection_settings

    return next(iter(collection_settings(dataset)), {})


def cpu_report_header(machine: str) -> dict[str, Any]:
    """The command, date and ``machine`` (what ran it) of a report computed on the CPU."""
    return {
        "command": command_line(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine,
    }


def report_header() -> dict[str, Any]:
    """The command, date and the GPU and versions it ran with."""
    import torch
    import triton

    return {
        "command": command_line(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])

"""What the benchmark scripts share: the held-out shapes file, worker processes with cold caches,
the warm-up every worker runs first, timing (compile time of a first call; a compiled function's
runtime by do_bench and by CUDA-graph replays over copies of its inputs, as benchmarks/e2e.py
measures), the Inductor settings of diode's methods, and the summary statistics."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from torch_diode.fileio import atomic_write_bytes
from torch_diode.types import Problem

HERE = Path(__file__).resolve().parent
SHAPES = HERE / "e2e_shapes.json"
# the throwaway GEMM (followed by a ReLU) every worker compiles first, so that CUDA, Inductor, the
# Triton compiler and Inductor's compile workers are started, as they are in any real model's compile
WARM_UP = Problem("mm", 1, 256, 256, 256, "float16", "float16", "float16")
WARMUP_MS, REP_MS = 25, 100  # do_bench's warm-up and repetitions (bench_us; rep for bench_cudagraph_us)
MAX_INPUT_COPIES = 256  # input_copies: enough for inputs of 400 KB or more to leave a 50 MB L2 cold
# a method's and default mode's CUDA-graph timings alternate this many times, each a share of
# REP_MS (paired_cudagraph_us): the medians of two graphs' timings interleaved (with 3 rounds,
# diode's aten::bias_addmm and default mode's aten::addmm, one cuBLAS call with a 1-D bias, still
# differed by 0.976x-1.042x at one size from run to run on the H100)
PAIRED_ROUNDS = 5
# Inductor's GEMM path in default mode, where diode's choice handler decides (the diode methods)
DIODE_SETTINGS: dict[str, Any] = {"max_autotune_gemm": True, "max_autotune_gemm_backends": "ATEN,TRITON"}


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


def bench_us(fn: Callable) -> float:
    """``triton.testing.do_bench``'s median of ``fn`` (WARMUP_MS, REP_MS), in microseconds."""
    import triton

    return 1000 * triton.testing.do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")


def bench_cudagraph_us(fn: Callable, inputs: Sequence[tuple] = ((),), rep_ms: float = REP_MS) -> float:
    """The same function replayed from a CUDA graph: kernel time without the host's launch cost
    (mode="max-autotune" runs compiled functions this way). do_bench times one launch after a
    cache flush, so a host cost longer than the flush lands in its figure. The graph calls ``fn``
    on each of ``inputs`` in turn (copies from ``input_copies``: then no call finds its operands
    in the L2 cache); the figure is per call."""
    import triton

    def calls() -> None:
        for x in inputs:
            fn(*x)

    return 1000 * triton.testing.do_bench_cudagraph(calls, rep=rep_ms, return_mode="median") / len(inputs)


def reference_call(fn: Callable, *inputs: Any) -> Any:
    """The frame default mode's paired reference compiles (paired_cudagraph_us): a code object of
    its own, so that its cache entries and automatic-dynamic state are not the measured method's."""
    return fn(*inputs)


def paired_cudagraph_us(
    fn: Callable, reference: Callable, inputs: Sequence[tuple], rounds: int = PAIRED_ROUNDS
) -> tuple[float, float]:
    """bench_cudagraph_us of ``fn`` and of ``reference`` (default mode's graph of the same work, in
    the same process) alternately, ``rounds`` times, each a share of REP_MS: (``fn``'s median,
    ``reference``'s). Their ratio compares timings of the same seconds, clock and temperature;
    two processes' timings of one cuBLAS call can differ by several percent."""
    own, ref = [], []
    for _ in range(rounds):
        own.append(bench_cudagraph_us(fn, inputs, rep_ms=REP_MS / rounds))
        ref.append(bench_cudagraph_us(reference, inputs, rep_ms=REP_MS / rounds))
    return statistics.median(own), statistics.median(ref)


def runtime_over_default(runtime_us: float, paired_default_us: float | None, default_us: float | None) -> float | None:
    """A method's runtime over default mode's: over the default timing paired with it in its
    worker (paired_cudagraph_us) where it has one, else over default mode's own worker's
    (``default_us``); None without either. Two methods compare as the quotient of these ratios, so
    that each is read against default mode timed in its own process (runs minutes or machines
    apart)."""
    reference = paired_default_us or default_us
    return runtime_us / reference if reference else None


def operand_bytes(inputs: tuple) -> int:
    """Bytes of the storages of the tensors among ``inputs``."""
    import torch

    return sum(x.untyped_storage().nbytes() for x in inputs if isinstance(x, torch.Tensor))


def input_copies(inputs: tuple, l2_bytes: int | None = None, max_copies: int = MAX_INPUT_COPIES) -> list[tuple]:
    """``inputs`` and copies of it (each tensor in a storage of its own, with its size, strides,
    offset and values), enough that calls on each in turn read more than twice ``l2_bytes``
    between two calls on the same copy, at most ``max_copies``; inputs of that size or more are
    not copied. Replayed back to back on one copy, a GEMM whose operands fit in L2 reads them from
    L2, and one whose operands nearly fill it runs at a speed that depends on where they lie in
    memory (benchmarks/studies/l2_residency.py); in a model the other layers' traffic evicts them, and
    the collector flushes L2 before each timing. ``l2_bytes``: the current CUDA device's L2 size
    where not given."""
    import torch

    if l2_bytes is None:
        l2_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    footprint = operand_bytes(inputs)
    if not footprint or footprint >= 2 * l2_bytes:
        return [inputs]
    count = min(max_copies, math.ceil(2 * l2_bytes / footprint) + 1)

    def copy(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        # the storage's bytes: a view whose elements overlap (an expanded bias) copies as it is
        out = torch.empty(0, dtype=x.dtype, device=x.device)
        return out.set_(x.untyped_storage().clone(), x.storage_offset(), x.size(), x.stride())

    return [inputs] + [tuple(copy(x) for x in inputs) for _ in range(count - 1)]


def wall_us_per_call(fn: Callable, calls: int = 200) -> float:
    """Wall time per call of back-to-back calls: the larger of the host's cost and the GPU's."""
    import torch

    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / calls


def command_line() -> str:
    """The command as it was run: ``python -m benchmarks.NAME ...`` (``benchmarks.studies.NAME``)
    for a benchmark run as a module (its ``sys.argv[0]`` is then the file's absolute path)."""
    script = Path(sys.argv[0]).resolve()
    if script.suffix == ".py" and script.is_relative_to(HERE):
        module = ".".join(script.relative_to(HERE.parent).with_suffix("").parts)
        return " ".join(["python", "-m", module, *sys.argv[1:]])
    return " ".join(["python", *sys.argv])


def combinable_reports(paths: Sequence[str], out: str, shared: Sequence[str]) -> list[dict[str, Any]]:
    """The reports ``--combine`` joins into ``out``: refused (exit 2) where ``out`` is one of them,
    and (exit 1, naming the key) where they differ in one of the ``shared`` keys."""
    if Path(out).resolve() in {Path(p).resolve() for p in paths}:
        print(f"--out {out} is one of the reports --combine reads: name a new file", file=sys.stderr)
        raise SystemExit(2)
    parts = [json.loads(Path(p).read_text()) for p in paths]
    for key in shared:
        if len({json.dumps(part.get(key), sort_keys=True) for part in parts}) > 1:
            raise SystemExit(f"--combine: the reports differ in {key!r}: {[part.get(key) for part in parts]}")
    return parts


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


def write_json(path: str | Path, value: Any) -> None:
    """``value`` (a report, its rows) as indented JSON at ``path`` in its key order, written
    atomically: a run stopped halfway leaves the file it replaces whole."""
    atomic_write_bytes(path, json.dumps(value, indent=1).encode())

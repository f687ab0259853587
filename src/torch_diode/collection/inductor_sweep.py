"""Measuring problems through stock torch.compile max-autotune, recorded by the Collector.

Each problem is compiled on its own (Dynamo reset, caches off) with ``mode="max-autotune"``
semantics; Inductor benchmarks its choices and the feedback saver records them. The output
file is rewritten atomically after every problem, and problems already in it (or recorded as
skipped) are not measured again, so the same command resumes a killed run.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..hardware import DeviceError, check_device, current_device, device_works
from ..types import Problem
from .recorder import Collector

logger = logging.getLogger(__name__)


def make_inputs(problem: Problem, device: str, seed: int = 0) -> tuple[Any, ...]:
    """Random operands laid out as the problem says (transposes, batch, bias shape)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)

    def operand(rows: int, cols: int, transpose: bool, dtype: str) -> "torch.Tensor":
        shape = (cols, rows) if transpose else (rows, cols)
        if problem.op in ("bmm", "baddbmm"):
            shape = (problem.B, *shape)
        t = torch.randn(shape, generator=gen, dtype=torch.float32)
        t = t.to(device=device, dtype=getattr(torch, dtype))
        return t.transpose(-1, -2) if transpose else t

    a = operand(problem.M, problem.K, problem.transpose_a, problem.dtype_a)
    b = operand(problem.K, problem.N, problem.transpose_b, problem.dtype_b)
    if not problem.has_bias:
        return a, b
    shape = problem.bias_shape or (problem.N,)
    bias = torch.randn(shape, generator=gen).to(device=device, dtype=getattr(torch, problem.dtype_out))
    return bias, a, b


def op_function(op: str) -> Callable[..., Any]:
    import torch

    return {"mm": torch.mm, "addmm": torch.addmm, "bmm": torch.bmm, "baddbmm": torch.baddbmm}[op]


def inductor_settings(search_space: str, backends: str) -> dict[str, Any]:
    """The Inductor config of a stock max-autotune GEMM measurement."""
    return {
        "max_autotune": True,
        "max_autotune_gemm": True,
        "max_autotune_gemm_backends": backends,
        "max_autotune_gemm_search_space": search_space,
        "force_disable_caches": True,
    }


def compile_and_run(problem: Problem, device: str, settings: dict[str, Any]) -> float:
    """Compiles the problem's op with ``settings`` and calls it once; returns wall seconds."""
    import torch
    from torch._inductor import config as inductor_config

    torch._dynamo.reset()
    inputs = make_inputs(problem, device)
    fn = torch.compile(op_function(problem.op), dynamic=False, fullgraph=True)
    start = time.perf_counter()
    with inductor_config.patch(settings):
        fn(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start


@dataclass
class SweepSummary:
    problems_measured: int = 0
    problems_resumed: int = 0
    problems_skipped: int = 0
    timed_configs: int = 0
    failed_configs: int = 0
    seconds: float = 0.0
    kernels_compiled: int = 0
    compile_seconds: float = 0.0  # fast mode: time spent waiting for compiled kernels
    compile_pool_broken: bool = False

    def line(self) -> str:
        return (
            f"{self.problems_measured} problems measured, {self.problems_resumed} already done, "
            f"{self.problems_skipped} skipped; {self.timed_configs} timed configs "
            f"({self.failed_configs} failed) in {self.seconds:.1f} s"
            + (f" ({self.kernels_compiled} kernels compiled, {self.compile_seconds:.1f} s of it waiting for them)"
               if self.kernels_compiled else "")
            + (" (the compile pool broke; compiled in-process)" if self.compile_pool_broken else "")
        )


def chunked(problems: Sequence[Problem], output: str | os.PathLike, chunk_size: int | None) -> list[tuple[list[Problem], str]]:
    """Splits the work into files ``<stem>_chunkNNNN<suffix>`` of at most ``chunk_size`` problems
    (one file, ``output`` itself, without a chunk size)."""
    if not chunk_size:
        return [(list(problems), str(output))]
    path = Path(output)
    suffix = "".join(s for s in path.suffixes[-2:] if s in (".json", ".msgpack", ".gz"))
    stem = path.name[: -len(suffix)] if suffix else path.name
    return [
        (list(problems[i : i + chunk_size]), str(path.with_name(f"{stem}_chunk{i // chunk_size:04d}{suffix}")))
        for i in range(0, len(problems), chunk_size)
    ]


def problem_key(problem: Problem) -> str:
    """The identity of a requested problem (recorded problems also carry exact strides)."""
    bias = "x".join(map(str, problem.bias_shape)) if problem.bias_shape else "-"
    return (
        f"{problem.op}:{problem.B}x{problem.M}x{problem.N}x{problem.K}:"
        f"{problem.dtype_a},{problem.dtype_b},{problem.dtype_out}:"
        f"{int(problem.transpose_a)}{int(problem.transpose_b)}:{bias}"
    )


def _done_keys(collector: Collector) -> set[str]:
    meta = collector.dataset.metadata
    return set(meta.get("completed", [])) | {s["problem_key"] for s in meta.get("skipped", [])}


CRASHED = ("the process died twice while measuring it (e.g. a kernel's CUDA fault, which ends the "
           "process's CUDA context); left out when the run resumed")


def _begin(collector: Collector, problem: Problem) -> None:
    """Records on disk that ``problem`` is being measured, and how many runs have started on it:
    if the process dies with it (a CUDA fault cannot be caught), a resumed run tries it once more
    (the run may have been killed from outside) and after a second death skips it."""
    meta = collector.dataset.metadata
    key = problem_key(problem)
    previous = meta.get("in_flight") or {}
    attempts = int(previous.get("attempts", 0)) + 1 if previous.get("problem_key") == key else 1
    meta["in_flight"] = {"problem_key": key, "attempts": attempts}
    collector.flush()


def _skip_crashed(collector: Collector) -> str | None:
    """On resume: the problem that killed two runs is marked skipped (its key, or None)."""
    meta = collector.dataset.metadata
    in_flight = meta.get("in_flight") or {}
    key = in_flight.get("problem_key")
    if key is None or int(in_flight.get("attempts", 0)) < 2 or key in _done_keys(collector):
        return None
    logger.warning("skipping %s: %s", key, CRASHED)
    meta.pop("in_flight")
    meta.setdefault("skipped", []).append({"problem_key": key, "reason": CRASHED})
    collector.flush()
    return key


def _mark(collector: Collector, problem: Problem, reason: str | None) -> None:
    meta = collector.dataset.metadata
    meta.pop("in_flight", None)
    if reason is None:
        meta.setdefault("completed", []).append(problem_key(problem))
    else:
        meta.setdefault("skipped", []).append(
            {"problem_key": problem_key(problem), "problem": problem.to_dict(), "reason": reason}
        )
    collector.flush()


def sweep_inductor(
    problems: Iterable[Problem],
    output: str | os.PathLike,
    *,
    device: str = "cuda",
    search_space: str = "DEFAULT",
    backends: str = "ATEN,TRITON",
    progress: bool = True,
    settings_record: dict[str, Any] | None = None,
) -> SweepSummary:
    """Measures each problem through stock torch.compile max-autotune into ``output``.

    DeviceError where ``device`` is unusable, at the start or after a failure that a tiny kernel
    on the device then confirms: the problem is not marked done (a resumed run measures it)."""
    from tqdm import tqdm

    check_device(device)
    problems = list(problems)
    settings = inductor_settings(search_space, backends)
    summary = SweepSummary()
    start = time.perf_counter()
    record = {"mode": "inductor", "device": device, **settings, **(settings_record or {})}
    with current_device(device), Collector(output, settings=record) as collector:
        _skip_crashed(collector)
        done = _done_keys(collector)
        bar = tqdm(problems, desc="collect", unit="shape", disable=not progress)
        for problem in bar:
            if problem_key(problem) in done:
                summary.problems_resumed += 1
                continue
            bar.set_postfix_str(problem.short())
            before = collector.stats["choices"], collector.stats["failed_choices"], collector.stats["gemms"]
            _begin(collector, problem)
            try:
                compile_and_run(problem, device, settings)
            except Exception as e:  # OOM, unsupported dtype on this device, compile failure
                reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
                if not device_works(device):
                    raise DeviceError(f"{device!r} stopped working while measuring {problem.short()} ({reason}); "
                                      "the problem is not marked done") from e
                logger.warning("skipping %s: %s", problem.short(), reason)
                _mark(collector, problem, reason)
                summary.problems_skipped += 1
                _free_device_memory(device)
                continue
            if collector.stats["gemms"] == before[2]:
                # Inductor did not benchmark (a single choice): nothing to learn from it.
                _mark(collector, problem, "no autotuning (one choice)")
                summary.problems_skipped += 1
                continue
            _mark(collector, problem, None)
            summary.problems_measured += 1
            summary.timed_configs += collector.stats["choices"] - before[0]
            summary.failed_configs += collector.stats["failed_choices"] - before[1]
    summary.seconds = time.perf_counter() - start
    return summary


def _free_device_memory(device: str) -> None:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()

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
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import UserError
from ..hardware import DeviceError, check_device, current_device, detect_hardware, device_works
from ..inductor.hooks import check_cpu_isa_with_caches
from ..types import Problem, problem_key
from .operands import operands
from .sweep_state import SweepSummary, begin, done_keys, mark, open_collector, skip_crashed

logger = logging.getLogger(__name__)


def make_inputs(problem: Problem, device: str, seed: int = 0) -> tuple[Any, ...]:
    """Random operands laid out as the problem says, as the op takes them: (a, b) or (bias, a, b)."""
    a, b, bias = operands(problem, device, seed)
    return (a, b) if bias is None else (bias, a, b)


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
    if device == "cpu":
        check_cpu_isa_with_caches()
    inputs = make_inputs(problem, device)
    fn = torch.compile(op_function(problem.op), dynamic=False, fullgraph=True)
    start = time.perf_counter()
    with inductor_config.patch(settings), warnings.catch_warnings():
        # the caches are off on purpose (every measurement compiles afresh): Dynamo's warning that
        # this turns its profile-guided cache off too would repeat for every problem
        warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
        fn(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start


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
    on the device then confirms: the problem is not marked done (a resumed run measures it).
    CollectionError where every problem tried was skipped: none is marked done."""
    from tqdm import tqdm

    check_device(device)
    problems = list(problems)
    settings = inductor_settings(search_space, backends)
    summary = SweepSummary()
    start = time.perf_counter()
    record = {"mode": "inductor", "device": device, **settings, **(settings_record or {})}
    name = detect_hardware(device).device_name
    with current_device(device), open_collector(output, name, device, settings=record) as collector:
        skip_crashed(collector)
        done = done_keys(collector)
        # a skip is recorded once a problem of the run was measured: until then every problem
        # failing (a backend list that offers nothing, one that offers one choice, a dtype the
        # device lacks) may be the caller's fault, and a corrected command must find them not
        # done. A problem too large for the device's memory is its own: recorded at once.
        pending: list[tuple[Problem, str]] = []
        bar = tqdm(problems, desc="collect", unit="shape", disable=not progress)
        for problem in bar:
            if problem_key(problem) in done:
                summary.problems_resumed += 1
                continue
            bar.set_postfix_str(problem.short())
            before = collector.stats["choices"], collector.stats["failed_choices"], collector.stats["gemms"]
            begin(collector, problem)
            reason = _measure(problem, device, settings, collector, before[2])
            if reason is not None:
                summary.problems_skipped += 1
                if summary.problems_measured or _problems_own(reason):
                    mark(collector, problem, reason)
                else:
                    pending.append((problem, reason))
                continue
            mark(collector, problem, None)
            summary.problems_measured += 1
            summary.timed_configs += collector.stats["choices"] - before[0]
            summary.failed_configs += collector.stats["failed_choices"] - before[1]
            for skipped, why in pending:
                mark(collector, skipped, why)
            pending.clear()
        if pending:
            collector.dataset.metadata.pop("in_flight", None)
            collector.forget_source()
            collector.flush()
            raise CollectionError(output, pending)
    summary.seconds = time.perf_counter() - start
    return summary


def _measure(problem: Problem, device: str, settings: dict[str, Any], collector: Any, gemms_before: int) -> str | None:
    """Compiles and runs ``problem`` under the collector; None where measured, else why it is
    skipped. DeviceError where the device stopped working (nothing to mark)."""
    try:
        compile_and_run(problem, device, settings)
    except Exception as e:  # OOM, unsupported dtype on this device, compile failure
        reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        if not device_works(device):
            raise DeviceError(
                f"{device!r} stopped working while measuring {problem.short()} ({reason}); "
                "the problem is not marked done"
            ) from e
        logger.warning("skipping %s: %s", problem.short(), reason)
        _free_device_memory(device)
        return reason
    if collector.stats["gemms"] == gemms_before:
        return "no autotuning (one choice)"  # Inductor did not benchmark: nothing to learn from it
    return None


def _problems_own(reason: str) -> bool:
    """Whether a skip's reason is the problem's own (it does not fit the device's memory), not
    possibly the caller's settings."""
    text = reason.lower()
    return "out of memory" in text or "outofmemory" in text or "can't allocate memory" in text


class CollectionError(UserError):
    """Every problem a collection tried was skipped: nothing is marked done, so that the command
    corrected (its backends, its device) measures them."""

    def __init__(self, output: str | os.PathLike, skipped: list[tuple[Problem, str]]):
        reasons = list(dict.fromkeys(reason for _, reason in skipped))
        super().__init__(
            f"{output}: every problem tried was skipped ({len(skipped)}), none marked done; "
            f"{'the reason' if len(reasons) == 1 else f'{len(reasons)} reasons, the first'}: {reasons[0]}"
        )


def _free_device_memory(device: str) -> None:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()

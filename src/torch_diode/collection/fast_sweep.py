"""The fast collection path: Inductor's kernels, compiled once per config, timed on many shapes.

For each problem the choices are those ``torch.compile`` would offer: ATen (cuBLAS), Inductor's
DEFAULT Triton configs and a sample of its EXHAUSTIVE configs, all scaled to the shape exactly as
Inductor scales them (:mod:`..inductor.config_space`). The Triton configs run as :mod:`.triton_mm`'s copies
of Inductor's mm/bmm templates. Speed comes from three things:

1. every distinct kernel variant is compiled once, by a pool of worker processes (Triton's front
   end holds the GIL, so threads barely compile in parallel), and shared by all problems
   (:mod:`.kernel_compiler`);
2. timing follows Inductor's own method (flush the L2 cache, CUDA events around one launch,
   minimum over repetitions) with fewer repetitions, all queued before a single synchronisation
   (:mod:`.timing`);
3. the EXHAUSTIVE sample is chosen by a seeded hash of each raw config, so different shapes
   pick the same configs and reuse the same compiled kernels.

Results go to chunk files (``<stem>_chunkNNNN<suffix>``) written atomically after every problem;
a rerun skips problems already done, so a killed run loses at most the problem in flight.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..features import k_split
from ..hardware import DeviceError, current_device
from ..inductor.config_space import (
    aten_configs,
    decompose_k_configs,
    tma_configs,
    tma_offered,
    triton_configs,
)
from ..types import KernelConfig, Problem, TimedConfig, problem_key
from .kernel_compiler import KernelCompiler
from .operands import layout_tensors
from .recorder import Collector
from .sweep_state import (
    DEFAULT_COMPILE_TIMEOUT_S,
    SweepSummary,
    begin,
    chunked,
    done_keys,
    held_keys,
    mark,
    open_collector,
    skip_crashed,
)
from .timing import LEAD_US, TIMING, flush_buffer, time_launchers

logger = logging.getLogger(__name__)

DEFAULT_EXHAUSTIVE_SAMPLE = 350
DEFAULT_REPS = 10


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _config_rank(config: KernelConfig, draw: int | str) -> int:
    return _hash64(
        f"{draw}:{config.block_m}:{config.block_n}:{config.block_k}:"
        f"{config.num_stages}:{config.num_warps}:{config.group_m}"
    )


def sample_draw(problem: Problem, seed: int, rotations: int = 1) -> int | str:
    """Which draw of the EXHAUSTIVE list a problem's sample takes: with one rotation every problem
    of a run takes the same (``seed``'s), so the run compiles each sampled config's kernel once
    for all problems that specialise it alike, and never times the rest of the list; with
    ``rotations`` R, one of R draws by a hash of the problem, so a run's problems time about R
    times as many of the list's configs between them, at the cost of compiling up to R times as
    many kernels; with 0, a draw of its own for every problem (benchmarks/studies/sample_rotation.py)."""
    if rotations == 1:
        return seed
    problem_hash = _hash64(repr(problem_key(problem)))
    return f"{seed}/{problem_hash if rotations == 0 else problem_hash % rotations}"


def choices_for(
    problem: Problem,
    exhaustive_sample: int,
    seed: int,
    num_sms: int | None = None,
    device_has_tma: bool | None = None,
    rotations: int = 1,
) -> list[KernelConfig]:
    """ATen + decompose_k where Inductor offers it + the DEFAULT list + up to ``exhaustive_sample``
    EXHAUSTIVE configs (no duplicates; the draw :func:`sample_draw` gives ``problem`` under
    ``seed`` and ``rotations``) + the persistent TMA template's DEFAULT list where Inductor
    offers it (:func:`..inductor.config_space.tma_offered`: ``ENABLE_PERSISTENT_TMA_MATMUL=1``;
    ``num_sms``: the GPU's SM count, None: no TMA configs). TMA's DEFAULT list (at most 8) is what
    a max-autotune run in the DEFAULT search space offers the choice handler."""
    default = triton_configs(problem, "DEFAULT")
    seen = set(default)
    exhaustive = [c for c in triton_configs(problem, "EXHAUSTIVE") if c not in seen]
    if exhaustive_sample >= 0 and len(exhaustive) > exhaustive_sample:
        draw = sample_draw(problem, seed, rotations)
        exhaustive = sorted(exhaustive, key=lambda c: _config_rank(c, draw))[:exhaustive_sample]
    tma = tma_configs(problem, num_sms) if num_sms and tma_offered(problem, device_has_tma) else []
    return aten_configs(problem) + decompose_k_configs(problem) + default + exhaustive + tma


# ----- tensors ----------------------------------------------------------------------------------
def launchers_for(
    problem: Problem,
    configs: Sequence[KernelConfig],
    a: Any,
    b: Any,
    out: Any,
    bias: Any,
    errors: Sequence[str | None] | None = None,
) -> list[Callable[[], Any] | None]:
    """One launcher per config on the operands: the untiled choices as Inductor calls them, the
    templates' compiled kernels; None where ``errors`` (one per config) says it did not compile."""
    from .triton_mm import make_launcher

    launchers: list[Callable[[], Any] | None] = []
    for config, error in zip(configs, errors if errors is not None else [None] * len(configs)):
        if not config.is_tiled:
            launchers.append(untiled_launcher(problem, config, a, b, out, bias))
        else:
            launchers.append(None if error is not None else make_launcher(a, b, out, bias, config))
    return launchers


def untiled_launcher(problem: Problem, config: KernelConfig, a: Any, b: Any, out: Any, bias: Any) -> Callable[[], Any]:
    """How Inductor runs each choice that is not a tiled template: the ATen calls (``out=``
    variants, bias expanded or 1-D) and decompose_k."""
    import torch

    tid = config.template_id
    if tid == "decompose_k":
        return decompose_k_launcher(a, b, out, k_split(config))
    if tid in ("aten::mm", "aten::bmm"):
        fn = torch.mm if tid == "aten::mm" else torch.bmm
        return lambda: fn(a, b, out=out)
    if tid == "aten::bias_addmm":
        bias_1d = bias[0] if bias.stride(0) == 0 else bias
        return lambda: torch.addmm(bias_1d, a, b, out=out)
    if tid == "aten::addmm":
        return lambda: torch.addmm(bias, a, b, out=out)
    if tid == "aten::baddbmm":
        return lambda: torch.baddbmm(bias, a, b, out=out)
    raise ValueError(f"no ATen launcher for {tid}")


def decompose_k_launcher(a: Any, b: Any, out: Any, splits: int) -> Callable[[], Any]:
    """Inductor's decompose_k (``torch._inductor.kernel.mm.decomposeK``) as eager PyTorch runs
    it: A and B reshaped into ``splits`` parts of K (a copy where A's layout needs one, as in
    Inductor's subgraph), one cuBLAS bmm into fp32 partial sums, their sum, the cast to the output.
    Inductor compiles the subgraph with ATen's bmm and fuses the sum and the cast into one Triton
    kernel, so this runs one small kernel (over M x N) more than Inductor's."""
    import torch

    m, k = a.shape
    n = b.shape[1]
    if splits < 1 or k % splits:
        raise ValueError(f"decompose_k: K={k} does not split into {splits} parts")
    parts = k // splits
    acc = torch.empty((m, n), dtype=torch.float32, device=a.device)
    wide = {} if a.dtype == torch.float32 else {"out_dtype": torch.float32}

    def run() -> None:
        partial = torch.bmm(a.reshape(m, splits, parts).permute(1, 0, 2), b.reshape(splits, parts, n), **wide)
        torch.sum(partial, 0, out=acc)
        out.copy_(acc)

    return run


def _ptxas() -> str | None:
    """The ptxas this process's Triton compiles with (its compile workers inherit the environment
    that picks it): path and release. Inductor's compile workers use torch's bundled ptxas, and an
    installed handler makes this process do so too (torch_diode.inductor.hooks.use_worker_ptxas)."""
    try:
        from triton import knobs

        tool = knobs.nvidia.ptxas
        return f"{tool.path} (release {tool.version})"
    except Exception:  # no triton, or one without knobs: not recorded
        return None


@dataclass
class FastSweep:
    """Settings of a fast sweep; :meth:`run` measures problems into a dataset file."""

    exhaustive_sample: int = DEFAULT_EXHAUSTIVE_SAMPLE
    seed: int = 0
    reps: int = DEFAULT_REPS
    exhaustive_rotations: int = 1  # draws of the EXHAUSTIVE sample a run's problems take (sample_draw)
    workers: int = field(default_factory=lambda: max(1, min(16, os.cpu_count() or 1)))
    device: str = "cuda"
    progress: bool = True
    compile_timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S

    def settings(self) -> dict[str, Any]:
        from torch._inductor import config

        from . import kernel_spec

        return {
            "mode": "fast",
            "persistent_tma": bool(config.triton.enable_persistent_tma_matmul),
            "layout_hints": kernel_spec.LAYOUT_HINTS,
            "ptxas": _ptxas(),
            "exhaustive_sample": self.exhaustive_sample,
            "exhaustive_rotations": self.exhaustive_rotations,
            "seed": self.seed,
            "reps": self.reps,
            "timing": TIMING,
            "lead_us": LEAD_US,
            # the kernels' ints held as constants, where any (kernel_spec.CONSTANT_INTS)
            **({"constant_ints": list(kernel_spec.CONSTANT_INTS)} if kernel_spec.CONSTANT_INTS else {}),
        }

    def run(
        self,
        problems: Sequence[Problem],
        output: str | os.PathLike,
        chunk_size: int | None = None,
        settings_record: dict | None = None,
    ) -> SweepSummary:
        """Measures ``problems`` into ``output`` (or its chunk files, ``chunk_size`` problems each)."""
        import torch

        if not self.device.startswith("cuda") or not torch.cuda.is_available():
            raise DeviceError(
                f"--search-mode fast runs Triton kernels on a CUDA GPU; device {self.device!r} is not one "
                "(use --search-mode max-autotune on this machine)"
            )
        try:
            import triton  # noqa: F401
        except ImportError:
            raise DeviceError("--search-mode fast needs triton (installed with CUDA builds of torch)") from None
        with current_device(self.device):
            return self._run(problems, output, chunk_size, settings_record)

    def _run(self, problems, output, chunk_size, settings_record) -> SweepSummary:
        from tqdm import tqdm

        from ..hardware import detect_hardware

        start = time.perf_counter()
        summary = SweepSummary()
        hardware = detect_hardware(self.device)
        todo = self._pending(problems, output, chunk_size, hardware, settings_record, summary)
        summary.problems_resumed = len(problems) - len(todo)
        if not todo:  # resumed with everything done: no compile workers to start
            summary.seconds = time.perf_counter() - start
            return summary
        plan = {
            problem_key(p): choices_for(
                p, self.exhaustive_sample, self.seed, hardware.sm_count, rotations=self.exhaustive_rotations
            )
            for _, p in todo
        }
        flush = flush_buffer(self.device)
        current: Collector | None = None
        with KernelCompiler(self.workers, self.compile_timeout_s) as compiler, contextlib.ExitStack() as release:
            release.callback(lambda: current is not None and current.close())
            # every variant is queued up front, in problem order: the workers compile ahead while
            # this process times the problems whose kernels are ready
            variants = {
                problem_key(p): [compiler.submit(p, c) if c.is_tiled else None for c in plan[problem_key(p)]]
                for _, p in todo
            }
            summary.kernels_compiled = len(compiler.futures)
            logger.info("%d problems to measure, %d kernel variants to compile", len(todo), summary.kernels_compiled)
            for col, problem in tqdm(todo, desc="collect", unit="shape", disable=not self.progress):
                t_wait = time.perf_counter()
                errors = [compiler.result(k) if k is not None else None for k in variants[problem_key(problem)]]
                summary.compile_seconds += time.perf_counter() - t_wait
                if col is not current:
                    if current is not None:
                        current.close()
                    col.reopen()
                    current = col
                self._measure(col, hardware, problem, plan[problem_key(problem)], errors, flush, summary)
            summary.compile_pool_broken = compiler.pool_broken
            summary.compile_timeouts = compiler.timeouts
        summary.seconds = time.perf_counter() - start
        return summary

    def _pending(
        self, problems, output, chunk_size, hardware, settings_record, summary
    ) -> list[tuple[Collector, Problem]]:
        """The problems still to measure, each with the collector of its (chunk) file."""
        record = {**self.settings(), **(settings_record or {})}
        # Collectors serve as resumable dataset files here: no feedback saver is installed. Each
        # holds its file's writer lock only while its problems are measured (one lock per chunk
        # file at once would be as many open files), and a file is written first when its first
        # problem is: a run stopped early leaves no empty chunk files behind.
        files = []
        for chunk, path in chunked(problems, output, chunk_size):
            col = open_collector(path, hardware.device_name, self.device, settings=record, disable_caches=False)
            summary.problems_skipped += skip_crashed(col) is not None
            done = done_keys(col) | held_keys(col)
            files.append((col, [p for p in chunk if problem_key(p) not in done]))
            col.release()
        return [(col, p) for col, left in files for p in left]

    def _measure(self, col, hardware, problem, configs, errors, flush, summary) -> None:
        """Times ``problem``'s ``configs`` (``errors``: their compile errors) into ``col``; a problem
        whose operands do not fit on the device is marked skipped."""
        import torch

        begin(col, problem)
        try:
            a, b, out, bias = layout_tensors(problem, self.device)
            launchers = launchers_for(problem, configs, a, b, out, bias, errors)
            times_ms = time_launchers(launchers, self.reps, flush)
        except torch.cuda.OutOfMemoryError as e:
            mark(col, problem, f"OutOfMemoryError: {str(e).splitlines()[0]}"[:300])
            summary.problems_skipped += 1
            torch.cuda.empty_cache()
            return
        finally:
            a = b = out = bias = None  # noqa: F841  free before the timings are recorded
        timed = [
            TimedConfig(c, t * 1000.0) if t is not None and t > 0 and math.isfinite(t) else TimedConfig.failure(c)
            for c, t in zip(configs, times_ms)
        ]
        col.dataset.add(hardware, problem, timed)
        summary.problems_measured += 1
        summary.timed_configs += len(timed)
        summary.failed_configs += sum(t.failed for t in timed)
        mark(col, problem, None)


__all__ = [
    "FastSweep",
    "choices_for",
    "launchers_for",
    "sample_draw",
]

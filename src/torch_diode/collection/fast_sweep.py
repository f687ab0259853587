"""The fast collection path: Inductor's kernels, compiled once per config, timed on many shapes.

For each problem the choices are those ``torch.compile`` would offer: ATen (cuBLAS), Inductor's
DEFAULT Triton configs and a sample of its EXHAUSTIVE configs, all scaled to the shape exactly as
Inductor scales them (:mod:`..inductor.config_space`). The Triton configs run as :mod:`.triton_mm`'s copies
of Inductor's mm/bmm templates. Speed comes from three things:

1. every distinct kernel variant is compiled once, by a pool of worker processes (Triton's front
   end holds the GIL, so threads barely compile in parallel), and shared by all problems;
2. timing follows Inductor's own method (flush the L2 cache, CUDA events around one launch,
   minimum over repetitions) with fewer repetitions, all queued before a single synchronisation;
3. the EXHAUSTIVE sample is chosen by a seeded hash of each raw config, so different shapes
   pick the same configs and reuse the same compiled kernels.

Results go to chunk files (``<stem>_chunkNNNN<suffix>``) written atomically after every problem;
a rerun skips problems already done, so a killed run loses at most the problem in flight.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..features import k_split
from ..hardware import DeviceError, current_device
from ..inductor.config_space import (
    aten_configs,
    decompose_k_configs,
    scaled_configs,
    tma_configs,
    tma_offered,
    triton_configs,
)
from ..types import KernelConfig, Problem, TimedConfig, problem_key
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


def recorded_rotations(settings: dict) -> int:
    """The ``--exhaustive-rotations`` a collection's recorded settings say it drew its samples
    with: a collection from before the option recorded none and drew one sample (1)."""
    rotations = settings.get("exhaustive_rotations")
    return 1 if rotations is None else int(rotations)


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


# ----- precompilation ---------------------------------------------------------------------------
def _stride_class(v: int) -> str:
    return "1" if v == 1 else ("16" if v % 16 == 0 else "x")


@functools.lru_cache(maxsize=256)
def _meta_layout(problem: Problem) -> tuple[Any, Any, Any, Any]:
    """The problem's operands on the meta device: one set per problem, shared by all its configs."""
    return layout_tensors(problem, "meta", fill=False)


def variant_key(problem: Problem, config: KernelConfig, specialize_sizes: bool | None = None) -> tuple:
    """What makes Triton compile a new binary: the kernel, dtypes, constexprs and the stride
    classes it specialises on (1, multiple of 16, other)."""
    from . import kernel_spec
    from .kernel_spec import launch_spec

    if specialize_sizes is None:
        specialize_sizes = kernel_spec.SPECIALIZE_SIZES
    batched, _, spec = launch_spec(*_meta_layout(problem), config)
    ints = tuple(_stride_class(int(v)) for v in spec["args"] if isinstance(v, int))
    dtypes = (problem.dtype_a, problem.dtype_b, problem.dtype_out)
    if not specialize_sizes:  # M, N, K (and the batch) are do_not_specialize
        ints = ints[4 if batched else 3 :]
    elif batched:  # the batch count is never specialised (it only sizes the grid)
        ints = ints[:3] + ints[4:]
    return (batched, dtypes, tuple(sorted(spec["meta"].items())), ints)


def _warmup_one(problem: Problem, config: KernelConfig) -> str | None:
    """Compiles one kernel variant (from the problem's shapes and strides alone: no operand
    memory is allocated). Error text or None."""
    from .triton_mm import warmup

    try:
        warmup(*layout_tensors(problem, "meta", fill=False), config)
        return None
    except Exception as e:  # recorded as a failure of that config
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


@contextlib.contextmanager
def _environment(**values: str):
    """This process's environment with ``values`` set, as processes started meanwhile inherit it;
    restored afterwards."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _triton_cache_dir() -> str | None:
    """The Triton cache directory this process reads (None: Triton's default)."""
    try:
        from triton import knobs

        return str(knobs.cache.dir)
    except Exception:  # no triton, or one without knobs
        return os.environ.get("TRITON_CACHE_DIR")


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


def _kernel_settings() -> dict[str, bool]:
    """The kernel_spec switches of this process (a benchmark may turn them), which its compile
    workers take over: a variant compiled otherwise would not be the one this process launches."""
    from . import kernel_spec

    return {"SPECIALIZE_SIZES": kernel_spec.SPECIALIZE_SIZES, "LAYOUT_HINTS": kernel_spec.LAYOUT_HINTS}


def _worker_init(triton_cache_dir: str | None = None, kernel_settings: dict[str, bool] | None = None) -> None:
    """A spawned worker re-imports the caller's main module, which may point TRITON_CACHE_DIR
    elsewhere (a script that sets a fresh temporary cache at import gets one per worker); the
    caller loads what the workers compiled only if they write the cache it reads. The worker
    compiles with the caller's kernel settings. It leads a process group of its own, with the
    compilers it starts (ptxas), so that :func:`_kill_workers` stops them together."""
    import logging as _logging

    from . import kernel_spec

    if hasattr(os, "setpgrp"):
        os.setpgrp()
    if triton_cache_dir:
        os.environ["TRITON_CACHE_DIR"] = triton_cache_dir
    for name, value in (kernel_settings or {}).items():
        setattr(kernel_spec, name, value)
    _logging.getLogger("torch").setLevel(_logging.ERROR)
    try:
        from . import triton_mm  # noqa: F401  import once per worker, not per kernel
    except ImportError:  # no triton here: every compile reports it
        pass


def _kill_workers(pool: Any) -> None:
    """Stops a ProcessPoolExecutor's worker processes at once, whatever they are doing (its own
    ``shutdown`` waits for a running call to end), with what they started: a compiler left
    running would hold the executor's pipes, and this process's exit with them."""
    import signal

    # the executor's table of its processes (no public way to reach them before Python 3.14)
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the worker's group (_worker_init)
        except (AttributeError, OSError):  # no process groups, or not yet its own group
            with contextlib.suppress(Exception):
                process.kill()
    kill = getattr(pool, "kill_workers", None)  # Python 3.14
    if kill is not None:
        with contextlib.suppress(Exception):
            kill()
    pool.shutdown(wait=False, cancel_futures=True)


# seconds new compile workers may take to start (spawn, import torch and triton) before they count
# as not to be had; their start is not part of any variant's compile timeout
WORKER_START_S = 300.0


class KernelCompiler:
    """Compiles kernel variants in a pool of worker processes, in the order they are asked for,
    while the caller times the ones already done.

    Processes, not threads: Triton's front end holds the GIL, so threads barely compile in parallel
    (benchmarks/studies/compile_reuse.py measures it). The workers write Triton's on-disk cache; the first
    launch in this process then loads the binary from it instead of compiling.
    ``workers <= 1`` compiles in this process. If the pool breaks (a worker crashed), the rest
    is compiled in this process and the stats say so.

    A variant whose result is waited for longer than ``timeout_s`` is recorded as failed ("compile
    timed out") and the workers are replaced: the variants are waited for in the order they were
    asked for, so by then every earlier one is done and that one has been compiling at least as
    long (new workers are waited for until they have started: their start is not counted).
    Variants that were still compiling are asked of the new workers again (Triton's cache keeps
    what was finished).
    ``timeouts`` counts them; in this process (``workers <= 1`` or a broken pool) a compile is not
    bounded. ``compile_one(problem, config)`` compiles one variant and returns its error text or
    None."""

    def __init__(
        self,
        workers: int,
        timeout_s: float = DEFAULT_COMPILE_TIMEOUT_S,
        compile_one: Callable[[Problem, KernelConfig], str | None] = _warmup_one,
    ) -> None:
        self.workers = workers
        self.timeout_s = min(timeout_s, threading.TIMEOUT_MAX)
        self.compile_one = compile_one
        self.futures: dict[tuple, Any] = {}
        self.results: dict[tuple, str | None] = {}
        self.pool: Any = None
        self.pool_broken = False
        self.timeouts = 0
        if workers > 1:
            try:
                self.pool = self._new_pool()
            except Exception as e:  # no workers to be had: compile in this process
                logger.warning("no compile workers (%s: %s); compiling in this process", type(e).__name__, e)
                self.pool_broken = True

    def _new_pool(self) -> Any:
        """A pool whose workers have started (one call each answered), so that the compile
        timeout counts compiling alone."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init,
            initargs=(_triton_cache_dir(), _kernel_settings()),
        )
        try:
            # the pool spawns a worker per call until it has them all, with this process's
            # environment: unpickling _worker_init imports torch_diode, whose import-time
            # registration (CUDA, the model file, Inductor's choices) a compiler has no use for.
            # The ptxas the registration picks travels in TRITON_PTXAS_PATH, which is inherited.
            with _environment(TORCH_DIODE_NO_AUTOREGISTER="1"):
                calls = [pool.submit(os.getpid) for _ in range(self.workers)]
            for started in calls:
                started.result(timeout=WORKER_START_S)
        except BaseException:
            _kill_workers(pool)
            raise
        return pool

    def submit(self, problem: Problem, config: KernelConfig) -> tuple:
        key = variant_key(problem, config)
        if key not in self.futures and key not in self.results:
            if self.pool is not None and not self.pool_broken:
                self.futures[key] = (self.pool.submit(self.compile_one, problem, config), problem, config)
            else:
                self.futures[key] = (None, problem, config)
        return key

    def result(self, key: tuple) -> str | None:
        """Waits for the variant ``key``; its compile error or None."""
        from concurrent.futures import TimeoutError as FutureTimeout

        if key in self.results:
            return self.results[key]
        future, problem, config = self.futures.pop(key)
        error: str | None
        if future is None:
            error = self.compile_one(problem, config)
        else:
            try:
                error = future.result(timeout=self.timeout_s)
            except FutureTimeout:
                error = f"compile timed out after {self.timeout_s:g} s"
                self.timeouts += 1
                logger.warning("%s %s: %s; replacing the compile workers", problem.short(), config.short(), error)
                self._replace_pool()
            except Exception as e:  # BrokenProcessPool: compile here from now on
                if not self.pool_broken:
                    logger.warning(
                        "compile worker pool failed (%s: %s); compiling in this process", type(e).__name__, e
                    )
                self.pool_broken = True
                error = self.compile_one(problem, config)
        self.results[key] = error
        return error

    def _replace_pool(self) -> None:
        """Kills the workers (one of them is stuck) and asks new ones for every variant not
        finished yet."""
        _kill_workers(self.pool)
        self.pool = None
        pending = [
            (key, problem, config)
            for key, (future, problem, config) in self.futures.items()
            # those compiled before the workers were stopped are kept
            if not (future is not None and future.done() and not future.cancelled() and future.exception() is None)
        ]
        try:
            self.pool = self._new_pool()
            for key, problem, config in pending:
                self.futures[key] = (self.pool.submit(self.compile_one, problem, config), problem, config)
        except Exception as e:  # no new workers: the rest is compiled in this process, as for a broken pool
            logger.warning("no new compile workers (%s: %s); compiling in this process", type(e).__name__, e)
            if self.pool is not None:  # what it was given is compiled here instead
                _kill_workers(self.pool)
                self.pool = None
            self.pool_broken = True
            for key, problem, config in pending:
                self.futures[key] = (None, problem, config)

    def close(self) -> None:
        if self.pool is not None:
            if any(f is not None and not f.done() for f, _, _ in self.futures.values()):
                _kill_workers(self.pool)  # left early: nobody waits for what is still compiling
            else:
                self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def __enter__(self) -> KernelCompiler:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def precompile(
    pairs: Sequence[tuple[Problem, KernelConfig]], workers: int, progress: bool = True
) -> dict[tuple, str | None]:
    """Compiles every distinct variant of ``pairs`` with ``workers`` processes; variant -> error."""
    from tqdm import tqdm

    with KernelCompiler(workers) as compiler:
        keys = list(dict.fromkeys(compiler.submit(p, c) for p, c in pairs))
        for key in tqdm(keys, desc="compile", unit="kernel", disable=not progress):
            compiler.result(key)
        return dict(compiler.results)


# ----- timing -----------------------------------------------------------------------------------
# GPU time queued before each timed launch's flush (microseconds; 0: none). The host enqueues the
# flush, the start event and the launch; the flush hides the host's time behind it only while that
# time is shorter than the flush, which a faster memory shortens (python -m
# benchmarks.studies.timing_stability times both ways, with and without a busy host).
LEAD_US = 100.0
TIMING = (
    "min over reps of CUDA events around one launch after an L2 flush (Inductor's method), "
    "with lead_us of GPU time queued before each flush"
)


@functools.cache
def _sleep_cycles_per_us(device_index: int) -> float:
    """The GPU's clock as torch.cuda._sleep counts it: a known spin timed with events (the fastest
    of three, after a longer spin that loads the kernel and lets the clock rise)."""
    import torch

    cycles = 2_000_000
    with torch.cuda.device(device_index):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(10 * cycles)
        elapsed_ms = []
        for _ in range(3):
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            torch.cuda.synchronize()
            elapsed_ms.append(start.elapsed_time(end))
    return cycles / (1000.0 * min(elapsed_ms))


def _queue(fn: Callable[[], Any], reps: int, flush: Any, lead_us: float | None = None) -> list[tuple[Any, Any]]:
    import torch

    lead_us = LEAD_US if lead_us is None else lead_us
    lead = int(lead_us * _sleep_cycles_per_us(torch.cuda.current_device())) if lead_us > 0 else 0
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in pairs:
        if lead:
            torch.cuda._sleep(lead)
        flush.zero_()
        start.record()
        fn()
        end.record()
    return pairs


def time_launchers(
    launchers: Sequence[Callable[[], Any] | None],
    reps: int,
    flush: Any,
    long_ms: float = 1.0,
    lead_us: float | None = None,
) -> list[float | None]:
    """Milliseconds per launcher (min over the repetitions), Inductor's method: flush the cache
    (see :func:`flush_buffer`), then events around one launch. Two repetitions each first; those
    under ``long_ms`` get ``reps - 2`` more (long kernels vary little and cost the most), the others
    one more, queued after every launcher's first two: a stall of the host or the GPU now and then
    lands between a repetition's events (near 1 ms, on kernels of tens of microseconds), and two
    repetitions queued back to back can both hold it. ``None`` (or an exception while launching)
    gives ``None``."""
    import torch

    pending: list[list[tuple[Any, Any]] | None] = []
    for fn in launchers:
        if fn is None:
            pending.append(None)
            continue
        try:
            fn()  # first launch: loads the binary, catches launch-time errors
            pending.append(_queue(fn, min(2, reps), flush, lead_us))
        except Exception as e:
            logger.debug("launch failed: %s", e)
            pending.append(None)
    torch.cuda.synchronize()
    for i, fn in enumerate(launchers):
        p = pending[i]
        if p is not None and reps > 2:
            p.extend(_queue(fn, reps - 2 if min(s.elapsed_time(e) for s, e in p) < long_ms else 1, flush, lead_us))
    torch.cuda.synchronize()
    return [None if p is None else min(s.elapsed_time(e) for s, e in p) for p in pending]


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
        import torch
        from tqdm import tqdm

        from ..hardware import detect_hardware

        start = time.perf_counter()
        summary = SweepSummary()
        hardware = detect_hardware(self.device)
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
        todo = [(col, p) for col, left in files for p in left]
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
                configs, keys = plan[problem_key(problem)], variants[problem_key(problem)]
                t_wait = time.perf_counter()
                errors = [compiler.result(k) if k is not None else None for k in keys]
                summary.compile_seconds += time.perf_counter() - t_wait
                if col is not current:
                    if current is not None:
                        current.close()
                    col.reopen()
                    current = col
                begin(col, problem)
                try:
                    a, b, out, bias = layout_tensors(problem, self.device)
                    launchers = launchers_for(problem, configs, a, b, out, bias, errors)
                    times_ms = time_launchers(launchers, self.reps, flush)
                except torch.cuda.OutOfMemoryError as e:
                    mark(col, problem, f"OutOfMemoryError: {str(e).splitlines()[0]}"[:300])
                    summary.problems_skipped += 1
                    torch.cuda.empty_cache()
                    continue
                finally:
                    a = b = out = bias = None  # noqa: F841  free before the next problem
                timed = [
                    TimedConfig(c, t * 1000.0)
                    if t is not None and t > 0 and math.isfinite(t)
                    else TimedConfig.failure(c)
                    for c, t in zip(configs, times_ms)
                ]
                col.dataset.add(hardware, problem, timed)
                summary.problems_measured += 1
                summary.timed_configs += len(timed)
                summary.failed_configs += sum(t.failed for t in timed)
                mark(col, problem, None)
            summary.compile_pool_broken = compiler.pool_broken
            summary.compile_timeouts = compiler.timeouts
        summary.seconds = time.perf_counter() - start
        return summary


FLUSH_BYTES = 256 * 2**20


def flush_buffer(device: str) -> Any:
    """The buffer zeroed before each timed launch: larger than L2 (a cold cache, as Inductor
    measures) and, after the lead (LEAD_US), long enough to zero that the host's launch overhead
    is hidden behind it instead of landing between the events, as it does behind an L2-sized flush
    (python -m benchmarks.studies.timing_methods, benchmarks.studies.timing_stability; benchmarks/studies/README.md)."""
    import torch

    return torch.empty(max(FLUSH_BYTES, hardware_l2_bytes()) // 4, dtype=torch.int32, device=device)


def hardware_l2_bytes() -> int:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)


__all__ = [
    "FastSweep",
    "choices_for",
    "launchers_for",
    "precompile",
    "recorded_rotations",
    "sample_draw",
    "time_launchers",
    "scaled_configs",
]

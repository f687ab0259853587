"""Compiling the fast collector's kernel variants: each distinct variant (:func:`variant_key`) once,
in a pool of worker processes, while the caller times the ones already compiled.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..types import KernelConfig, Problem
from .operands import layout_tensors
from .sweep_state import DEFAULT_COMPILE_TIMEOUT_S

logger = logging.getLogger(__name__)


def _stride_class(v: int) -> str:
    return "1" if v == 1 else ("16" if v % 16 == 0 else "x")


@functools.lru_cache(maxsize=256)
def _meta_layout(problem: Problem) -> tuple[Any, Any, Any, Any]:
    """The problem's operands on the meta device: one set per problem, shared by all its configs."""
    return layout_tensors(problem, "meta", fill=False)


def variant_key(problem: Problem, config: KernelConfig, specialize_sizes: bool | None = None) -> tuple:
    """What makes Triton compile a new binary: the kernel, dtypes, constexprs, the classes of the
    ints it specialises on (1, multiple of 16, other) and the values of those it holds as constants
    (kernel_spec.CONSTANT_INTS; the mm and bmm kernels)."""
    from . import kernel_spec
    from .kernel_spec import launch_spec

    if specialize_sizes is None:
        specialize_sizes = kernel_spec.SPECIALIZE_SIZES
    batched, _, spec = launch_spec(*_meta_layout(problem), config)
    values = [int(v) for v in spec["args"] if isinstance(v, int)]
    constant = () if config.template_id == kernel_spec.TMA_TEMPLATE_ID else kernel_spec.CONSTANT_INTS
    sizes = ("M", "N", "K")
    ints = []
    for name, value in zip(kernel_spec.int_names(batched), values):
        if name in constant:
            ints.append(value)
        elif name == "BATCH" or (name in sizes and not specialize_sizes):
            continue  # not specialised: the batch only sizes the grid; M, N, K do_not_specialize
        else:
            ints.append(_stride_class(value))
    dtypes = (problem.dtype_a, problem.dtype_b, problem.dtype_out)
    return (batched, dtypes, tuple(sorted(spec["meta"].items())), tuple(ints))


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


def _kernel_settings() -> dict[str, Any]:
    """The kernel_spec switches of this process (a benchmark may turn them), which its compile
    workers take over: a variant compiled otherwise would not be the one this process launches."""
    from . import kernel_spec

    return {
        "SPECIALIZE_SIZES": kernel_spec.SPECIALIZE_SIZES,
        "LAYOUT_HINTS": kernel_spec.LAYOUT_HINTS,
        "CONSTANT_INTS": kernel_spec.CONSTANT_INTS,
    }


def _worker_init(triton_cache_dir: str | None = None, kernel_settings: dict[str, Any] | None = None) -> None:
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


__all__ = ["KernelCompiler", "WORKER_START_S", "precompile", "variant_key"]

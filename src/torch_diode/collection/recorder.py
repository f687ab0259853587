"""Recording every autotuned GEMM choice that torch.compile benchmarks.

``with torch_diode.collect("runs/my_model.msgpack"): compiled(x)`` adds a feedback saver to
Inductor's algorithm selector; each time Inductor benchmarks the choices for an mm, addmm, bmm or
baddbmm, the full problem and every choice with its time (failures kept as failures) go into a
:class:`~torch_diode.types.Dataset` that is written to ``path`` atomically after each GEMM, so a
killed process loses at most the GEMM in flight.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..dataset_io import DatasetWriter
from ..features import is_aten
from ..inductor.config_space import aten_allows_tf32, tf32_enabled
from ..inductor.convert import config_from_choice, problem_from_nodes
from ..inductor.hooks import (
    check_cpu_isa_with_caches,
    feedback_savers,
    resume_handlers,
    set_inductor_config,
    suspend_handlers,
)
from ..types import OPS, Dataset, Hardware, KernelConfig, Problem, TimedConfig
from .provenance import COLLECTION_TOOL

logger = logging.getLogger(__name__)

RECORDED_OPS = OPS

# Inductor config values the recorder sets while it is active: with caches on, Inductor can take
# timings from its autotune cache or skip lowering on an FX-graph cache hit, and the saver would
# see stale or no timings.
_CACHE_OFF = {"force_disable_caches": True}


def _recorded_config(problem: Problem, tf32: bool, choice: Any) -> KernelConfig:
    """A choice's config as recorded: an ATen choice is marked ``allow_tf32`` where cuBLAS may
    run TF32 kernels (:func:`~torch_diode.inductor.config_space.aten_allows_tf32`)."""
    config = config_from_choice(choice)
    if is_aten(config) and aten_allows_tf32(problem, tf32):
        config = dataclasses.replace(config, allow_tf32=True)
    return config


class Collector:
    """Records autotuned GEMM choices from torch.compile into a dataset file.

    Use as a context manager or with :meth:`start` / :meth:`stop`. An existing file at ``path``
    is loaded and extended (a resumed run adds to it). ``flush_every`` GEMMs the file is
    rewritten atomically. ``stats`` counts recorded GEMMs, skipped ops and errors.

    From creation to :meth:`stop` (or :meth:`close`) the collector holds the file's writer lock
    (:class:`~torch_diode.dataset_io.DatasetWriter`): a second writer of the same file is refused with
    DatasetLockedError rather than overwriting this one's data.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        flush_every: int = 1,
        ops: tuple[str, ...] = RECORDED_OPS,
        disable_caches: bool = True,
        settings: dict[str, Any] | None = None,
        suspend_diode: bool = True,
    ):
        self.path = Path(path)
        self.flush_every = max(1, flush_every)
        self.ops = tuple(ops)
        self.disable_caches = disable_caches
        self.suspend_diode = suspend_diode
        self._suspended: list[Any] = []
        self._writer = DatasetWriter(self.path)
        try:
            self.dataset = self._writer.load() or Dataset()
        except BaseException:
            self._writer.close()
            raise
        # as the file gives it back (lists for tuples), so that a resumed run finds its record
        self._source = json.loads(json.dumps({"tool": COLLECTION_TOOL, "settings": dict(settings or {})}))
        self._added_source = False
        self._record_source()
        self.stats: Counter[str] = Counter()
        self._saved_config: dict[str, Any] = {}
        self._active = False
        self._pending = 0
        self._hardware: dict[str, Hardware] = {}
        # The exact object added to Inductor's list, so that stop() removes only ours.
        self._saver = self._on_feedback

    # ----- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Collector:
        if self._active:
            return self
        savers = feedback_savers()  # an unsupported torch fails here, before anything changes
        self.reopen()
        if self.suspend_diode:
            # record Inductor's own autotuning: with diode's handler in place (e.g. registered on
            # import on a GPU with a shipped model) Inductor would benchmark diode's pick only
            self._suspended = suspend_handlers()
        if self.disable_caches:
            import torch

            if not torch.cuda.is_available():  # GEMMs compiled for the CPU
                check_cpu_isa_with_caches()
            self._saved_config = set_inductor_config(_CACHE_OFF)
        savers.append(self._saver)
        self._active = True
        logger.info("torch-diode: recording autotuned GEMMs into %s", self.path)
        return self

    def stop(self) -> Dataset:
        if not self._active:
            self._writer.close()  # never started: nothing recorded to write
            return self.dataset
        savers = feedback_savers()
        for i in range(len(savers) - 1, -1, -1):
            if savers[i] is self._saver:
                del savers[i]
        set_inductor_config(self._saved_config)
        self._saved_config = {}
        if self._suspended:
            resume_handlers(self._suspended)
            self._suspended = []
        self._active = False
        self.close()
        logger.info("torch-diode: recording stopped: %s", dict(self.stats))
        return self.dataset

    def close(self) -> None:
        """Writes the file and gives up its lock (done by :meth:`stop`)."""
        if self._writer.locked:
            try:
                self.flush()
            finally:
                self._writer.close()

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def flush(self) -> None:
        if not self._writer.locked:
            raise RuntimeError(f"{self.path}: the collector is closed; reopen() takes the file back")
        self._writer.save(self.dataset)
        self._pending = 0

    def reopen(self) -> None:
        """The file's lock again after :meth:`close` or :meth:`release`, and the file as it is now
        (it holds all that this collector wrote, and whatever another writer added since)."""
        if not self._writer.locked:
            self._writer.acquire()
            self.dataset = self._writer.load() or self.dataset
            self._record_source()

    def release(self) -> None:
        """Gives up the file's lock without writing: a file that does not exist yet is made only
        when something is recorded into it (:meth:`reopen` takes it back)."""
        self._writer.close()

    def _record_source(self) -> None:
        """This collection's settings in the file's ``sources``, once: a resumed run with the same
        settings adds no second record."""
        sources = self.dataset.metadata.setdefault("sources", [])
        if self._source not in sources:
            sources.append(self._source)
            self._added_source = True

    def forget_source(self) -> None:
        """Takes this collection's settings record out of the file's ``sources`` again where it
        put it there (a run that measured nothing leaves no record of how it measured)."""
        sources = self.dataset.metadata.get("sources") or []
        if self._added_source and self._source in sources:
            sources.remove(self._source)
            self._added_source = False

    # ----- the saver -----------------------------------------------------------------------------
    def _on_feedback(self, timings: dict, name: str, input_nodes: Any, choices: Any = None, *rest: Any) -> None:
        # Called inside Inductor's lowering: it must never raise into torch.compile.
        try:
            self.record(timings, name, input_nodes, choices)
        except Exception:
            self.stats["errors"] += 1
            logger.exception("torch-diode: could not record the timings of %s", name)

    def _hardware_of(self, node: Any) -> Hardware:
        from ..hardware import detect_hardware

        device = node.get_device()
        key = str(device)
        if key not in self._hardware:
            self._hardware[key] = detect_hardware(device)
        return self._hardware[key]

    def record(self, timings: dict, name: str, input_nodes: Any, choices: Any = None) -> Problem | None:
        """Adds one autotune result (``timings``: ChoiceCaller -> milliseconds)."""
        if name not in self.ops:
            self.stats[f"skipped_{name}"] += 1
            return None
        caller_list = list(choices) if choices else list(timings)
        out_dtype = caller_list[0].layout.dtype
        problem = problem_from_nodes(name, list(input_nodes), out_dtype)
        timed = []
        tf32 = tf32_enabled()
        for choice, time_ms in timings.items():
            config = _recorded_config(problem, tf32, choice)
            if time_ms is None or not math.isfinite(time_ms) or time_ms <= 0:
                timed.append(TimedConfig.failure(config))
                self.stats["failed_choices"] += 1
            else:
                timed.append(TimedConfig(config, float(time_ms) * 1000.0))
        # Choices that failed to precompile are dropped from `timings` but listed in `choices`.
        timed_ids = {id(c) for c in timings}
        for choice in caller_list:
            if id(choice) not in timed_ids:
                timed.append(TimedConfig.failure(_recorded_config(problem, tf32, choice)))
                self.stats["failed_choices"] += 1
        self.dataset.add(self._hardware_of(list(input_nodes)[-1]), problem, timed)
        self.stats["gemms"] += 1
        self.stats["choices"] += len(timed)
        self._pending += 1
        if self._pending >= self.flush_every:
            self.flush()
        logger.debug("torch-diode: recorded %s with %d choices", problem.short(), len(timed))
        return problem


def collect(path: str | os.PathLike, **kwargs: Any) -> Collector:
    """Records every autotuned mm/addmm/bmm/baddbmm while active. See :class:`Collector`."""
    return Collector(path, **kwargs)

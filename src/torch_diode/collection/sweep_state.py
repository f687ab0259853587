"""A sweep's progress in its output file: which problems are done, skipped or in flight, so that
the same command resumes a killed run (the Inductor sweep and the fast sweep both keep it), and
how the work is split into chunk files."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..types import Dataset, Problem, problem_key
from .recorder import Collector

logger = logging.getLogger(__name__)

# fast mode: seconds one kernel variant may take to compile in a worker before it is given up. A
# Triton compile of one of the mm templates takes seconds; one that runs for minutes (ptxas on
# some fp32 configs) would otherwise hold the whole sweep, which waits for the variants in order.
DEFAULT_COMPILE_TIMEOUT_S = 120.0


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
    compile_timeouts: int = 0  # fast mode: kernel variants given up after the compile timeout

    def add(self, other: SweepSummary) -> None:
        """Counts ``other``'s problems, configs and seconds in (one chunk file's sweep of a run)."""
        for name in ("problems_measured", "problems_resumed", "problems_skipped", "timed_configs", "failed_configs"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.seconds += other.seconds

    def line(self) -> str:
        return (
            f"{self.problems_measured} problems measured, {self.problems_resumed} already done, "
            f"{self.problems_skipped} skipped; {self.timed_configs} timed configs "
            f"({self.failed_configs} failed) in {self.seconds:.1f} s"
            + (
                f" ({self.kernels_compiled} kernels compiled, {self.compile_seconds:.1f} s of it waiting for them)"
                if self.kernels_compiled
                else ""
            )
            + (f" ({self.compile_timeouts} kernels timed out compiling)" if self.compile_timeouts else "")
            + (" (the compile pool broke; compiled in-process)" if self.compile_pool_broken else "")
        )


def chunked(
    problems: Sequence[Problem], output: str | os.PathLike, chunk_size: int | None
) -> list[tuple[list[Problem], str]]:
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


def shard_path(output: str | os.PathLike, index: int) -> str:
    """``runs/x.msgpack.gz`` -> ``runs/x_shard1.msgpack.gz``."""
    path = Path(output)
    suffix = "".join(s for s in path.suffixes[-2:] if s in (".json", ".msgpack", ".gz"))
    stem = path.name[: -len(suffix)] if suffix else path.name
    return str(path.with_name(f"{stem}_shard{index}{suffix}"))


def done_keys(collector: Collector) -> set[str]:
    meta = collector.dataset.metadata
    return set(meta.get("completed", [])) | {s["problem_key"] for s in meta.get("skipped", [])}


def held_keys(collector: Collector) -> set[str]:
    """The problems the file holds timings of. The fast collector adds a problem's timings and
    marks it done in one write, so in its files these are done too, also in a merged file whose
    inputs recorded no ``completed``."""
    return {problem_key(p) for _, p, _ in collector.dataset.problems()}


def check_measured_here(dataset: Dataset, path: str | os.PathLike, device_name: str, device: str) -> None:
    """A file holds one GPU's measurements: DeviceError naming both where ``dataset`` (of ``path``)
    was measured on another GPU than ``device`` (``device_name``): a data/h100 file on an H200, say."""
    from ..hardware import DeviceError

    others = sorted({hw.device_name for hw, _, _ in dataset.problems()} - {device_name})
    if others:
        raise DeviceError(
            f"{path}: measured on {', '.join(others)}, but {device} is {device_name}: "
            "measure it on that GPU, or write to another file"
        )


def open_collector(path: str | os.PathLike, device_name: str, device: str, **kwargs: Any) -> Collector:
    """The sweep's :class:`Collector` of ``path``; a file measured on another GPU is left as it was
    (:func:`check_measured_here`), before anything is measured."""
    collector = Collector(path, **kwargs)
    try:
        check_measured_here(collector.dataset, path, device_name, device)
    except Exception:
        collector.release()
        raise
    return collector


CRASHED = (
    "the process died twice while measuring it (e.g. a kernel's CUDA fault, which ends the "
    "process's CUDA context); left out when the run resumed"
)


def begin(collector: Collector, problem: Problem) -> None:
    """Records on disk that ``problem`` is being measured, and how many runs have started on it:
    if the process dies with it (a CUDA fault cannot be caught), a resumed run tries it once more
    (the run may have been killed from outside) and after a second death skips it."""
    meta = collector.dataset.metadata
    key = problem_key(problem)
    previous = meta.get("in_flight") or {}
    attempts = int(previous.get("attempts", 0)) + 1 if previous.get("problem_key") == key else 1
    meta["in_flight"] = {"problem_key": key, "attempts": attempts}
    collector.flush()


def skip_crashed(collector: Collector) -> str | None:
    """On resume: the problem that killed two runs is marked skipped (its key, or None)."""
    meta = collector.dataset.metadata
    in_flight = meta.get("in_flight") or {}
    key = in_flight.get("problem_key")
    if key is None or int(in_flight.get("attempts", 0)) < 2 or key in done_keys(collector):
        return None
    logger.warning("skipping %s: %s", key, CRASHED)
    meta.pop("in_flight")
    meta.setdefault("skipped", []).append({"problem_key": key, "reason": CRASHED})
    collector.flush()
    return key


def mark(collector: Collector, problem: Problem, reason: str | None) -> None:
    meta = collector.dataset.metadata
    meta.pop("in_flight", None)
    if reason is None:
        meta.setdefault("completed", []).append(problem_key(problem))
    else:
        meta.setdefault("skipped", []).append(
            {"problem_key": problem_key(problem), "problem": problem.to_dict(), "reason": reason}
        )
    collector.flush()

"""The data model: problems, kernel configs, timings, hardware and datasets.

These types are the stable contract between collection, training and validation. Every type has
``to_dict`` / ``from_dict``; datasets are saved as JSON or msgpack (optionally gzip-compressed:
``.json``, ``.json.gz``, ``.msgpack``, ``.msgpack.gz``) and both round trips are exact.

File layout (schema version 1)::

    {"format": "torch-diode-dataset", "schema_version": 1,
     "metadata": {"created": ISO-8601, "sources": [{"tool": ..., "settings": {...}, ...}]},
     "configs": [KernelConfig, ...],            # table shared by every problem
     "hardware": [{"hardware": Hardware,
                   "ops": {"mm": [{"problem": Problem,
                                   "config": [i, ...],        # index into "configs"
                                   "time_us": [t or null, ...],  # null where failed
                                   "failed": [bool, ...],
                                   "samples_us": [[t, ...], ...]  # only if a pair has >1 sample
                                   }, ...]}}]}

Merging (:meth:`Dataset.merge`): entries with different :class:`Hardware` records (device or
software versions) stay apart. Two measurements of the same (problem, config) on the same
hardware keep all their samples; ``time_us`` is the median of the successful samples, and the
pair counts as failed only if every sample failed.

Loading a file that is truncated, corrupt, of a wrong type, missing a field, out of range, nested
absurdly deep, or written by a newer schema raises :class:`DatasetFormatError` naming the file and
the field; whatever loads can be written back in either format. A problem listed twice under one
hardware record (rows of one file, or two files) is one problem: its rows' samples are merged.

Writers of a dataset file (:func:`save_dataset`, the collectors) hold :class:`DatasetWriter`'s lock
on it, so a second writer is refused (:class:`DatasetLockedError`) instead of overwriting the
first one's data.
"""

from __future__ import annotations

import fcntl
import gzip
import json
import math
import os
import socket
import stat
import statistics
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgpack

from .errors import UserError
from .fileio import (
    FileError,
    SizeLimitError,
    atomic_write_bytes,
    gunzip,
    kind_of_mode,
    open_lock,
    read_regular,
    remove_orphans,
)

SCHEMA_VERSION = 1
FORMAT_NAME = "torch-diode-dataset"

OPS = ("mm", "addmm", "bmm", "baddbmm")
# Element types the data model knows (torch dtype names without "torch."). Kept in the same
# order as the C++ core's dtype codes; tests check the two agree.
DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "int8",
    "int32",
    "float64",
)
DATASET_SUFFIXES = (".json", ".json.gz", ".msgpack", ".msgpack.gz")
# Largest B/M/N/K, stride or bias size: the C++ core's kMaxDim (its features refuse larger).
MAX_SIZE = 1 << 40
# Largest block size, group, stage or warp count of a kernel config (the core's bound).
MAX_CONFIG_VALUE = 1 << 16

Scalar = int | float | bool | str


class DatasetFormatError(UserError):
    """A dataset file (or dict) does not follow the schema. Names the file and the field."""

    def __init__(self, source: str | os.PathLike | None, field_path: str, message: str):
        self.source = str(source) if source is not None else "<dict>"
        self.field_path = field_path or "<root>"
        self.detail = message
        super().__init__(f"{self.source}: field '{self.field_path}': {message}")


class _Reader:
    """Typed access to a decoded dict, raising DatasetFormatError with the field's path."""

    def __init__(self, data: Any, where: str, source: str | None):
        if not isinstance(data, dict):
            raise DatasetFormatError(source, where, f"expected an object, got {type(data).__name__}")
        self.data, self.where, self.source = data, where, source

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, message: str) -> DatasetFormatError:
        return DatasetFormatError(self.source, self.path(key), message)

    def get(self, key: str, kind: type | tuple[type, ...], optional: bool = False) -> Any:
        if key not in self.data:
            if optional:
                return None
            raise self.error(key, "missing")
        value = self.data[key]
        if value is None and optional:
            return None
        return check_type(value, kind, self.source, self.path(key))

    def sub(self, key: str) -> _Reader:
        return _Reader(self.get(key, dict), self.path(key), self.source)


def check_type(value: Any, kind: type | tuple[type, ...], source: str | None, where: str) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int in Python; an int field must not accept True, a float field accepts ints.
    if isinstance(value, bool) and bool not in kinds:
        ok = False
    elif float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    else:
        ok = isinstance(value, kinds)
    if not ok:
        names = " or ".join(k.__name__ for k in kinds)
        raise DatasetFormatError(source, where, f"expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


def _int_tuple(r: _Reader, key: str, optional: bool = False) -> tuple[int, ...] | None:
    value = r.get(key, (list, tuple), optional=optional)
    if value is None:
        return None
    return tuple(check_type(v, int, r.source, f"{r.path(key)}[{i}]") for i, v in enumerate(value))


def _bounded(r: _Reader, key: str, lo: int, hi: int, optional: bool = False) -> int | None:
    value = r.get(key, int, optional=optional)
    if value is not None and not lo <= value <= hi:
        raise r.error(key, f"{value} is outside [{lo}, {hi}]")
    return value


def _choice(r: _Reader, key: str, allowed: Iterable[str]) -> str:
    value = r.get(key, str)
    if value not in allowed:
        raise r.error(key, f"{value!r} is not one of {sorted(allowed)}")
    return value


def _dense_strides(rows: int, cols: int, transposed: bool) -> tuple[int, int, int]:
    """(batch, row, column) strides of a dense rows x cols matrix, stored transposed or not."""
    return (rows * cols, 1, rows) if transposed else (rows * cols, cols, 1)


@dataclass(frozen=True)
class Problem:
    """One GEMM problem as an op sees it: ``out[B, M, N] = A[B, M, K] @ B[B, K, N] (+ bias)``.

    ``B`` is 1 for mm/addmm. ``transpose_a`` means A is stored column-major (its K dimension is
    contiguous... i.e. it is the transpose of a row-major K x M tensor); likewise ``transpose_b``.
    ``strides_a`` / ``strides_b`` are the exact strides where they were recorded (2-D for
    mm/addmm, 3-D for bmm/baddbmm). ``bias_shape`` is set for addmm/baddbmm only.
    """

    op: str
    B: int
    M: int
    N: int
    K: int
    dtype_a: str
    dtype_b: str
    dtype_out: str
    transpose_a: bool = False
    transpose_b: bool = False
    strides_a: tuple[int, ...] | None = None
    strides_b: tuple[int, ...] | None = None
    bias_shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"Problem.op: {self.op!r} is not one of {OPS}")
        for name in ("B", "M", "N", "K"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_SIZE:
                raise ValueError(f"Problem.{name}: expected an int in [1, {MAX_SIZE}], got {value!r}")
        for name, lo in (("strides_a", 0), ("strides_b", 0), ("bias_shape", 1)):
            value = getattr(self, name)
            if value is not None and not all(lo <= v <= MAX_SIZE for v in value):
                raise ValueError(f"Problem.{name}: expected ints in [{lo}, {MAX_SIZE}], got {list(value)!r:.80}")
        if self.B != 1 and self.op in ("mm", "addmm"):
            raise ValueError(f"Problem.B: {self.op} has no batch, got B={self.B}")
        for name in ("dtype_a", "dtype_b", "dtype_out"):
            if getattr(self, name) not in DTYPES:
                raise ValueError(f"Problem.{name}: {getattr(self, name)!r} is not one of {DTYPES}")
        if self.bias_shape is not None and self.op not in ("addmm", "baddbmm"):
            raise ValueError(f"Problem.bias_shape: {self.op} has no bias")

    @property
    def has_bias(self) -> bool:
        return self.op in ("addmm", "baddbmm")

    @property
    def flops(self) -> int:
        return 2 * self.B * self.M * self.N * self.K

    @property
    def leading_dims(self) -> tuple[int, int, int]:
        """For A, B and the output, the stride (in elements) on whose alignment every vector the
        kernels load or store starts: the greatest common divisor of the strides stepping between
        rows (or columns, for an operand stored transposed) and between batches, from the recorded
        strides where there are some (Inductor may pad them), else from the dense layout the
        transposes give. For a dense 2-D operand that is its leading dimension; where nothing steps
        between vectors (one row, a broadcast operand) it is 16, which every element size aligns."""

        def step(strides: tuple[int, ...], rows: int, cols: int) -> int:
            full = (0, *strides[-2:]) if len(strides) == 2 else tuple(strides[-3:])
            steps = [abs(s) for s, n in zip(full, (self.B, rows, cols)) if n > 1 and abs(s) > 1]
            return math.gcd(*steps) if steps else 16

        strides_a, strides_b = self.operand_strides()
        return (
            step(strides_a, self.M, self.K),
            step(strides_b, self.K, self.N),
            step(_dense_strides(self.M, self.N, False), self.M, self.N),
        )

    def operand_strides(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The strides of A ([B,] M x K) and B ([B,] K x N): the recorded ones, else those of the
        dense layout the transposes give, batch stride first."""
        a = self.strides_a if self.strides_a and len(self.strides_a) >= 2 else None
        b = self.strides_b if self.strides_b and len(self.strides_b) >= 2 else None
        return (
            tuple(a) if a else _dense_strides(self.M, self.K, self.transpose_a),
            tuple(b) if b else _dense_strides(self.K, self.N, self.transpose_b),
        )

    @property
    def misaligned_operands(self) -> tuple[str, ...]:
        """The operands ("a", "b", "out") whose rows are not 16-byte aligned: their leading
        dimension times the element size is not a multiple of 16. cuBLAS and the Triton templates
        lose their vector loads there (K=479, 197 tokens)."""
        return tuple(name for name, align in zip(("a", "b", "out"), self.row_alignment_bytes()) if align < 16)

    def row_alignment_bytes(self) -> tuple[int, int, int]:
        """How far the rows of a, b and out are aligned, in bytes: the largest power of two up to
        16 that divides the leading dimension times the element size (the core's rule)."""
        from . import _C  # DTYPES is in the core's code order

        dtypes = (self.dtype_a, self.dtype_b, self.dtype_out)
        return tuple(
            2 ** _C.row_alignment_log2(ld, _C.dtype_bytes(DTYPES.index(dtype)))
            for ld, dtype in zip(self.leading_dims, dtypes)
        )

    def short(self) -> str:
        batch = f"{self.B}x" if self.op in ("bmm", "baddbmm") else ""
        t = ("T" if self.transpose_a else "N") + ("T" if self.transpose_b else "N")
        return f"{self.op} {batch}{self.M}x{self.N}x{self.K} {self.dtype_a} {t}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "op": self.op,
            "B": self.B,
            "M": self.M,
            "N": self.N,
            "K": self.K,
            "dtype_a": self.dtype_a,
            "dtype_b": self.dtype_b,
            "dtype_out": self.dtype_out,
            "transpose_a": self.transpose_a,
            "transpose_b": self.transpose_b,
        }
        for name in ("strides_a", "strides_b", "bias_shape"):
            value = getattr(self, name)
            if value is not None:
                d[name] = list(value)
        return d

    @classmethod
    def from_dict(cls, data: Any, where: str = "problem", source: str | None = None) -> Problem:
        r = _Reader(data, where, source)
        kwargs = dict(
            op=_choice(r, "op", OPS),
            B=r.get("B", int),
            M=r.get("M", int),
            N=r.get("N", int),
            K=r.get("K", int),
            dtype_a=_choice(r, "dtype_a", DTYPES),
            dtype_b=_choice(r, "dtype_b", DTYPES),
            dtype_out=_choice(r, "dtype_out", DTYPES),
            transpose_a=r.get("transpose_a", bool),
            transpose_b=r.get("transpose_b", bool),
            strides_a=_int_tuple(r, "strides_a", optional=True),
            strides_b=_int_tuple(r, "strides_b", optional=True),
            bias_shape=_int_tuple(r, "bias_shape", optional=True),
        )
        try:
            return cls(**kwargs)
        except ValueError as e:
            field_name = str(e).split(":")[0].split(".")[-1]
            raise DatasetFormatError(source, r.path(field_name), str(e).split(": ", 1)[-1]) from None


_CONFIG_INT_FIELDS = ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps")
_CONFIG_BOOL_FIELDS = ("even_k", "allow_tf32", "use_fast_accum")


@dataclass(frozen=True)
class KernelConfig:
    """One choice Inductor can make for a GEMM: a template plus its parameters.

    Tiled templates (``triton::mm``, ``triton::mm_persistent_tma``, ...) set the block sizes;
    ATen/cuBLAS choices (``aten::mm``, ``aten::bias_addmm``, ...) leave them ``None``. Template
    parameters without a field of their own are kept in ``extras`` (sorted name/value pairs).
    """

    template_id: str
    block_m: int | None = None
    block_n: int | None = None
    block_k: int | None = None
    group_m: int | None = None
    num_stages: int | None = None
    num_warps: int | None = None
    even_k: bool = False
    allow_tf32: bool = False
    use_fast_accum: bool = False
    acc_type: str | None = None
    extras: tuple[tuple[str, Scalar], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.template_id, str) or not self.template_id:
            raise ValueError(f"KernelConfig.template_id: expected a non-empty str, got {self.template_id!r}")
        for name in _CONFIG_INT_FIELDS:
            value = getattr(self, name)
            if value is not None and not 0 <= value <= MAX_CONFIG_VALUE:
                raise ValueError(f"KernelConfig.{name}: expected an int in [0, {MAX_CONFIG_VALUE}], got {value!r}")
        if isinstance(self.extras, dict):
            object.__setattr__(self, "extras", tuple(sorted(self.extras.items())))
        else:
            object.__setattr__(self, "extras", tuple(sorted(tuple(x) for x in self.extras)))

    @property
    def is_tiled(self) -> bool:
        return self.block_m is not None

    @property
    def extras_dict(self) -> dict[str, Scalar]:
        return dict(self.extras)

    def short(self) -> str:
        if not self.is_tiled:
            return self.template_id
        return (
            f"{self.template_id} {self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} "
            f"s{self.num_stages} w{self.num_warps}"
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"template_id": self.template_id}
        for name in _CONFIG_INT_FIELDS:
            if getattr(self, name) is not None:
                d[name] = getattr(self, name)
        for name in _CONFIG_BOOL_FIELDS:
            d[name] = getattr(self, name)
        if self.acc_type is not None:
            d["acc_type"] = self.acc_type
        if self.extras:
            d["extras"] = dict(self.extras)
        return d

    @classmethod
    def from_dict(cls, data: Any, where: str = "config", source: str | None = None) -> KernelConfig:
        r = _Reader(data, where, source)
        kwargs: dict[str, Any] = {"template_id": r.get("template_id", str)}
        for name in _CONFIG_INT_FIELDS:
            kwargs[name] = _bounded(r, name, 0, MAX_CONFIG_VALUE, optional=True)
        for name in _CONFIG_BOOL_FIELDS:
            kwargs[name] = r.get(name, bool)
        kwargs["acc_type"] = r.get("acc_type", str, optional=True)
        extras = r.get("extras", dict, optional=True) or {}
        for key, value in extras.items():
            check_type(value, (int, float, bool, str), source, f"{r.path('extras')}.{key}")
        check_document(extras, source, r.path("extras"))
        kwargs["extras"] = tuple(sorted(extras.items()))
        if kwargs["block_m"] is not None:  # a tiled kernel: the features need every tile parameter
            for name in ("block_m", "block_n", "block_k", "group_m", "num_stages", "num_warps"):
                if kwargs[name] is None:
                    raise r.error(name, "missing (required when block_m is set)")
                if kwargs[name] < 1:
                    raise r.error(name, f"expected >= 1 when block_m is set, got {kwargs[name]}")
        return cls(**kwargs)


@dataclass(frozen=True)
class TimedConfig:
    """A config's measured runtime for one problem.

    ``time_us`` is the median of ``samples_us`` (microseconds); ``failed`` marks a choice that
    did not compile or run, whose ``time_us`` is ``inf``.
    """

    config: KernelConfig
    time_us: float
    failed: bool = False
    samples_us: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.samples_us and not self.failed:
            object.__setattr__(self, "samples_us", (float(self.time_us),))
        if self.failed:
            object.__setattr__(self, "time_us", math.inf)
        elif not (self.time_us > 0 and math.isfinite(self.time_us)):
            raise ValueError(f"TimedConfig.time_us: expected a positive finite time, got {self.time_us!r}")
        if not all(isinstance(v, (int, float)) and v > 0 and math.isfinite(v) for v in self.samples_us):
            raise ValueError(
                f"TimedConfig.samples_us: expected positive finite times, got {list(self.samples_us)!r:.80}"
            )

    @classmethod
    def failure(cls, config: KernelConfig) -> TimedConfig:
        return cls(config=config, time_us=math.inf, failed=True)

    def merged_with(self, *others: TimedConfig) -> TimedConfig:
        """This measurement with the samples of ``others`` (of the same config) added."""
        samples = self.samples_us + tuple(v for other in others for v in other.samples_us)
        if not samples:
            return self
        return TimedConfig(self.config, statistics.median(samples), False, samples)


@dataclass(frozen=True)
class Hardware:
    """The machine a dataset was measured on, with the software that generated the kernels."""

    device_name: str
    compute_capability: tuple[int, int] | None
    sm_count: int
    memory_bytes: int
    smem_per_block_bytes: int
    torch_version: str
    triton_version: str | None = None
    cuda_version: str | None = None

    @property
    def hardware_id(self) -> str:
        """A file-name-safe id such as ``NVIDIA-H100-80GB-HBM3``."""
        return "-".join("".join(c if c.isalnum() else " " for c in self.device_name).split())

    def to_dict(self) -> dict[str, Any]:
        return {
            "device_name": self.device_name,
            "compute_capability": list(self.compute_capability) if self.compute_capability else None,
            "sm_count": self.sm_count,
            "memory_bytes": self.memory_bytes,
            "smem_per_block_bytes": self.smem_per_block_bytes,
            "torch_version": self.torch_version,
            "triton_version": self.triton_version,
            "cuda_version": self.cuda_version,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "hardware", source: str | None = None) -> Hardware:
        r = _Reader(data, where, source)
        cc = _int_tuple(r, "compute_capability", optional=True)
        if cc is not None and (len(cc) != 2 or not all(0 <= v < 1000 for v in cc)):
            raise r.error("compute_capability", f"expected [major, minor], got {list(cc)!r:.60}")
        return cls(
            device_name=r.get("device_name", str),
            compute_capability=cc,  # type: ignore[arg-type]
            sm_count=_bounded(r, "sm_count", 1, 1 << 31),
            memory_bytes=_bounded(r, "memory_bytes", 0, 1 << 62),
            smem_per_block_bytes=_bounded(r, "smem_per_block_bytes", 1, 1 << 40),
            torch_version=r.get("torch_version", str),
            triton_version=r.get("triton_version", str, optional=True),
            cuda_version=r.get("cuda_version", str, optional=True),
        )


@dataclass
class HardwareEntry:
    """All measurements made on one :class:`Hardware`: op -> problem -> timed configs."""

    hardware: Hardware
    ops: dict[str, dict[Problem, list[TimedConfig]]] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def problem_key(problem: Problem) -> str:
    """The identity of a requested problem (recorded problems also carry exact strides)."""
    bias = "x".join(map(str, problem.bias_shape)) if problem.bias_shape else "-"
    return (
        f"{problem.op}:{problem.B}x{problem.M}x{problem.N}x{problem.K}:"
        f"{problem.dtype_a},{problem.dtype_b},{problem.dtype_out}:"
        f"{int(problem.transpose_a)}{int(problem.transpose_b)}:{bias}"
    )


def _merge_resume_record(into: dict[str, Any], other: dict[str, Any]) -> None:
    """A collection's resume record (``completed`` problem keys, ``skipped`` problems with their
    reasons) joined into ``into``: a merged file still tells a resumed collection what is done."""
    completed = list(dict.fromkeys([*into.get("completed", []), *other.get("completed", [])]))
    skipped = {s["problem_key"]: s for s in [*into.get("skipped", []), *other.get("skipped", [])]}
    done = set(completed)
    if completed:
        into["completed"] = completed
    if skipped:
        into["skipped"] = [s for key, s in skipped.items() if key not in done]


@dataclass
class Dataset:
    """Hardware -> op -> problem -> timed configs, with metadata.

    ``metadata`` holds ``created`` (ISO-8601) and ``sources``: the records of the collections and
    merged files it comes from (tool, settings), each distinct record once (runs with the same
    settings share one), so a merged dataset says how each part was measured.
    """

    entries: list[HardwareEntry] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=lambda: {"created": _now(), "sources": []})

    # ----- building -------------------------------------------------------------------------
    def entry_for(self, hardware: Hardware) -> HardwareEntry:
        for entry in self.entries:
            if entry.hardware == hardware:
                return entry
        entry = HardwareEntry(hardware)
        self.entries.append(entry)
        return entry

    def add(self, hardware: Hardware, problem: Problem, timings: Iterable[TimedConfig]) -> None:
        """Adds measurements; a (problem, config) pair already present gains the new samples."""
        _add_timings(self.entry_for(hardware), problem, timings)

    def merge(self, other: Dataset) -> Dataset:
        """Merges ``other`` into this dataset in place (see the module docstring) and returns it."""
        entries = {e.hardware: e for e in reversed(self.entries)}  # the first entry of a hardware wins
        for entry in other.entries:
            mine = entries.get(entry.hardware)
            if mine is None:
                mine = entries[entry.hardware] = HardwareEntry(entry.hardware)
                self.entries.append(mine)
            for ops in entry.ops.values():
                for problem, timings in ops.items():
                    _add_timings(mine, problem, timings)
        sources = self.metadata.setdefault("sources", [])
        # each record once: a file merged again (a resumed merge, chunks of one run) adds none
        for source in other.metadata.get("sources", []):
            if source not in sources:
                sources.append(source)
        _merge_resume_record(self.metadata, other.metadata)
        return self

    # ----- reading ----------------------------------------------------------------------------
    def problems(self) -> Iterator[tuple[Hardware, Problem, list[TimedConfig]]]:
        for entry in self.entries:
            for op in sorted(entry.ops):
                for problem, timings in entry.ops[op].items():
                    yield entry.hardware, problem, timings

    @property
    def num_problems(self) -> int:
        return sum(len(ops) for e in self.entries for ops in e.ops.values())

    @property
    def num_timed_configs(self) -> int:
        return sum(len(t) for _, _, t in self.problems())

    def subset(self, keep: Callable[[Hardware, Problem], bool]) -> Dataset:
        """A new dataset with the problems for which ``keep(hardware, problem)`` is true. Its
        resume record (``completed``) names no problem left out: the subset does not claim them
        done (``--exclude`` and ``--only`` read it)."""
        out = Dataset(metadata={**self.metadata, "sources": list(self.metadata.get("sources", []))})
        kept_keys, left_keys = set(), set()
        for hardware, problem, timings in self.problems():
            if keep(hardware, problem):
                out.entry_for(hardware).ops.setdefault(problem.op, {})[problem] = list(timings)
                kept_keys.add(problem_key(problem))
            else:
                left_keys.add(problem_key(problem))
        if "completed" in self.metadata:
            left_out = left_keys - kept_keys
            out.metadata["completed"] = [k for k in self.metadata["completed"] if k not in left_out]
        return out

    # ----- (de)serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        config_index: dict[KernelConfig, int] = {}
        configs: list[dict[str, Any]] = []
        hardware_list = []
        for entry in self.entries:
            ops_out: dict[str, list[dict[str, Any]]] = {}
            for op in sorted(entry.ops):
                rows = []
                for problem, timings in entry.ops[op].items():
                    idx = []
                    for t in timings:
                        i = config_index.get(t.config)
                        if i is None:
                            i = config_index[t.config] = len(configs)
                            configs.append(t.config.to_dict())
                        idx.append(i)
                    row: dict[str, Any] = {
                        "problem": problem.to_dict(),
                        "config": idx,
                        "time_us": [None if t.failed else t.time_us for t in timings],
                        "failed": [t.failed for t in timings],
                    }
                    if any(len(t.samples_us) > 1 for t in timings):
                        row["samples_us"] = [list(t.samples_us) for t in timings]
                    rows.append(row)
                ops_out[op] = rows
            hardware_list.append({"hardware": entry.hardware.to_dict(), "ops": ops_out})
        return {
            "format": FORMAT_NAME,
            "schema_version": SCHEMA_VERSION,
            "metadata": self.metadata,
            "configs": configs,
            "hardware": hardware_list,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> Dataset:
        r = _Reader(data, "", source)
        fmt = r.get("format", str)
        if fmt != FORMAT_NAME:
            raise r.error("format", f"expected {FORMAT_NAME!r}, got {fmt!r}")
        version = r.get("schema_version", int)
        if version > SCHEMA_VERSION:
            raise r.error(
                "schema_version",
                f"file has schema version {version}, this torch-diode reads up to {SCHEMA_VERSION}: "
                "upgrade torch-diode",
            )
        if version < 1:
            raise r.error("schema_version", f"invalid schema version {version}")
        metadata = r.get("metadata", dict)
        check_document(metadata, source, "metadata")  # free-form: it must save again in both formats
        _check_metadata(r.sub("metadata"))
        config_rows = r.get("configs", list)
        configs = [KernelConfig.from_dict(c, f"configs[{i}]", source) for i, c in enumerate(config_rows)]
        ds = cls(metadata=metadata)
        entries: dict[Hardware, HardwareEntry] = {}
        # a problem's rows (repeated rows, repeated configs) are gathered and merged once: linear
        pending: dict[tuple[Hardware, Problem], list[TimedConfig]] = {}
        for h, hw_data in enumerate(r.get("hardware", list)):
            hr = _Reader(hw_data, f"hardware[{h}]", source)
            hardware = Hardware.from_dict(hr.get("hardware", dict), hr.path("hardware"), source)
            if hardware not in entries:
                entries[hardware] = HardwareEntry(hardware)
                ds.entries.append(entries[hardware])
            ops = hr.sub("ops")
            for op, rows in ops.data.items():
                if op not in OPS:
                    raise ops.error(op, f"unknown op {op!r}, expected one of {OPS}")
                check_type(rows, list, source, ops.path(op))
                entries[hardware].ops.setdefault(op, {})
                for p, row_data in enumerate(rows):
                    pr = _Reader(row_data, f"{ops.path(op)}[{p}]", source)
                    problem = Problem.from_dict(pr.get("problem", dict), pr.path("problem"), source)
                    if problem.op != op:
                        raise pr.error("problem.op", f"{problem.op!r} listed under op {op!r}")
                    pending.setdefault((hardware, problem), []).extend(_read_timings(pr, configs))
        for (hardware, problem), timings in pending.items():
            _add_timings(entries[hardware], problem, timings)
        return ds


def _add_timings(entry: HardwareEntry, problem: Problem, timings: Iterable[TimedConfig]) -> None:
    """``timings`` added to ``problem``'s in ``entry``: a config already there gains the new
    samples (time_us their median). Each config's samples are gathered first and its median taken
    once, so the time is linear in the samples, however often a config repeats."""
    existing = entry.ops.setdefault(problem.op, {}).setdefault(problem, [])
    index = {t.config: i for i, t in enumerate(existing)}
    more: dict[int, list[TimedConfig]] = {}
    for timed in timings:
        i = index.get(timed.config)
        if i is None:
            index[timed.config] = len(existing)
            existing.append(timed)
        else:
            more.setdefault(i, []).append(timed)
    for i, others in more.items():
        existing[i] = existing[i].merged_with(*others)


def _check_metadata(r: _Reader) -> None:
    """The metadata keys that torch-diode itself reads back (a resumed collection's progress)."""
    r.get("sources", list, optional=True)
    completed = r.get("completed", list, optional=True) or []
    for i, key in enumerate(completed):
        check_type(key, str, r.source, f"{r.path('completed')}[{i}]")
    for i, item in enumerate(r.get("skipped", list, optional=True) or []):
        _Reader(item, f"{r.path('skipped')}[{i}]", r.source).get("problem_key", str)
    in_flight = r.get("in_flight", dict, optional=True)
    if in_flight is not None:
        fr = r.sub("in_flight")
        fr.get("problem_key", str)
        _bounded(fr, "attempts", 0, 1 << 31, optional=True)


def _read_timings(pr: _Reader, configs: list[KernelConfig]) -> list[TimedConfig]:
    idx = pr.get("config", list)
    times = pr.get("time_us", list)
    failed = pr.get("failed", list)
    samples = pr.get("samples_us", list, optional=True)
    for name, column in (("time_us", times), ("failed", failed), ("samples_us", samples)):
        if column is not None and len(column) != len(idx):
            raise pr.error(name, f"has {len(column)} entries, 'config' has {len(idx)}")
    out = []
    # the exact types pass on their own; check_type converts (an int time) or names the bad value
    for i, ci in enumerate(idx):
        if type(ci) is not int:
            check_type(ci, int, pr.source, f"{pr.path('config')}[{i}]")
        if not 0 <= ci < len(configs):
            raise pr.error(f"config[{i}]", f"index {ci} outside the configs table (size {len(configs)})")
        is_failed = failed[i]
        if type(is_failed) is not bool:
            check_type(is_failed, bool, pr.source, f"{pr.path('failed')}[{i}]")
        if is_failed:
            out.append(TimedConfig.failure(configs[ci]))
            continue
        t = times[i]
        if type(t) is not float:
            t = check_type(t, float, pr.source, f"{pr.path('time_us')}[{i}]")
        if not (t > 0 and math.isfinite(t)):
            raise pr.error(f"time_us[{i}]", f"expected a positive finite time, got {t!r}")
        s: tuple[float, ...] = ()
        if samples is not None:
            column = samples[i]
            if type(column) is not list:
                column = check_type(column, list, pr.source, f"{pr.path('samples_us')}[{i}]")
            s = tuple(column)
            if not all(type(v) is float for v in s):
                s = tuple(check_type(v, float, pr.source, f"{pr.path('samples_us')}[{i}]") for v in column)
            if not all(v > 0 and math.isfinite(v) for v in s):
                raise pr.error(f"samples_us[{i}]", f"expected positive finite times, got {list(s)!r:.80}")
        out.append(TimedConfig(configs[ci], t, False, s))
    return out


# ----- files ------------------------------------------------------------------------------------
def dataset_format(path: str | os.PathLike) -> tuple[str, bool]:
    """(``"json"`` or ``"msgpack"``, gzip?) from a file name; DatasetFormatError for other suffixes."""
    name = str(path)
    compressed = name.endswith(".gz")
    base = name[:-3] if compressed else name
    if base.endswith(".json"):
        return "json", compressed
    if base.endswith(".msgpack"):
        return "msgpack", compressed
    raise DatasetFormatError(name, "<suffix>", f"unknown dataset suffix, expected one of {', '.join(DATASET_SUFFIXES)}")


def encode(data: Any, path: str | os.PathLike) -> bytes:
    fmt, compressed = dataset_format(path)
    if fmt == "json":
        raw = json.dumps(data, allow_nan=False, separators=(",", ":")).encode()
    else:
        raw = msgpack.packb(data, use_bin_type=True)
    return gzip.compress(raw, compresslevel=6, mtime=0) if compressed else raw


# Deepest nesting of objects and arrays a file may have by default (torch-diode's own files reach
# about 8); torch_diode.config.max_nesting (TORCH_DIODE_MAX_NESTING) sets it.
MAX_NESTING = 64
_INT64 = (-(1 << 63), (1 << 63) - 1)


def decode_bytes(raw: bytes, fmt: str, compressed: bool, source: str | os.PathLike) -> Any:
    """Decodes JSON/msgpack(.gz) bytes into plain values (see :func:`check_document`);
    DatasetFormatError naming ``source`` for any byte string that is not such a document."""
    try:
        if compressed:
            raw = gunzip(raw)
    except SizeLimitError as e:
        raise DatasetFormatError(source, "<file>", str(e)) from None
    except (OSError, EOFError, zlib.error) as e:
        raise DatasetFormatError(source, "<file>", f"not valid gzip (truncated or corrupt?): {str(e):.200}") from None
    try:
        if fmt == "json":
            data = json.loads(raw)
        else:
            data = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as e:
        kind = fmt
        detail = "nested too deep" if isinstance(e, RecursionError) else str(e)
        raise DatasetFormatError(source, "<file>", f"not valid {kind} (truncated or corrupt?): {detail:.200}") from None
    check_document(data, source)
    return data


def check_document(data: Any, source: str | os.PathLike | None, where: str = "") -> None:
    """Raises DatasetFormatError unless ``data`` holds only what both formats write: objects with
    string keys, arrays, strings, booleans, null, finite floats and 64-bit integers, nested at most
    :data:`MAX_NESTING` deep. So whatever loads can be saved again, as JSON or as msgpack.
    ``where``: the field path of ``data`` inside its file."""
    if not isinstance(data, (dict, list)):
        raise DatasetFormatError(source, where or "<root>", f"expected an object, got {type(data).__name__}")
    from . import config

    max_nesting = config.max_nesting
    stack: list[tuple[Any, str, int]] = [(data, where, 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > max_nesting:
            raise DatasetFormatError(
                source,
                where.lstrip(".") or "<root>",
                f"nested deeper than {max_nesting} levels (TORCH_DIODE_MAX_NESTING, torch_diode.config.max_nesting, "
                "raises the limit)",
            )
        if _plain_scalars(value):
            continue  # a dataset's columns and configs: checked whole, item by item below only to name a bad one
        if isinstance(value, dict):
            items: Iterable[tuple[Any, Any]] = value.items()
        else:
            items = enumerate(value)
        for key, item in items:
            if isinstance(value, dict) and not isinstance(key, str):
                raise DatasetFormatError(source, where.lstrip(".") or "<root>", f"key {key!r:.40} is not a string")
            if isinstance(item, (dict, list)):
                stack.append((item, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]", depth + 1))
            elif item is None or isinstance(item, (str, bool)):
                continue
            elif isinstance(item, int):
                if not _INT64[0] <= item <= _INT64[1]:
                    path = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
                    raise DatasetFormatError(source, path.lstrip("."), f"integer {item:.3g} does not fit 64 bits")
            elif isinstance(item, float):
                if not math.isfinite(item):
                    path = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
                    raise DatasetFormatError(source, path.lstrip("."), f"{item} is not a finite number")
            else:
                path = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
                raise DatasetFormatError(source, path.lstrip("."), f"unsupported value of type {type(item).__name__}")


_SCALAR_TYPES = frozenset({str, bool, type(None), int, float})


def _plain_scalars(value: Any) -> bool:
    """Whether ``value`` is a list, or an object with string keys, of only strings, booleans,
    nulls, 64-bit integers and finite floats."""
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            return False
        values = list(value.values())
    elif type(value) is list:
        values = value
    else:
        return False
    kinds = set(map(type, values))
    if not kinds <= _SCALAR_TYPES:
        return False
    if int in kinds:
        ints = [v for v in values if type(v) is int]
        if min(ints) < _INT64[0] or max(ints) > _INT64[1]:
            return False
    return float not in kinds or all(map(math.isfinite, (v for v in values if type(v) is float)))


def decode(path: str | os.PathLike) -> Any:
    """Reads a JSON/msgpack(.gz) file; DatasetFormatError on truncation or corruption."""
    fmt, compressed = dataset_format(path)
    return decode_bytes(read_input_bytes(path), fmt, compressed, path)


def read_input_bytes(path: str | os.PathLike) -> bytes:
    """A file's bytes; DatasetFormatError naming it where it cannot be read (missing, a folder, a
    FIFO or device, larger than torch_diode.config.max_file_bytes: :func:`fileio.read_regular`)."""
    try:
        return read_regular(path)
    except FileError as e:
        raise DatasetFormatError(path, "<file>", str(e).removeprefix(f"{path}: ")) from None


class DatasetLockedError(UserError):
    """Another writer holds the dataset file's lock."""

    def __init__(self, path: str | os.PathLike, holder: str):
        self.path = str(path)
        super().__init__(
            f"{path}: being written by another writer ({holder or 'holder unknown'}); "
            "wait for it to finish or write to another file"
        )


class DatasetWriter:
    """Exclusive write access to a dataset file: an ``fcntl.flock`` on the sidecar file
    ``.<name>.lock`` beside it (removed again by :meth:`close`), held from :meth:`acquire` (on
    creation) to :meth:`close`; acquiring it removes the temporary files a killed writer left
    beside the file. A second
    writer of the same file, in this process or another, gets :class:`DatasetLockedError` naming
    the holder instead of overwriting what the first one writes. Readers take no lock: writes are
    atomic renames."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        dataset_format(self.path)  # an unknown suffix fails before anything is written
        self._lock: Any = None
        self.acquire()

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.lock")

    @property
    def locked(self) -> bool:
        return self._lock is not None

    def acquire(self) -> None:
        if self._lock is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # named by the dataset file
            raise OSError(e.errno, f"cannot write there ({e.strerror})", str(self.path)) from None
        lock = open_lock(self.lock_path, self.path)  # never through a link
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.seek(0)
                holder = lock.read(200).strip()
                lock.close()
                raise DatasetLockedError(self.path, holder) from None
            # the holder before us may have removed the lock file as it let go: lock the file
            # that is there now, not the removed one
            try:
                current = os.lstat(self.lock_path)
            except FileNotFoundError:
                current = None
            mine = os.fstat(lock.fileno())
            if current is not None and (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev):
                break
            lock.close()
            lock = open_lock(self.lock_path, self.path)
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        lock.flush()
        self._lock = lock
        # temporary files of a writer killed between writing and renaming (atomic_write_bytes): only
        # the lock's holder writes them, so any there now are orphans (ours by name and owner)
        remove_orphans(self.path)

    def load(self) -> Dataset | None:
        """The dataset now in the file (None where there is no file yet)."""
        return load_dataset(self.path) if self.path.exists() else None

    def save(self, dataset: Dataset) -> Path:
        """Writes atomically; the format follows the suffix (.json, .msgpack, each optionally .gz)."""
        if self._lock is None:
            raise RuntimeError(f"{self.path}: DatasetWriter.save after close")
        atomic_write_bytes(self.path, encode(checked_for_writing(dataset, self.path), self.path))
        return self.path

    def close(self) -> None:
        """Gives up the lock and removes the lock file (while still holding it)."""
        if self._lock is not None:
            Path(self.lock_path).unlink(missing_ok=True)
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def checked_for_writing(dataset: Dataset, path: str | os.PathLike) -> dict[str, Any]:
    """``dataset.to_dict()`` where :func:`load_dataset` would read it back: DatasetFormatError
    naming ``path`` and the field otherwise (NaN, bytes, non-string keys or nesting too deep in the
    metadata, progress records of the wrong type), and nothing is written."""
    data = dataset.to_dict()
    try:
        check_document(data, path)
        _check_metadata(_Reader(data["metadata"], "metadata", str(path)))
    except DatasetFormatError as e:
        raise DatasetFormatError(path, e.field_path, f"{e.detail}: not written (a reader would refuse it)") from None
    return data


def save_dataset(dataset: Dataset, path: str | os.PathLike) -> Path:
    """Saves atomically under the file's writer lock; the format follows the suffix (.json,
    .msgpack, each optionally .gz)."""
    with DatasetWriter(path) as writer:
        return writer.save(dataset)


def load_dataset(path: str | os.PathLike) -> Dataset:
    return Dataset.from_dict(decode(path), source=str(path))


def dataset_files(path: str | os.PathLike, extensions: Iterable[str] | None = None) -> list[Path]:
    """The dataset files at ``path``: the file itself, or a folder's files (recursively, sorted)."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError:
        raise FileNotFoundError(f"{path}: no such file or folder") from None
    if stat.S_ISREG(st.st_mode):
        return [path]
    if not stat.S_ISDIR(st.st_mode):
        raise FileError(path, f"cannot read: {kind_of_mode(st.st_mode)}, not a regular file")
    suffixes = tuple("." + e.lstrip(".") for e in extensions) if extensions else DATASET_SUFFIXES
    return sorted(
        p for p in path.rglob("*") if p.is_file() and p.name.endswith(suffixes) and not p.name.startswith(".")
    )


def unique_files(files: Iterable[Path]) -> list[Path]:
    """``files`` with each file once (the first of the names it is given by: a file named twice,
    through a link, or found again in a folder that is also given)."""
    seen: set[tuple[int, int]] = set()
    out = []
    for f in files:
        try:
            st = os.stat(f)
            key = (st.st_dev, st.st_ino)
        except OSError:
            out.append(f)  # reading it names the error
            continue
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def load_datasets(paths: Iterable[str | os.PathLike], extensions: Iterable[str] | None = None) -> Dataset:
    """Loads and merges files and folders of files (see :meth:`Dataset.merge`); a file given
    twice (by name, through a link, or inside a folder also given) is read once."""
    paths = list(paths)
    files = unique_files(f for p in paths for f in dataset_files(p, extensions))
    if not files:
        raise FileNotFoundError(f"no dataset files in {[str(p) for p in paths]}")
    merged = Dataset(metadata={"created": _now(), "sources": []})
    for f in files:
        merged.merge(load_dataset(f))
    return merged


__all__ = [
    "DATASET_SUFFIXES",
    "DTYPES",
    "Dataset",
    "DatasetFormatError",
    "DatasetLockedError",
    "DatasetWriter",
    "Hardware",
    "HardwareEntry",
    "KernelConfig",
    "MAX_SIZE",
    "OPS",
    "Problem",
    "SCHEMA_VERSION",
    "TimedConfig",
    "atomic_write_bytes",
    "dataset_files",
    "load_dataset",
    "load_datasets",
    "save_dataset",
]

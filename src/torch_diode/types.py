"""The data model: problems, kernel configs, timings, hardware and datasets.

These types are the stable contract between collection, training and validation. Every record has
``to_dict`` / ``from_dict`` (a plain document, :mod:`torch_diode.formats`, whose errors name the
field); a :class:`Dataset` is read and written as a file by :mod:`torch_diode.dataset_io`.

Merging (:meth:`Dataset.merge`): entries with different :class:`Hardware` records (device or
software versions) stay apart. Two measurements of the same (problem, config) on the same
hardware keep all their samples; ``time_us`` is the median of the successful samples, and the
pair counts as failed only if every sample failed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ._C import dtype_bytes, dtype_names, op_names, row_alignment_log2
from .formats import DatasetFormatError, Reader, check_document, check_type

# The ops and element types (torch dtype names without "torch.") the data model knows: the C++
# core's tables, in its code order (csrc/include/diode/features.h, kOpNames and the dtype codes).
OPS: tuple[str, ...] = tuple(op_names())
DTYPES: tuple[str, ...] = tuple(dtype_names())
# The ops with a batch dimension (B); mm and addmm have B = 1.
BATCHED_OPS = ("bmm", "baddbmm")
# The ops that add a bias (their first input).
BIAS_OPS = ("addmm", "baddbmm")
# Largest B/M/N/K, stride or bias size: the C++ core's kMaxDim (its features refuse larger).
MAX_SIZE = 1 << 40
# Largest block size, group, stage or warp count of a kernel config (the core's bound).
MAX_CONFIG_VALUE = 1 << 16

Scalar = int | float | bool | str


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
        if self.B != 1 and not self.batched:
            raise ValueError(f"Problem.B: {self.op} has no batch, got B={self.B}")
        for name in ("dtype_a", "dtype_b", "dtype_out"):
            if getattr(self, name) not in DTYPES:
                raise ValueError(f"Problem.{name}: {getattr(self, name)!r} is not one of {DTYPES}")
        if self.bias_shape is not None and self.op not in BIAS_OPS:
            raise ValueError(f"Problem.bias_shape: {self.op} has no bias")

    @property
    def batched(self) -> bool:
        return self.op in BATCHED_OPS

    @property
    def has_bias(self) -> bool:
        return self.op in BIAS_OPS

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
        dtypes = (self.dtype_a, self.dtype_b, self.dtype_out)
        return tuple(
            2 ** row_alignment_log2(ld, dtype_bytes(DTYPES.index(dtype)))
            for ld, dtype in zip(self.leading_dims, dtypes)
        )

    def short(self) -> str:
        batch = f"{self.B}x" if self.batched else ""
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
        r = Reader(data, where, source)
        kwargs = dict(
            op=r.choice("op", OPS),
            B=r.get("B", int),
            M=r.get("M", int),
            N=r.get("N", int),
            K=r.get("K", int),
            dtype_a=r.choice("dtype_a", DTYPES),
            dtype_b=r.choice("dtype_b", DTYPES),
            dtype_out=r.choice("dtype_out", DTYPES),
            transpose_a=r.get("transpose_a", bool),
            transpose_b=r.get("transpose_b", bool),
            strides_a=r.int_tuple("strides_a", optional=True),
            strides_b=r.int_tuple("strides_b", optional=True),
            bias_shape=r.int_tuple("bias_shape", optional=True),
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
        r = Reader(data, where, source)
        kwargs: dict[str, Any] = {"template_id": r.get("template_id", str)}
        for name in _CONFIG_INT_FIELDS:
            kwargs[name] = r.bounded(name, 0, MAX_CONFIG_VALUE, optional=True)
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
        r = Reader(data, where, source)
        cc = r.int_tuple("compute_capability", optional=True)
        if cc is not None and (len(cc) != 2 or not all(0 <= v < 1000 for v in cc)):
            raise r.error("compute_capability", f"expected [major, minor], got {list(cc)!r:.60}")
        return cls(
            device_name=r.get("device_name", str),
            compute_capability=cc,  # type: ignore[arg-type]
            sm_count=r.bounded("sm_count", 1, 1 << 31),
            memory_bytes=r.bounded("memory_bytes", 0, 1 << 62),
            smem_per_block_bytes=r.bounded("smem_per_block_bytes", 1, 1 << 40),
            torch_version=r.get("torch_version", str),
            triton_version=r.get("triton_version", str, optional=True),
            cuda_version=r.get("cuda_version", str, optional=True),
        )


@dataclass
class HardwareEntry:
    """All measurements made on one :class:`Hardware`: op -> problem -> timed configs."""

    hardware: Hardware
    ops: dict[str, dict[Problem, list[TimedConfig]]] = field(default_factory=dict)

    def add(self, problem: Problem, timings: Iterable[TimedConfig]) -> None:
        """``timings`` added to ``problem``'s: a config already there gains the new samples
        (time_us their median). Each config's samples are gathered first and its median taken once,
        so the time is linear in the samples, however often a config repeats."""
        existing = self.ops.setdefault(problem.op, {}).setdefault(problem, [])
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
        self.entry_for(hardware).add(problem, timings)

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
                    mine.add(problem, timings)
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


__all__ = [
    "DTYPES",
    "Dataset",
    "Hardware",
    "HardwareEntry",
    "KernelConfig",
    "MAX_CONFIG_VALUE",
    "MAX_SIZE",
    "OPS",
    "Problem",
    "TimedConfig",
    "problem_key",
]

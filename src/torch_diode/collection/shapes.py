"""Problems to measure: random shape generators and shapesets of public models.

A shapeset is a JSON file::

    {"name": "llama3-8b", "description": "...",
     "entries": [{"model": "Llama-3-8B", "layer": "attn.q_proj (prefill 2048)",
                  "op": "mm", "B": 1, "M": 2048, "N": 4096, "K": 4096,
                  "dtype": "bfloat16", "transpose_a": false, "transpose_b": true,
                  "count": 32}, ...]}

``dtype`` sets all three dtypes; ``dtype_a``/``dtype_b``/``dtype_out`` override it. ``B``
defaults to 1, transposes to false, ``count`` (how often the layer occurs) to 1.

The shapesets of ``HELDOUT_SHAPESETS`` are what models are judged on: no training data may hold
their problems (:func:`heldout_matches`; `diode train` refuses such data) and random draws never
produce one (:func:`drop_heldout`).
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..formats import DatasetFormatError, Reader, check_type, decode_bytes, read_input_bytes
from ..types import BATCHED_OPS, DTYPES, MAX_SIZE, OPS, Hardware, Problem, problem_key

if TYPE_CHECKING:
    from ..coverage import CellFill

SHAPESET_DIR = Path(__file__).resolve().parent.parent / "shapesets"


@dataclass(frozen=True)
class ShapeSpec:
    """How random shapes are drawn (the `diode collect` options)."""

    num_shapes: int = 100
    min_size: int = 16
    max_size: int = 8192
    power_of_two: bool = False
    log_normal: bool = False
    log_normal_mean: float = 6.5  # mean of ln(size): e^6.5 ~ 665
    log_normal_sigma: float = 1.5
    ops: tuple[str, ...] = ("mm", "addmm", "bmm")
    dtypes: tuple[str, ...] = ("float16", "bfloat16", "float32")
    max_batch: int = 64
    min_batch: int = 1  # bmm/baddbmm batches are powers of two from min_batch to max_batch
    transpose_probability: float = 0.0
    alignment: int = 1
    aligned_fraction: float = 0.0
    sizes: tuple[int, ...] = ()  # draw N and K (and M, unless m_sizes) from these values instead
    m_sizes: tuple[int, ...] = ()  # draw M from these values
    n_sizes: tuple[int, ...] = ()  # draw N from these values (vocabulary widths...) instead of sizes
    k_sizes: tuple[int, ...] = ()  # draw K from these values (long reductions...) instead of sizes
    layouts: tuple[str, ...] = ()  # e.g. ("NN", "NT"): drawn uniformly; overrides transpose_probability
    max_gflop: float = 0.0  # redraw shapes needing more than this many GFLOP (2*B*M*N*K); 0: no limit

    def __post_init__(self) -> None:
        # messages start with the field's name: `diode collect` names the option of the same name
        if not 1 <= self.min_size <= self.max_size <= MAX_SIZE:
            raise ValueError(
                f"max_size: sizes need 1 <= min_size <= max_size <= {MAX_SIZE}, got {self.min_size}, {self.max_size}"
            )
        for name in ("sizes", "m_sizes", "n_sizes", "k_sizes"):
            if any(not 1 <= v <= MAX_SIZE for v in getattr(self, name)):
                raise ValueError(f"{name}: sizes must be in [1, {MAX_SIZE}], got {getattr(self, name)}")
        for name, lo, hi in (("num_shapes", 0, 1 << 31), ("max_batch", 1, MAX_SIZE), ("alignment", 1, MAX_SIZE)):
            if not lo <= getattr(self, name) <= hi:
                raise ValueError(f"{name}: must be in [{lo}, {hi}], got {getattr(self, name)}")
        for name in ("transpose_probability", "aligned_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}: must be in [0, 1], got {getattr(self, name)}")
        if not (
            math.isfinite(self.log_normal_mean) and math.isfinite(self.log_normal_sigma) and self.log_normal_sigma >= 0
        ):
            raise ValueError(
                f"log_normal_sigma: need a finite mean and sigma >= 0, got {self.log_normal_mean}, "
                f"{self.log_normal_sigma}"
            )
        for layout in self.layouts:
            if layout not in LAYOUTS:
                raise ValueError(f"layouts: {layout!r} is not one of {LAYOUTS}")
        if not 1 <= self.min_batch <= self.max_batch:
            raise ValueError(f"min_batch: need 1 <= min_batch <= max_batch, got {self.min_batch}, {self.max_batch}")
        if not 0 <= self.max_gflop < math.inf:
            raise ValueError(f"max_gflop: must be finite and >= 0, got {self.max_gflop}")
        for op in self.ops:
            if op not in OPS:
                raise ValueError(f"ops: {op!r} is not one of {OPS}")
        for dtype in self.dtypes:
            if dtype not in DTYPES:
                raise ValueError(f"dtypes: {dtype!r} is not one of {DTYPES}")
        self._check_choices()

    def _check_choices(self) -> None:
        """Options that contradict each other, or leave nothing (or too little) to draw."""
        if not self.ops or not self.dtypes:
            raise ValueError(f"{'ops' if not self.ops else 'dtypes'}: give at least one")
        if self.power_of_two and self.log_normal:
            raise ValueError("log_normal: sizes are drawn either log-normally or among powers of two, not both")
        pooled = (
            bool(self.m_sizes or self.sizes) and bool(self.n_sizes or self.sizes) and bool(self.k_sizes or self.sizes)
        )
        if pooled and (self.power_of_two or self.log_normal):
            which = "power_of_two" if self.power_of_two else "log_normal"
            raise ValueError(f"{which}: every size is drawn from the given sizes; the distribution would not be used")
        if self.layouts and self.transpose_probability:
            raise ValueError("transpose_probability: --layouts sets the layouts; give one or the other")
        if self.power_of_two and not pooled and _powers_of_two(self.min_size, self.max_size) == 0:
            raise ValueError(f"power_of_two: no power of two lies in [{self.min_size}, {self.max_size}]")
        if any(op in BATCHED_OPS for op in self.ops) and _powers_of_two(self.min_batch, self.max_batch) == 0:
            raise ValueError(
                f"min_batch: batches are powers of two and none lies in [{self.min_batch}, {self.max_batch}]"
            )

    def record(self) -> dict[str, Any]:
        """The spec as a collection's settings record it (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def distinct_problems(self) -> int:
        """How many distinct problems the options can draw at most (the size filter aside)."""

        def sizes(pool: tuple[int, ...]) -> int:
            if pool:
                return len(set(pool))
            if self.power_of_two:
                return _powers_of_two(self.min_size, self.max_size)
            return self.max_size - self.min_size + 1

        mnk = sizes(self.m_sizes or self.sizes) * sizes(self.n_sizes or self.sizes) * sizes(self.k_sizes or self.sizes)
        batches = _powers_of_two(self.min_batch, self.max_batch)
        if self.layouts:
            layouts = len(set(self.layouts))
        else:
            layouts = 1 if self.transpose_probability in (0.0, 1.0) else 4
        per_op = sum(batches if op in BATCHED_OPS else 1 for op in set(self.ops))
        return per_op * mnk * len(set(self.dtypes)) * layouts


def _powers_of_two(lo: int, hi: int) -> int:
    """How many powers of two lie in [lo, hi]."""
    return max(0, hi.bit_length() - (lo - 1).bit_length()) if lo <= hi else 0


LAYOUTS = ("NN", "NT", "TN", "TT")  # storage of A and B: N as given, T transposed


def _size(spec: ShapeSpec, rng: random.Random, pool: tuple[int, ...] = ()) -> int:
    if pool:
        return rng.choice(pool)
    if spec.log_normal:
        # rng.lognormvariate's draw, with the exponent capped where exp() would overflow
        value = int(
            round(
                min(
                    math.exp(min(rng.normalvariate(spec.log_normal_mean, spec.log_normal_sigma), 700.0)),
                    float(MAX_SIZE),
                )
            )
        )
    elif spec.power_of_two:
        lo, hi = math.ceil(math.log2(spec.min_size)), math.floor(math.log2(spec.max_size))
        value = 2 ** rng.randint(lo, max(lo, hi))
    else:
        value = rng.randint(spec.min_size, spec.max_size)
    if spec.alignment > 1 and rng.random() < spec.aligned_fraction:
        value = max(spec.alignment, round(value / spec.alignment) * spec.alignment)
    return min(max(value, spec.min_size), spec.max_size)


def random_problems(spec: ShapeSpec, seed: int) -> list[Problem]:
    """``spec.num_shapes`` problems drawn deterministically from ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(spec.num_shapes):
        op = rng.choice(spec.ops)
        dtype = rng.choice(spec.dtypes)
        for _attempt in range(1000):
            batch = (
                2 ** rng.randint(math.ceil(math.log2(spec.min_batch)), int(math.log2(spec.max_batch)))
                if op in BATCHED_OPS
                else 1
            )
            m = _size(spec, rng, spec.m_sizes or spec.sizes)
            n, k = _size(spec, rng, spec.n_sizes or spec.sizes), _size(spec, rng, spec.k_sizes or spec.sizes)
            if not spec.max_gflop or 2 * batch * m * n * k <= spec.max_gflop * 1e9:
                break
        else:
            raise ValueError(f"max_gflop: no shape of {spec.max_gflop} GFLOP or less drawn in 1000 attempts")
        if spec.layouts:
            layout = rng.choice(spec.layouts)
            transpose_a, transpose_b = layout[0] == "T", layout[1] == "T"
        else:
            transpose_a = rng.random() < spec.transpose_probability
            transpose_b = rng.random() < spec.transpose_probability
        out.append(
            Problem(
                op=op,
                B=batch,
                M=m,
                N=n,
                K=k,
                dtype_a=dtype,
                dtype_b=dtype,
                dtype_out=dtype,
                transpose_a=transpose_a,
                transpose_b=transpose_b,
            )
        )
    return out


@dataclass(frozen=True)
class ShapesetEntry:
    model: str
    layer: str
    problem: Problem
    count: int = 1


def load_shapeset(path: str | os.PathLike) -> list[ShapesetEntry]:
    """Reads a shapeset file (a path, or the name of a shipped one); errors name the field."""
    path = resolve_shapeset(path)
    try:
        data = decode_bytes(read_input_bytes(path), "json", False, path)
    except DatasetFormatError as e:
        raise DatasetFormatError(path, e.field_path, f"not a readable JSON shapeset: {e.detail}") from None
    r = Reader(data, "", str(path))
    entries = []
    items = r.get("entries", list)
    if not items:
        raise r.error("entries", "empty: a shapeset lists at least one GEMM")
    for i, item in enumerate(items):
        er = Reader(item, f"entries[{i}]", str(path))
        dtype = er.get("dtype", str, optional=True)
        batch = er.get("B", int, optional=True)
        problem_dict: dict[str, Any] = {
            "op": er.get("op", str),
            "B": 1 if batch is None else batch,
            "M": er.get("M", int),
            "N": er.get("N", int),
            "K": er.get("K", int),
            "transpose_a": er.get("transpose_a", bool, optional=True) or False,
            "transpose_b": er.get("transpose_b", bool, optional=True) or False,
        }
        for name in ("dtype_a", "dtype_b", "dtype_out"):
            problem_dict[name] = er.get(name, str, optional=True) or dtype
            if problem_dict[name] is None:
                raise er.error(name, "missing (give 'dtype' or all of dtype_a, dtype_b, dtype_out)")
        bias = er.get("bias_shape", list, optional=True)
        if bias is not None:
            problem_dict["bias_shape"] = [check_type(v, int, str(path), er.path("bias_shape")) for v in bias]
        problem = Problem.from_dict(problem_dict, er.where, str(path))
        count = er.get("count", int, optional=True)
        if count is not None and not 1 <= count <= 1 << 31:
            raise er.error("count", f"expected a count in [1, {1 << 31}], got {count}")
        entries.append(ShapesetEntry(er.get("model", str), er.get("layer", str), problem, count or 1))
    return entries


def resolve_shapeset(name_or_path: str | os.PathLike) -> Path:
    path = Path(name_or_path)
    if path.exists():
        return path
    shipped = SHAPESET_DIR / f"{name_or_path}.json"
    if shipped.exists():
        return shipped
    raise FileNotFoundError(
        f"{name_or_path}: no such shapeset file, nor a shipped shapeset "
        f"(shipped: {', '.join(list_shapesets()) or 'none'})"
    )


def list_shapesets() -> list[str]:
    return sorted(p.stem for p in SHAPESET_DIR.glob("*.json"))


def unique_problems(problems: Sequence[Problem]) -> list[Problem]:
    seen, out = set(), []
    for p in problems:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def is_shapeset_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a JSON shapeset (an object with ``entries``), not a dataset file."""
    path = Path(path)
    if not (path.is_file() and path.name.endswith(".json")):
        return False
    try:
        data = decode_bytes(read_input_bytes(path), "json", False, path)
    except DatasetFormatError:
        return False
    return isinstance(data, dict) and "entries" in data and "format" not in data


# ----- held-out problems ------------------------------------------------------------------------
HELDOUT_SHAPESETS = ("realmodels_heldout",)  # shipped shapesets never trained on


def problem_identity(problem: Problem) -> Problem:
    """The problem without recorded strides and bias shape: (op, B, M, N, K, dtypes, layout), the
    identity by which a held-out problem is recognised in recorded data."""
    return replace(problem, strides_a=None, strides_b=None, bias_shape=None)


def heldout_entries(names: Sequence[str] = HELDOUT_SHAPESETS) -> dict[Problem, tuple[str, ShapesetEntry]]:
    """problem identity -> (shapeset name, its first entry) over the held-out shapesets."""
    out: dict[Problem, tuple[str, ShapesetEntry]] = {}
    for name in names:
        for entry in load_shapeset(name):
            out.setdefault(problem_identity(entry.problem), (name, entry))
    return out


def heldout_matches(
    problems: Iterable[Problem], names: Sequence[str] = HELDOUT_SHAPESETS
) -> list[tuple[Problem, str, ShapesetEntry]]:
    """(problem, shapeset name, entry) for every problem of ``problems`` that a held-out shapeset holds."""
    held = heldout_entries(names)
    return [(p, *held[problem_identity(p)]) for p in problems if problem_identity(p) in held]


def drop_heldout(problems: Sequence[Problem], names: Sequence[str] = HELDOUT_SHAPESETS) -> list[Problem]:
    """``problems`` without those a held-out shapeset holds."""
    held = heldout_entries(names)
    return [p for p in problems if problem_identity(p) not in held]


def draw_problems(spec: ShapeSpec, seed: int, excluded: set[str], fill: CellFill | None = None) -> list[Problem]:
    """``spec.num_shapes`` distinct random problems, none of them in ``excluded`` (problem keys)
    nor held out (redrawn with the following seeds until there are enough); with ``fill`` (a
    coverage.CellFill), only problems that it takes, until its cells are full."""
    excluded = set(excluded) | held_keys(HELDOUT_SHAPESETS)
    problems: list[Problem] = []
    first = seed

    def enough() -> bool:
        return len(problems) >= spec.num_shapes or (fill is not None and fill.done)

    while not enough() and seed < first + 1000:
        for p in random_problems(spec, seed):
            if enough():
                break
            key = problem_key(p)
            if key in excluded or (fill is not None and not fill.take(p)):
                continue
            excluded.add(key)
            problems.append(p)
        seed += 1
    return problems


def _shapesets_and_datasets(paths: Sequence[str] | None) -> tuple[set[str], list[str]]:
    """The keys of the problems that the shapesets among ``paths`` (shipped names or shapeset
    JSON files) list, and the other paths (datasets)."""
    keys: set[str] = set()
    datasets = []
    for path in paths or ():
        if is_shapeset_file(path) or not Path(path).exists():
            keys |= {problem_key(problem_identity(e.problem)) for e in load_shapeset(path)}
        else:
            datasets.append(path)
    return keys, datasets


def held_keys(paths: Sequence[str] | None) -> set[str]:
    """The problems that the datasets at ``paths`` hold or marked done, and that the shapesets
    among ``paths`` (shipped names or shapeset JSON files) list; none without paths."""
    from ..dataset_io import load_datasets

    keys, datasets = _shapesets_and_datasets(paths)
    if datasets:
        data = load_datasets(datasets)
        keys |= {problem_key(p) for _, p, _ in data.problems()} | set(data.metadata.get("completed", []))
    return keys


def excluded_measurements(paths: Sequence[str] | None) -> Callable[[Hardware, Problem], bool]:
    """Whether a (hardware, problem) of training data is one that ``paths`` name: a problem a
    shapeset among ``paths`` lists, on any GPU; a problem a dataset among them holds, where measured
    on the GPU that dataset measured it on (timings known to be wrong on one GPU say nothing of
    another's measurement of the same problem)."""
    from ..dataset_io import load_datasets

    anywhere, datasets = _shapesets_and_datasets(paths)
    measured: set[tuple[str, str]] = set()
    if datasets:
        measured = {(hw.device_name, problem_key(p)) for hw, p, _ in load_datasets(datasets).problems()}

    def excluded(hw: Hardware, p: Problem) -> bool:
        key = problem_key(p)
        return key in anywhere or (hw.device_name, key) in measured

    return excluded

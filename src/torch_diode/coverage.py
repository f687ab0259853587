"""What kinds of GEMM a dataset covers: problem counts per cell, behind `diode dataset coverage`.

Cells (docs/data.md, "Coverage", states the same rule):

- ``op/OP/DTYPE/LAYOUT``: per op (mm, addmm, bmm, baddbmm), dtype column and layout (NN, NT,
  TN, TT: A then B, T where the operand is stored transposed);
- ``regime/REGIME/DTYPE``: per size regime (:data:`REGIMES`) and dtype column;
- ``candidate/KIND``: per candidate kind, the template id as the recorder stores it
  (``aten::mm``, ``triton::mm``, ``decompose_k``...), counting the problems with at least one
  successful timing of that kind.

Dtype columns: ``float16``, ``bfloat16``, ``float32``, and ``float32-tf32`` for fp32 problems
measured with TF32 allowed: a Triton config of theirs has ``allow_tf32`` set (Inductor sets it
where TF32 is on and M >= 16, N and K >= 512), or every collection run of their file recorded
``tf32: true`` (or ``float32_matmul_precision: high``) in its settings (what `diode collect
--float32-matmul-precision high` records). Problems of other dtypes
(fp8, int8) count in the candidate cells only.

A problem counts once per cell (a problem measured in several files, once), per hardware.
Cells that :data:`REQUIRED_CANDIDATE_KINDS` and the op/regime grids name are listed even when
empty; candidate kinds found in the data beyond them are added.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .errors import UserError
from .types import OPS, Dataset, Problem, TimedConfig

DTYPE_COLUMNS = ("float16", "bfloat16", "float32", "float32-tf32")
LAYOUTS = ("NN", "NT", "TN", "TT")

# size-regime thresholds
DECODE_MAX_M = 16
SKINNY_MAX_K = 64
HUGE_MIN_K = 16384
VOCAB_MIN_N = 32768
HEAD_DIM_RANGE = (32, 256)
TOKEN_MULTIPLE = 8
LARGE_BATCH_MIN_B = 64


def _attention(p: Problem) -> bool:
    """bmm/baddbmm shaped like attention with a token count that is not a multiple of 8: scores
    (K = head dim, M and N tokens) or values (N = head dim, M and K tokens)."""
    lo, hi = HEAD_DIM_RANGE
    scores = lo <= p.K <= hi and (p.M % TOKEN_MULTIPLE or p.N % TOKEN_MULTIPLE)
    values = lo <= p.N <= hi and (p.M % TOKEN_MULTIPLE or p.K % TOKEN_MULTIPLE)
    return p.batched and bool(scores or values)


REGIMES: dict[str, Callable[[Problem], bool]] = {
    "decode": lambda p: p.M <= DECODE_MAX_M,
    "skinny_k": lambda p: p.K <= SKINNY_MAX_K,
    "huge_k": lambda p: p.K >= HUGE_MIN_K,
    "vocab_n": lambda p: p.N >= VOCAB_MIN_N,
    "unaligned": lambda p: bool(p.misaligned_operands),  # a row of A, B or out not a multiple of 16 bytes
    "attention_bmm": _attention,
    "large_batch_bmm": lambda p: p.batched and p.B >= LARGE_BATCH_MIN_B,
}

# The candidate kinds Inductor offers for mm/addmm/bmm/baddbmm on an H100/H200 with the ATEN,TRITON
# backends (docs/data.md, "Candidates Inductor offers", gives the flags and the other kinds).
REQUIRED_CANDIDATE_KINDS = (
    "aten::mm",
    "aten::addmm",
    "aten::bias_addmm",
    "aten::bmm",
    "aten::baddbmm",
    "triton::mm",
    "triton::bmm",
    "triton::mm_persistent_tma",
    "decompose_k",
)

# problems per cell the training data should hold: by dtype column; candidate cells take the
# fp16/bf16 figure
DEFAULT_TARGETS = {"float16": 30, "bfloat16": 30, "float32": 15, "float32-tf32": 15, "candidate": 30}


def layout(p: Problem) -> str:
    return ("T" if p.transpose_a else "N") + ("T" if p.transpose_b else "N")


def op_cell(op: str, dtype: str, layout_name: str) -> str:
    return f"op/{op}/{dtype}/{layout_name}"


def regime_cell(regime: str, dtype: str) -> str:
    return f"regime/{regime}/{dtype}"


def candidate_cell(kind: str) -> str:
    return f"candidate/{kind}"


def all_cells(candidate_kinds: Iterable[str] = REQUIRED_CANDIDATE_KINDS) -> list[str]:
    """Every cell the report lists, empty or not, in report order."""
    cells = [op_cell(op, d, lay) for op in OPS for d in DTYPE_COLUMNS for lay in LAYOUTS]
    cells += [regime_cell(r, d) for r in REGIMES for d in DTYPE_COLUMNS]
    kinds = list(dict.fromkeys(candidate_kinds))
    cells += [candidate_cell(k) for k in kinds]
    return cells


def dtype_column(problem: Problem, tf32: bool) -> str | None:
    """The problem's dtype column (A's dtype), None for dtypes without one."""
    if problem.dtype_a == "float32":
        return "float32-tf32" if tf32 else "float32"
    return problem.dtype_a if problem.dtype_a in DTYPE_COLUMNS else None


def settings_say_tf32(dataset: Dataset) -> bool:
    """Whether every collection run recorded in ``dataset``'s metadata ran with TF32 allowed."""
    sources = dataset.metadata.get("sources") or []
    return bool(sources) and all(tf32_run(s.get("settings") or {}) for s in sources)


def measured_with_tf32(file_tf32: bool, ok_timings: Iterable[TimedConfig]) -> bool:
    """Whether a problem was measured with TF32 allowed, given whether its file's settings say so
    (:func:`settings_say_tf32`) and its successful timings: the file's settings say TF32, or one of
    its Triton configs has ``allow_tf32`` set."""
    return file_tf32 or any(t.config.allow_tf32 and t.config.is_tiled for t in ok_timings)


def tf32_run(settings: dict) -> bool:
    """Whether a collection with these recorded settings ran with TF32 allowed (one that recorded
    neither setting ran without)."""
    return settings.get("tf32") is True or settings.get("float32_matmul_precision") == "high"


def problem_cells(problem: Problem, kinds: Iterable[str], tf32: bool) -> list[str]:
    """The cells one problem counts in, given its successfully timed candidate kinds."""
    cells = [candidate_cell(k) for k in dict.fromkeys(kinds)]
    column = dtype_column(problem, tf32)
    if column is not None:
        cells.append(op_cell(problem.op, column, layout(problem)))
        cells += [regime_cell(name, column) for name, inside in REGIMES.items() if inside(problem)]
    return cells


@dataclass
class Coverage:
    """Problem counts per cell; feed it datasets (one per file) with :meth:`add`."""

    _members: dict[str, set] = field(default_factory=dict)
    _problems: set = field(default_factory=set)

    def add(self, dataset: Dataset) -> Coverage:
        tf32_file = settings_say_tf32(dataset)
        for hardware, problem, timings in dataset.problems():
            ok = [t for t in timings if not t.failed]
            tf32 = measured_with_tf32(tf32_file, ok)
            key = (hardware.hardware_id, problem, tf32 and problem.dtype_a == "float32")
            self._problems.add(key)
            for cell in problem_cells(problem, (t.config.template_id for t in ok), tf32):
                self._members.setdefault(cell, set()).add(key)
        return self

    @property
    def num_problems(self) -> int:
        return len(self._problems)

    def cells(self) -> dict[str, int]:
        """cell name -> problem count: every listed cell, then candidate kinds found beyond them."""
        found = sorted(c[len("candidate/") :] for c in self._members if c.startswith("candidate/"))
        names = all_cells([*REQUIRED_CANDIDATE_KINDS, *found])
        return {name: len(self._members.get(name, ())) for name in names}

    def report(self, targets: dict[str, int] | None = None) -> dict:
        """The `--report-json` contract: ``cells``, ``empty_cells``, ``num_problems``; with
        ``targets``, also ``missing`` (cell -> problems short of its target)."""
        cells = self.cells()
        out = {
            "num_problems": self.num_problems,
            "cells": cells,
            "empty_cells": [name for name, n in cells.items() if n == 0],
        }
        if targets is not None:
            out["targets"] = dict(targets)
            out["missing"] = missing_counts(cells, targets)
        return out


def cell_target(cell: str, targets: dict[str, int] = DEFAULT_TARGETS) -> int:
    """The problem count ``cell`` should reach: by its dtype column, or the candidate figure."""
    if cell.startswith("candidate/"):
        return targets["candidate"]
    return targets[cell.rsplit("/", 2)[-2] if cell.startswith("op/") else cell.rsplit("/", 1)[-1]]


def missing_counts(cells: dict[str, int], targets: dict[str, int] = DEFAULT_TARGETS) -> dict[str, int]:
    """cell -> how many problems it lacks to reach its target, for the cells short of it."""
    out = {}
    for name, count in cells.items():
        short = cell_target(name, targets) - count
        if short > 0:
            out[name] = short
    return out


def read_missing(path: str | os.PathLike) -> dict[str, int]:
    """The ``missing`` map (cell -> problems short) of a report that `diode dataset coverage
    --targets --report-json` wrote; a bad file names itself and the field."""
    from .formats import DatasetFormatError, decode_bytes, read_input_bytes

    try:  # a regular file of bounded size (fileio.read_regular): a FIFO or device is refused
        report = decode_bytes(read_input_bytes(path), "json", False, path)
    except DatasetFormatError as e:
        raise UserError(f"{path}: not a JSON coverage report ({e.detail})") from None
    missing = report.get("missing") if isinstance(report, dict) else None
    if not isinstance(missing, dict):
        raise UserError(f"{path}: missing: no map of short cells (write it with `diode dataset coverage --targets`)")
    known = set(all_cells(()))
    for cell, short in missing.items():
        if not isinstance(short, int) or isinstance(short, bool) or short < 0:
            raise UserError(f"{path}: missing.{cell}: {short!r} is not a problem count")
        # candidate cells name whatever kinds Inductor offered; op and regime cells are fixed
        if not cell.startswith("candidate/") and cell not in known:
            raise UserError(f"{path}: missing.{cell}: not a cell of the coverage report")
    return dict(missing)


class CellFill:
    """Draws toward the cells a coverage report lists as short: :meth:`take` accepts a problem
    that counts in an op or size-regime cell still short (candidate cells depend on measurements,
    which a draw cannot know) and counts it against every short cell it is in."""

    def __init__(self, missing: dict[str, int], tf32: bool):
        self.tf32 = tf32
        self.remaining = {cell: n for cell, n in missing.items() if not cell.startswith("candidate/") and n > 0}

    def take(self, problem: Problem) -> bool:
        short = [c for c in problem_cells(problem, (), self.tf32) if self.remaining.get(c, 0) > 0]
        for cell in short:
            self.remaining[cell] -= 1
        return bool(short)

    @property
    def done(self) -> bool:
        return all(n <= 0 for n in self.remaining.values())

    def still_short(self) -> dict[str, int]:
        return {cell: n for cell, n in self.remaining.items() if n > 0}


def format_report(report: dict) -> list[str]:
    """The report as printed lines: op x layout and regime tables by dtype column, candidate kinds,
    then the empty cells (and the missing counts where the report has them)."""
    cells = report["cells"]
    width = max(len(d) for d in DTYPE_COLUMNS) + 1
    head = "".join(f"{d:>{width}s}" for d in DTYPE_COLUMNS)
    lines = [f"{report['num_problems']} problems", f"{'op layout':22s}{head}"]
    for op in OPS:
        for lay in LAYOUTS:
            lines.append(
                f"{op + ' ' + lay:22s}" + "".join(f"{cells[op_cell(op, d, lay)]:{width}d}" for d in DTYPE_COLUMNS)
            )
    lines.append(f"{'size regime':22s}{head}")
    for regime in REGIMES:
        lines.append(f"{regime:22s}" + "".join(f"{cells[regime_cell(regime, d)]:{width}d}" for d in DTYPE_COLUMNS))
    lines.append("candidate kinds (problems with a successful timing):")
    lines += [f"  {name[len('candidate/') :]:36s}{n:7d}" for name, n in cells.items() if name.startswith("candidate/")]
    empty = report["empty_cells"]
    lines.append(f"empty cells ({len(empty)}): " + (", ".join(empty) if empty else "none"))
    if "missing" in report:
        missing = report["missing"]
        lines.append(f"cells short of their target ({len(missing)}, {sum(missing.values())} problems in all):")
        lines += [
            f"  {name:44s} {short:5d} missing (target {cell_target(name, report['targets'])})"
            for name, short in missing.items()
        ]
    return lines

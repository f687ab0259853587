"""The Triton mm configs Inductor generates for a shape, without running Inductor's lowering.

Inductor's GEMM heuristics (``torch._inductor.template_heuristics.triton``) hold the raw
DEFAULT (about 20) and EXHAUSTIVE (1,875) config lists; for each problem they scale every
config to the shape (a block never larger than the next power of two of its dimension, 16 at
least), prune accumulator-register spills in EXHAUSTIVE, cap ``num_warps`` at
``BLOCK_M * BLOCK_N / 256`` and drop duplicates. This module applies the same steps to the same
lists, read from the installed torch, so the fast collector measures the configs that
``torch.compile`` would generate. ``tests/inductor/test_config_space.py`` checks the result
against the configs Inductor itself produced in the recorded H100 sample.

The persistent TMA template (``triton::mm_persistent_tma``, mm and addmm) has a list of its own
(Inductor's ``persistent_mm_configs``, without ``num_warps`` 2), scaled the same way; Inductor
offers it only where ``triton.enable_persistent_tma_matmul`` is set (``ENABLE_PERSISTENT_TMA_MATMUL=1``),
the GPU has TMA and both operands meet TMA's layout rules (:func:`tma_offered`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from functools import cache, lru_cache
from typing import Any

import numpy as np

from .._C import config_columns, dtype_bytes
from ..features import is_extern, template_kind
from ..selection import Pool
from ..types import KernelConfig, Problem

logger = logging.getLogger(__name__)

SEARCH_SPACES = ("DEFAULT", "EXHAUSTIVE")
TMA_TEMPLATE_ID = "triton::mm_persistent_tma"
# TMA: a tensor's base, its outer strides and its inner row are multiples of 16 bytes
_TMA_ALIGNMENT_BYTES = 16
_INT32_MAX = 2**31 - 1
_MIN_BLOCK = 16
_MAX_ACC_REGS = 255
# config_rows columns naming a config's template and tile: kind, block m/n/k, group_m, stages, warps
_TILE_COLUMNS = 7


@cache
def raw_config_lists() -> dict[str, tuple[tuple[int, int, int, int, int, int], ...]]:
    """(block_m, block_n, block_k, num_stages, num_warps, group_m) lists of Inductor's CUDA mm
    heuristic, by search space."""
    from torch._inductor.template_heuristics.triton import CUDAConfigHeuristic

    heuristic = CUDAConfigHeuristic()
    return {"DEFAULT": rows_of(heuristic.mm_configs), "EXHAUSTIVE": rows_of(heuristic.exhaustive_configs)}


@cache
def raw_tma_config_lists() -> dict[str, tuple[tuple[int, int, int, int, int, int], ...]]:
    """As :func:`raw_config_lists` for the persistent TMA template: Inductor's heuristic of that
    template, whose configs with ``num_warps`` 2 it drops before scaling (unsafe with TMA). Empty
    lists on a torch without the template."""
    try:
        from torch._inductor.template_heuristics.triton import CUDAPersistentTMATemplateConfigHeuristic
    except ImportError:
        return {space: () for space in SEARCH_SPACES}
    heuristic = CUDAPersistentTMATemplateConfigHeuristic()
    return {
        space: tuple(row for row in rows_of(configs) if row[4] != 2)
        for space, configs in (("DEFAULT", heuristic.mm_configs), ("EXHAUSTIVE", heuristic.exhaustive_configs))
    }


def rows_of(configs: Iterable[Any]) -> tuple[tuple[int, int, int, int, int, int], ...]:
    """(block_m, block_n, block_k, num_stages, num_warps, group_m) of Inductor's GEMM configs."""
    return tuple(
        (c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps, getattr(c, "group_m", None) or 8) for c in configs
    )


def _next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 2 ** math.ceil(math.log2(n))


@cache
def _raw_array(search_space: str, tma: bool = False) -> np.ndarray:
    lists = raw_tma_config_lists() if tma else raw_config_lists()
    return np.array(lists[search_space], dtype=np.int64).reshape(-1, 6)


def scaled_config_array(m: int, n: int, k: int, search_space: str, tma: bool = False) -> np.ndarray:
    """Inductor's scale -> prune -> finalize for one shape (scale 1, no int8): int64[configs, 6]
    of (block_m, block_n, block_k, num_stages, num_warps, group_m), Inductor's order, each kept
    where it first appears; ``tma``: of the persistent TMA template's list. Vectorised: the choice
    handler enumerates ~1,900 configs per GEMM."""
    if search_space not in SEARCH_SPACES:
        raise ValueError(f"search space must be one of {SEARCH_SPACES}, got {search_space!r}")
    raw = _raw_array(search_space, tma)
    if len(raw) == 0:
        return raw
    hints = [max(_next_power_of_2(d), _MIN_BLOCK) for d in (m, n, k)]
    out = raw.copy()
    for col, hint in enumerate(hints):
        out[:, col] = np.maximum(np.minimum(raw[:, col], hint), _MIN_BLOCK)
    tile = out[:, 0] * out[:, 1]
    if search_space == "EXHAUSTIVE":  # accumulator registers per thread: ceil(BM*BN / (warps*32))
        lanes = out[:, 4] * 32
        out = out[(tile + lanes - 1) // lanes <= _MAX_ACC_REGS]
        tile = out[:, 0] * out[:, 1]
    out[:, 4] = np.minimum(out[:, 4], tile // 256)
    keys = np.ravel_multi_index(tuple(out.T), tuple(out.max(axis=0) + 1))  # one int per config
    _, first = np.unique(keys, return_index=True)
    return out[np.sort(first)]


def scaled_configs(m: int, n: int, k: int, search_space: str) -> list[tuple[int, int, int, int, int, int]]:
    """:func:`scaled_config_array` as tuples."""
    return [tuple(int(v) for v in row) for row in scaled_config_array(m, n, k, search_space)]


def allow_tf32(problem: Problem) -> bool:
    """Inductor's ALLOW_TF32 for the mm/bmm template on ``problem`` (static sizes), asked of the
    installed torch's heuristic: its rule differs between versions (torch 2.13: tf32 allowed and
    M >= 16 and min(N, K) >= 512; torch 2.11: tf32 allowed, the sizes aligned only under
    ``force_same_precision``). Inductor sets it whatever the dtype; it changes only fp32 dots. The
    choice handler, which has Inductor's own candidates, reads it off them (``candidates.probe``)."""
    if not tf32_enabled():
        return False
    from torch._inductor import config as inductor_config

    force_same_precision = bool(getattr(inductor_config, "force_same_precision", False))
    return _inductor_allow_tf32(problem.batched, problem.M, problem.N, problem.K, force_same_precision)


class _SizesOnly:
    """The part of Inductor's graph (``V.graph``) its mm heuristics read for static sizes."""

    def __init__(self) -> None:
        from torch._inductor.sizevars import SizeVarAllocator

        self.sizevars = SizeVarAllocator()


@lru_cache(maxsize=4096)
def _inductor_allow_tf32(batched: bool, m: int, n: int, k: int, force_same_precision: bool) -> bool:
    """Inductor's mm/bmm heuristic's ALLOW_TF32 for these sizes, with tf32 allowed (the cache key
    holds what else it reads). Where that heuristic cannot be asked (another torch's API), torch
    2.13's rule."""
    import torch

    try:
        from torch._inductor import ir
        from torch._inductor.kernel_inputs import MMKernelInputs
        from torch._inductor.template_heuristics.registry import get_template_heuristic
        from torch._inductor.virtualized import V

        device, op = torch.device("cuda"), "bmm" if batched else "mm"
        lead = [1] if batched else []
        a = ir.InputBuffer(name="a", layout=ir.FixedLayout(device, torch.float32, [*lead, m, k]))
        b = ir.InputBuffer(name="b", layout=ir.FixedLayout(device, torch.float32, [*lead, k, n]))
        heuristic = get_template_heuristic(f"triton::{op}", "cuda", op)
        with V.set_graph_handler(_SizesOnly()):
            return bool(heuristic.get_extra_kwargs(MMKernelInputs([a, b]), op)["ALLOW_TF32"])
    except Exception as e:  # an Inductor without this API: torch 2.13's rule
        logger.debug("torch-diode: Inductor's ALLOW_TF32 rule could not be asked (%s)", e)
        return m >= 16 and min(n, k) >= 512


def aten_allows_tf32(problem: Problem, tf32: bool) -> bool:
    """Whether an ATen (cuBLAS) choice of ``problem`` may run TF32 kernels: fp32 with TF32 allowed
    (``tf32``). Its config then carries ``allow_tf32`` (the collectors record it, the handler sets
    it on Inductor's ATen choices), so that a model tells cuBLAS's TF32 times from its
    full-precision ones."""
    return tf32 and problem.dtype_a == "float32"


def with_aten_tf32(problem: Problem, rows: np.ndarray, tf32: bool) -> np.ndarray:
    """``features.config_rows`` of a problem's candidates with the ATen rows' ``allow_tf32`` set
    as :func:`aten_allows_tf32` says (a copy where it changes anything)."""
    if not aten_allows_tf32(problem, tf32) or len(rows) == 0:
        return rows
    rows = np.array(rows, copy=True)
    rows[is_extern(rows), config_columns().index("allow_tf32")] = 1
    return rows


def tf32_enabled() -> bool:
    """Whether fp32 CUDA matmuls may use TF32 (``torch.set_float32_matmul_precision("high")``)."""
    import torch

    backend = torch.backends.cuda.matmul
    precision = getattr(backend, "fp32_precision", None)
    return precision == "tf32" if precision is not None else bool(backend.allow_tf32)


def template_id(problem: Problem) -> str:
    return "triton::bmm" if problem.batched else "triton::mm"


def epilogue_extras(problem: Problem) -> dict[str, Any]:
    """The extra template kwargs Inductor records for addmm-style epilogues (alpha = beta = 1)."""
    if not problem.has_bias:
        return {}
    return {"epilogue_fn_hash": f"['addmm_epilogue', torch.{problem.dtype_out}, 1, 1]", "prefix_args": 1}


def triton_candidates(
    problem: Problem, search_space: str = "DEFAULT", tf32: bool | None = None
) -> tuple[np.ndarray, Callable[[int], KernelConfig]]:
    """The Triton mm/bmm template configs Inductor generates for ``problem`` as the feature
    path's config rows (what ``features.config_rows(triton_configs(problem, search_space))``
    gives), and a function making the KernelConfig of row ``i``: the choice handler featurizes
    every candidate but needs KernelConfig objects only for the ones it chooses. ``tf32``: their
    ALLOW_TF32 (the handler reads it off Inductor's own candidate); None: :func:`allow_tf32`."""
    scaled = scaled_config_array(problem.M, problem.N, problem.K, search_space)
    bm, bn, bk, stages, warps, group_m = scaled.T
    tid, extras = template_id(problem), epilogue_extras(problem)
    tf32 = allow_tf32(problem) if tf32 is None else tf32
    even_k = problem.K % bk == 0
    rows = np.column_stack(
        [
            np.full(len(scaled), template_kind(tid)),
            bm,
            bn,
            bk,
            group_m,
            stages,
            warps,
            even_k,
            np.full(len(scaled), int(tf32)),
            np.zeros(len(scaled), dtype=np.int64),  # use_fast_accum
            np.zeros(len(scaled), dtype=np.int64),  # k_split
        ]
    ).astype(np.int64)

    def config_at(i: int) -> KernelConfig:
        return KernelConfig(
            template_id=tid,
            block_m=int(bm[i]),
            block_n=int(bn[i]),
            block_k=int(bk[i]),
            group_m=int(group_m[i]),
            num_stages=int(stages[i]),
            num_warps=int(warps[i]),
            even_k=bool(even_k[i]),
            allow_tf32=tf32,
            use_fast_accum=False,
            acc_type="tl.float32",
            extras=extras,
        )

    return rows, config_at


def triton_configs(problem: Problem, search_space: str = "DEFAULT") -> list[KernelConfig]:
    """The Triton mm/bmm template configs Inductor generates for ``problem``."""
    rows, config_at = triton_candidates(problem, search_space)
    return [config_at(i) for i in range(len(rows))]


def _tma_layout_ok(sizes: tuple[int, int], strides: tuple[int, int], itemsize: int) -> bool:
    """Inductor's ``can_use_tma`` for one 2-D tensor (its base taken as 16-byte aligned, as the
    caching allocator's are): one inner dim of stride 1, the other stride and the inner row a
    multiple of 16 bytes, sizes within int32."""
    inner = [i for i, st in enumerate(strides) if st == 1]
    if len(inner) != 1 or any(s > _INT32_MAX for s in sizes):
        return False
    outer = strides[1 - inner[0]]
    return (outer * itemsize) % _TMA_ALIGNMENT_BYTES == 0 and (sizes[inner[0]] * itemsize) % _TMA_ALIGNMENT_BYTES == 0


def tma_offered(problem: Problem, device_has_tma: bool | None = None) -> bool:
    """Whether Inductor offers the persistent TMA template for ``problem`` (``use_triton_tma_template``):
    mm or addmm, ``triton.enable_persistent_tma_matmul`` set, a GPU with TMA (``device_has_tma``;
    None: torch's ``has_triton_tma_device()``), both operands (and the output, where
    ``triton.enable_template_tma_store`` is set) TMA-compatible."""
    if problem.batched:
        return False
    try:
        from torch._inductor import config
    except ImportError:
        return False
    if not getattr(config.triton, "enable_persistent_tma_matmul", False):
        return False
    if device_has_tma is None:
        from torch.utils._triton import has_triton_tma_device

        device_has_tma = has_triton_tma_device()
    if not device_has_tma:
        return False
    from ..types import DTYPES

    size = {d: dtype_bytes(DTYPES.index(d)) for d in (problem.dtype_a, problem.dtype_b, problem.dtype_out)}
    a, b = (strides[-2:] for strides in problem.operand_strides())
    tensors = [((problem.M, problem.K), a, size[problem.dtype_a]), ((problem.K, problem.N), b, size[problem.dtype_b])]
    if getattr(config.triton, "enable_template_tma_store", False):
        tensors.append(((problem.M, problem.N), (problem.N, 1), size[problem.dtype_out]))
    return all(_tma_layout_ok(*t) for t in tensors)


def tma_configs(problem: Problem, num_sms: int, search_space: str = "DEFAULT") -> list[KernelConfig]:
    """The persistent TMA template's configs Inductor generates for ``problem`` (whether it offers
    them: :func:`tma_offered`), with the template options it records: the operands' majorness,
    the GPU's SM count ``num_sms`` (the persistent grid), the TMA API, and the addmm epilogue."""
    scaled = scaled_config_array(problem.M, problem.N, problem.K, search_space, tma=True)
    a, b = (strides[-2:] for strides in problem.operand_strides())
    extras = {
        "A_ROW_MAJOR": a[1] == 1,
        "B_ROW_MAJOR": b[1] == 1,
        "NUM_SMS": int(num_sms),
        "TMA_EXPERIMENTAL_API": False,
        "TMA_SIZE": 128,
        "tma_store": False,
        "transpose_discontiguous_tensor_descriptors_override": True,
        **epilogue_extras(problem),
    }
    tf32 = allow_tf32(problem)
    return [
        KernelConfig(
            template_id=TMA_TEMPLATE_ID,
            block_m=int(bm),
            block_n=int(bn),
            block_k=int(bk),
            group_m=int(group_m),
            num_stages=int(stages),
            num_warps=int(warps),
            even_k=problem.K % int(bk) == 0,
            allow_tf32=tf32,
            use_fast_accum=False,
            acc_type="tl.float32",
            extras=extras,
        )
        for bm, bn, bk, stages, warps, group_m in scaled
    ]


def aten_configs(problem: Problem, tf32: bool | None = None) -> list[KernelConfig]:
    """The ATen (cuBLAS) choices Inductor offers for the op, marked ``allow_tf32`` where
    :func:`aten_allows_tf32` says (``tf32``: whether TF32 is allowed; None: as torch is set now)."""
    names = {"mm": ("aten::mm",), "bmm": ("aten::bmm",), "baddbmm": ("aten::baddbmm",)}
    tf32 = aten_allows_tf32(problem, tf32_enabled() if tf32 is None else tf32)
    return [KernelConfig(name, allow_tf32=tf32) for name in names.get(problem.op, ("aten::bias_addmm", "aten::addmm"))]


def decompose_k_configs(problem: Problem) -> list[KernelConfig]:
    """Inductor's decompose_k candidates for ``problem``, one per split of K: for mm where K is at
    least ``triton.decompose_k_threshold`` times M and N and ``triton.num_decompose_k_splits`` is
    positive (Inductor's ``use_decompose_k_choice``, which needs a graph to ask), with the splits
    of Inductor's own ``get_k_splits``. Empty on a torch without decompose_k."""
    if problem.op != "mm":
        return []
    try:
        from torch._inductor import config
        from torch._inductor.utils import get_k_splits
    except ImportError:
        return []
    threshold = config.triton.decompose_k_threshold
    M, N, K = problem.M, problem.N, problem.K
    if config.triton.num_decompose_k_splits <= 0 or K < threshold * M or K < threshold * N:
        return []
    return [KernelConfig("decompose_k", extras={"k_split": int(s)}) for s in get_k_splits(M, N, K)]


def beyond_default_list(problem: Problem, rows: np.ndarray) -> np.ndarray:
    """Which of the candidates given by their ``features.config_rows`` are Triton mm/bmm template
    configs outside Inductor's DEFAULT list for ``problem`` (candidates of other templates and
    ATen choices are not). A config is in the list when its template and tile parameters (block
    sizes, GROUP_M, stages, warps) are; EVEN_K and ALLOW_TF32 follow from the problem and the
    TF32 setting, so data timed under another setting still matches."""
    rows = np.asarray(rows)
    default, _ = triton_candidates(problem, "DEFAULT", tf32=False)  # tile columns only: no ALLOW_TF32 to ask
    if len(rows) == 0 or len(default) == 0:
        return np.zeros(len(rows), dtype=bool)
    tile = slice(0, _TILE_COLUMNS)
    same_template = rows[:, 0] == default[0, 0]
    listed = (rows[:, None, tile] == default[None, :, tile]).all(axis=2).any(axis=1)
    return same_template & ~listed


def decision_pool(problem: Problem, features: np.ndarray, rows: np.ndarray, allowed: np.ndarray | None = None) -> Pool:
    """The candidates of one decision as the selection sees them, from their model features and
    ``features.config_rows``: which are ATen choices, which Triton configs lie outside Inductor's
    DEFAULT list (computed only where a decision widens) and which may be chosen (``allowed``;
    None: all). The handler, the replays, evaluation and training build every pool here."""
    return Pool(features, is_extern(rows), lambda: beyond_default_list(problem, rows), allowed)

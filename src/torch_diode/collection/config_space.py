"""The Triton mm configs Inductor generates for a shape, without running Inductor's lowering.

Inductor's GEMM heuristics (``torch._inductor.template_heuristics.triton``) hold the raw
DEFAULT (about 20) and EXHAUSTIVE (1,875) config lists; for each problem they scale every
config to the shape (a block never larger than the next power of two of its dimension, 16 at
least), prune accumulator-register spills in EXHAUSTIVE, cap ``num_warps`` at
``BLOCK_M * BLOCK_N / 256`` and drop duplicates. This module applies the same steps to the same
lists, read from the installed torch, so the fast collector measures the configs that
``torch.compile`` would generate. ``tests/collection/test_config_space.py`` checks the result
against the configs Inductor itself produced in the recorded H100 sample.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Iterable

from ..types import KernelConfig, Problem

SEARCH_SPACES = ("DEFAULT", "EXHAUSTIVE")
_MIN_BLOCK = 16
_MAX_ACC_REGS = 255


@lru_cache(maxsize=None)
def raw_config_lists() -> dict[str, tuple[tuple[int, int, int, int, int, int], ...]]:
    """(block_m, block_n, block_k, num_stages, num_warps, group_m) lists of Inductor's CUDA mm
    heuristic, by search space."""
    from torch._inductor.template_heuristics.triton import CUDAConfigHeuristic

    heuristic = CUDAConfigHeuristic()
    return {"DEFAULT": rows_of(heuristic.mm_configs), "EXHAUSTIVE": rows_of(heuristic.exhaustive_configs)}


def rows_of(configs: Iterable[Any]) -> tuple[tuple[int, int, int, int, int, int], ...]:
    """(block_m, block_n, block_k, num_stages, num_warps, group_m) of Inductor's GEMM configs."""
    return tuple(
        (c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps, getattr(c, "group_m", None) or 8)
        for c in configs
    )


def _next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 2 ** math.ceil(math.log2(n))


def scaled_configs(m: int, n: int, k: int, search_space: str) -> list[tuple[int, int, int, int, int, int]]:
    """Inductor's scale -> prune -> finalize for one shape (scale 1, no int8)."""
    if search_space not in SEARCH_SPACES:
        raise ValueError(f"search space must be one of {SEARCH_SPACES}, got {search_space!r}")
    m_hint = max(_next_power_of_2(m), _MIN_BLOCK)
    n_hint = max(_next_power_of_2(n), _MIN_BLOCK)
    k_hint = max(_next_power_of_2(k), _MIN_BLOCK)
    out, seen = [], set()
    for bm, bn, bk, stages, warps, group_m in raw_config_lists()[search_space]:
        bm = max(min(bm, m_hint), _MIN_BLOCK)
        bn = max(min(bn, n_hint), _MIN_BLOCK)
        bk = max(min(bk, k_hint), _MIN_BLOCK)
        if search_space == "EXHAUSTIVE" and math.ceil(bm * bn / (warps * 32)) > _MAX_ACC_REGS:
            continue
        warps = min(warps, bm * bn // 256)
        key = (bm, bn, bk, stages, warps, group_m)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def allow_tf32(problem: Problem) -> bool:
    """Inductor's ALLOW_TF32 for the mm template: tf32 allowed and the problem large enough,
    whatever the dtype (Inductor sets it for fp16/bf16 too, where it changes nothing)."""
    return tf32_enabled() and problem.M >= 16 and min(problem.N, problem.K) >= 512


def tf32_enabled() -> bool:
    """Whether fp32 CUDA matmuls may use TF32 (``torch.set_float32_matmul_precision("high")``)."""
    import torch

    backend = torch.backends.cuda.matmul
    precision = getattr(backend, "fp32_precision", None)
    return precision == "tf32" if precision is not None else bool(backend.allow_tf32)


def template_id(problem: Problem) -> str:
    return "triton::bmm" if problem.op in ("bmm", "baddbmm") else "triton::mm"


def epilogue_extras(problem: Problem) -> dict[str, Any]:
    """The extra template kwargs Inductor records for addmm-style epilogues (alpha = beta = 1)."""
    if not problem.has_bias:
        return {}
    return {"epilogue_fn_hash": f"['addmm_epilogue', torch.{problem.dtype_out}, 1, 1]", "prefix_args": 1}


def triton_configs(problem: Problem, search_space: str = "DEFAULT") -> list[KernelConfig]:
    """The Triton mm/bmm template configs Inductor generates for ``problem``."""
    tf32 = allow_tf32(problem)
    extras = epilogue_extras(problem)
    return [
        KernelConfig(
            template_id=template_id(problem),
            block_m=bm, block_n=bn, block_k=bk, group_m=group_m, num_stages=stages, num_warps=warps,
            even_k=problem.K % bk == 0, allow_tf32=tf32, use_fast_accum=False, acc_type="tl.float32",
            extras=extras,
        )
        for bm, bn, bk, stages, warps, group_m in scaled_configs(problem.M, problem.N, problem.K, search_space)
    ]


def aten_configs(problem: Problem) -> list[KernelConfig]:
    """The ATen (cuBLAS) choices Inductor offers for the op."""
    if problem.op == "mm":
        return [KernelConfig("aten::mm")]
    if problem.op == "bmm":
        return [KernelConfig("aten::bmm")]
    if problem.op == "baddbmm":
        return [KernelConfig("aten::baddbmm")]
    return [KernelConfig("aten::bias_addmm"), KernelConfig("aten::addmm")]

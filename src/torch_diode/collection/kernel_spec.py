"""How the fast path launches a config's kernel: arguments, constexprs and grid, without triton.

Kept apart from the Triton kernels (triton_mm.py) so that the variant bookkeeping (which
launches share a compiled binary) can be computed and tested on machines without a GPU.
"""

from __future__ import annotations

import math
from typing import Any

from ..inductor.config_space import TMA_TEMPLATE_ID
from ..types import KernelConfig

_MAX_GRID_Y = 65535

# Kernels specialised on M, N, K as Triton specialises any int (== 1, multiple of 16), so that they
# run as Inductor's static-size kernels do (python -m benchmarks.studies.timing_methods compares the two;
# its figures: benchmarks/studies/README.md).
SPECIALIZE_SIZES = True

# The ints of the mm and bmm kernels' signatures (triton_mm's _mm_body, _bmm_body), in the order the
# launch passes them after the four tensors.
MM_INTS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")
BMM_INTS = (
    "M", "N", "K", "BATCH", "stride_aq", "stride_am", "stride_ak", "stride_bq", "stride_bk", "stride_bn",
    "stride_cq", "stride_cm", "stride_cn",
)  # fmt: skip
# Every int of either kernel, once, in that order: what `--constant-ints all` holds
ALL_INTS = tuple(dict.fromkeys(MM_INTS + BMM_INTS))
# Those of them compiled as constants, their values baked into the binary as in Inductor's generated
# kernels, instead of runtime arguments that one binary per variant class serves (empty: none). On
# short GEMMs the constants make the kernels faster (python -m benchmarks.studies.kernel_gap); each
# distinct value is a binary of its own. Names that a kernel's signature lacks are ignored for it.
CONSTANT_INTS: tuple[str, ...] = ()


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def contig(stride_m: int, stride_k: int, m: int, k: int, block_m: int) -> bool:
    """The template's contiguity condition, evaluated on the host as Inductor does at codegen."""
    return ((stride_m == 1 and stride_k == m) or (stride_m == k and stride_k == 1)) and (m >= block_m and k > 1)


_INT32_MAX = 2**31 - 1
# Kernels given the layout hints (layout_hints): off, they load and store as Triton alone knows the
# runtime sizes and strides (python -m benchmarks.layout_hints times both ways and Inductor's).
LAYOUT_HINTS = True
# Triton specialises an int argument that is a multiple of this (tt.divisibility); the hints below
# only tell the compiler what it cannot see under it
_SPECIALIZED_DIVISIBILITY = 16


def _power_of_two_factor(*values: int) -> int:
    """The largest power of two dividing every value (0s ignored), at most 16."""
    g = 0
    for v in values:
        g = math.gcd(g, abs(int(v)))
    return _SPECIALIZED_DIVISIBILITY if g == 0 else min(_SPECIALIZED_DIVISIBILITY, g & -g)


def offsets_hint(sizes: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """(dim, divisibility) of a 2-D (or batched) operand's offsets as a kernel whose strides are
    constants knows them: along its contiguous dim (0 or 1 of the last two, stride 1) every run
    starts at a multiple of the power of two dividing the other strides (of dims longer than 1).
    (-1, 16): nothing to tell (no contiguous dim, a factor of 1, which a runtime int gets anyway,
    or Triton's own specialisation says 16)."""
    rank = len(sizes)
    if strides[-1] == 1 and (sizes[-1] > 1 or strides[-2] != 1):
        dim = 1
    elif strides[-2] == 1:
        dim = 0
    else:
        return -1, _SPECIALIZED_DIVISIBILITY
    others = [s for i, (n, s) in enumerate(zip(sizes, strides)) if i != rank - 2 + dim and n > 1]
    divisibility = _power_of_two_factor(*others)
    if divisibility in (1, _SPECIALIZED_DIVISIBILITY):  # 1: what a runtime int tells already
        return -1, _SPECIALIZED_DIVISIBILITY
    return dim, divisibility


def bound_run(size: int) -> int:
    """Over how many aligned elements a bounds mask ``index < size`` is constant, and ``index %
    size`` contiguous, as a kernel with ``size`` a constant knows it (0: nothing to tell, an odd
    size or one Triton specialises)."""
    run = _power_of_two_factor(size)
    return run if 1 < run < _SPECIALIZED_DIVISIBILITY else 0


def layout_hints(a: Any, b: Any, out: Any) -> dict[str, int]:
    """The kernels' alignment hints for these operands (triton_mm's docstring); all "none" where
    LAYOUT_HINTS is off."""
    hints = {}
    for name, t in (("A", a), ("B", b), ("C", out)):
        dim, div = offsets_hint(tuple(t.shape), tuple(t.stride())) if LAYOUT_HINTS else (-1, 16)
        hints[f"{name}_HINT_DIM"], hints[f"{name}_HINT_DIV"] = dim, div
    hints["K_RUN"] = bound_run(int(a.shape[-1])) if LAYOUT_HINTS else 0
    hints["N_RUN"] = bound_run(int(b.shape[-1])) if LAYOUT_HINTS else 0
    # the wrapped row offsets of A matter where A's rows are its contiguous dim (stored transposed)
    a_by_rows = a.stride(-2) == 1 and a.shape[-2] > 1
    hints["M_RUN"] = bound_run(int(a.shape[-2])) if LAYOUT_HINTS and a_by_rows else 0
    return hints


def int_names(batched: bool) -> tuple[str, ...]:
    """The names of the ints a launch passes after its tensors (MM_INTS, BMM_INTS)."""
    return BMM_INTS if batched else MM_INTS


def retyped_source(source: str, constant: tuple[str, ...] = (), runtime: tuple[str, ...] = ()) -> str:
    """A kernel body's source (its ``def`` first, one parameter a line) with the parameters
    ``constant`` annotated ``tl.constexpr`` and the constexpr parameters ``runtime`` made plain
    ones; ValueError naming a parameter the signature does not hold as asked."""
    head, sep, rest = source.partition("):\n")
    if not sep:
        raise ValueError("retyped_source: expected a def with one parameter a line")
    lines = head.split("\n")
    for names, made_constexpr in ((constant, True), (runtime, False)):
        for name in names:
            plain, typed = f"    {name},", f"    {name}: tl.constexpr,"
            was, becomes = (plain, typed) if made_constexpr else (typed, plain)
            if was not in lines:
                raise ValueError(f"retyped_source: no parameter {was.strip()!r} in the signature")
            lines[lines.index(was)] = becomes
    return "\n".join(lines) + sep + rest


def needs_int64_index(*tensors: Any) -> bool:
    """Whether one of the tensors spans more elements than int32 indexes (Inductor then indexes in
    int64: a 512 x 11008 x 1024 bmm operand holds 5.8e9 elements)."""
    return any(
        t is not None and 1 + sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride())) > _INT32_MAX
        for t in tensors
    )


def launch_spec(a: Any, b: Any, out: Any, bias: Any, config: KernelConfig) -> tuple[bool, tuple, dict]:
    """(batched, grid, {"args": positional args, "meta": constexpr kwargs}) for
    ``out = a @ b (+ bias)``; ``a``: [B,] M x K, ``b``: [B,] K x N, ``bias`` expanded to ``out``."""
    batched = a.dim() == 3
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    bm, bn = config.block_m, config.block_n
    if config.template_id == TMA_TEMPLATE_ID:
        return False, *_tma_launch_spec(a, b, out, bias, config)
    meta = dict(
        A_CONTIG=contig(a.stride(-2), a.stride(-1), m, k, bm),
        B_CONTIG=contig(b.stride(-1), b.stride(-2), n, k, bn),
        HAS_BIAS=bias is not None,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=config.block_k,
        GROUP_M=config.group_m or 8,
        EVEN_K=config.even_k,
        ALLOW_TF32=config.allow_tf32,
        USE_FAST_ACCUM=config.use_fast_accum,
        INDEX_64=needs_int64_index(a, b, out, bias),
        **layout_hints(a, b, out),
        num_stages=config.num_stages,
        num_warps=config.num_warps,
    )
    bias_t = bias if bias is not None else out
    # the bias's strides are constexprs (triton_mm's docstring says why)
    bias_strides = tuple(int(s) for s in bias.stride()) if bias is not None else (0,) * out.dim()
    meta.update(zip(("stride_biasq", "stride_biasm", "stride_biasn")[-out.dim() :], bias_strides))
    tiles = _cdiv(m, bm) * _cdiv(n, bn)
    if batched:
        batch = a.shape[0]
        grid = (tiles, min(batch, _MAX_GRID_Y), _cdiv(batch, _MAX_GRID_Y))
        args = (a, b, out, bias_t, m, n, k, batch, *a.stride(), *b.stride(), *out.stride())
    else:
        grid = (tiles, 1, 1)
        args = (a, b, out, bias_t, m, n, k, *a.stride(), *b.stride(), *out.stride())
    return batched, grid, {"args": args, "meta": meta}


def _tma_launch_spec(a: Any, b: Any, out: Any, bias: Any, config: KernelConfig) -> tuple[tuple, dict]:
    """(grid, args and constexprs) of the persistent TMA kernel: min(SMs, tiles) programs, each
    walking the tiles; the operands' majorness as the config records it (Inductor's options)."""
    m, k = a.shape
    n = b.shape[1]
    extras = config.extras_dict
    num_sms = int(extras["NUM_SMS"])
    bias_strides = tuple(int(s) for s in bias.stride()) if bias is not None else (0, 0)
    meta = dict(
        stride_biasm=bias_strides[0],
        stride_biasn=bias_strides[1],
        A_ROW_MAJOR=bool(extras["A_ROW_MAJOR"]),
        B_ROW_MAJOR=bool(extras["B_ROW_MAJOR"]),
        HAS_BIAS=bias is not None,
        BLOCK_M=config.block_m,
        BLOCK_N=config.block_n,
        BLOCK_K=config.block_k,
        GROUP_M=config.group_m or 8,
        NUM_SMS=num_sms,
        ALLOW_TF32=config.allow_tf32,
        USE_FAST_ACCUM=config.use_fast_accum,
        INDEX_64=needs_int64_index(out, bias),
        **layout_hints(a, b, out),
        num_stages=config.num_stages,
        num_warps=config.num_warps,
    )
    grid = (min(num_sms, _cdiv(m, config.block_m) * _cdiv(n, config.block_n)), 1, 1)
    args = (a, b, out, bias if bias is not None else out, m, n, k, *a.stride(), *b.stride(), *out.stride())
    return grid, {"args": args, "meta": meta}


def layout_hinted(problem: Any) -> bool:
    """Whether the kernels of ``problem`` get any layout hint: the fast collector timed them with
    narrower memory accesses than Inductor's kernels before the hints."""
    from .operands import layout_tensors

    a, b, out, _ = layout_tensors(problem, "meta", fill=False)
    hints = layout_hints(a, b, out)
    return any(hints[f"{x}_HINT_DIM"] >= 0 for x in "ABC") or any(hints[f"{x}_RUN"] for x in "KNM")

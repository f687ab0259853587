"""Inductor's Triton GEMM templates as standalone Triton kernels, for the fast collector.

The mm and bmm kernels follow ``torch/_inductor/kernel/templates/triton_mm.py.jinja`` and
``triton_bmm.py.jinja`` line by line (grouped tile order, wrap-around row/column offsets with
contiguity hints, K masks only when not EVEN_K, fp32 accumulation, the addmm epilogue
``acc + bias``), with one difference: sizes and strides are runtime arguments instead of
constants baked into the source, so one compilation per config serves every shape. The bias's
strides are the exception: compile-time constants, as in Inductor's kernels (where a broadcast
bias's zero stride drops out of the index). Passed at run time, they made Triton 3.6 build
kernels that end in a CUDA misaligned-address fault on some shapes with unaligned rows, where
Inductor's kernel of the same config runs (``python -m benchmarks.studies.collector_fault``;
benchmarks/results/collector_fault_h200.json).

Layout hints. Triton specialises an int argument of 1 and one that is a multiple of 16; below 16
a constant tells the compiler more, its largest power-of-two factor: Inductor's kernel loads rows
of K = 72 fp16 elements in 16-byte vectors where a runtime 72 makes 2-byte loads. The launch
therefore passes, for every operand whose contiguous runs start at a multiple of fewer than 16
elements, that factor (``*_HINT_DIM``, ``*_HINT_DIV``: ``tl.multiple_of`` on the offsets), and
the run over which the K and N bounds masks are constant and the wrapped M and N offsets
contiguous (``K_RUN``, ``N_RUN``, ``M_RUN``: ``tl.max_constancy``, ``tl.max_contiguous``): what
the compiler derives from Inductor's constants (:func:`kernel_spec.layout_hints`; ``_hinted_sum``,
``_bounds_mask``, ``_wrapped``). Aligned problems get none, and their kernels are unchanged.

The persistent TMA template (``triton_persistent_tma_mm.py.jinja``, the stable tensor-descriptor
API of Triton 3.6) is copied the same way: one program per SM walking the output tiles in the
grouped order, A and B read through device-side tensor descriptors in their own majorness, fp32
accumulation, the addmm epilogue; its output is stored through pointers with a bounds mask
(Inductor's default, ``tma_store`` off, stores the tile through a block pointer). Device-side
descriptors need a scratch allocation per launch, which Triton asks of the allocator that a TMA
launcher sets.

The fidelity benchmark (benchmarks/collector_fidelity.py) compares the kernels' timings with
Inductor's own benchmark of its generated kernels; benchmarks/layout_hints.py the hints' effect.

Importing this module needs triton (GPU machines).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import linecache
import textwrap
from typing import Any

import triton
import triton.language as tl

from ..types import KernelConfig
from . import kernel_spec
from .kernel_spec import launch_spec


@triton.jit
def _hinted_sum(first, second, DIM: tl.constexpr, DIV: tl.constexpr):
    """``first + second``, offsets whose contiguous runs along ``DIM`` (0, 1; -1: no hint) start at
    multiples of ``DIV`` elements. The sum is made here: a hint on a value the function is given
    (its argument) is lost."""
    offsets = first + second
    if DIM == 0:
        offsets = tl.multiple_of(offsets, [DIV, 1])
    elif DIM == 1:
        offsets = tl.multiple_of(offsets, [1, DIV])
    return offsets


@triton.jit
def _bounds_mask(index, bound, DIM: tl.constexpr, RUN: tl.constexpr):
    """``index < bound``, constant over aligned runs of ``RUN`` elements along ``DIM`` (0: no hint)."""
    mask = index < bound
    if RUN > 0:
        if DIM == 0:
            mask = tl.max_constancy(mask, [RUN, 1])
        else:
            mask = tl.max_constancy(mask, [1, RUN])
    return mask


@triton.jit
def _wrapped(index, size, RUN: tl.constexpr):
    """``index % size`` (the templates' wrap-around offsets), contiguous over aligned runs of
    ``RUN`` elements that start at multiples of ``RUN`` (0: no hint): the wrap falls at multiples
    of ``size``, of which ``RUN`` is a power-of-two factor."""
    wrapped = index % size
    if RUN > 0:
        wrapped = tl.max_contiguous(tl.multiple_of(wrapped, RUN), RUN)
    return wrapped


@triton.jit
def _store_tile(
    C,
    Bias,
    acc,
    idx_m,
    idx_n,
    M,
    N,
    stride_cm,
    stride_cn,
    stride_biasm: tl.constexpr,
    stride_biasn: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    C_HINT_DIM: tl.constexpr,
    C_HINT_DIV: tl.constexpr,
    N_RUN: tl.constexpr,
):
    """The mm templates' epilogue: the tile (+ bias) stored where it lies within M x N."""
    mask = (idx_m < M) & _bounds_mask(idx_n, N, 1, N_RUN)
    if HAS_BIAS:
        bias = tl.load(Bias + (idx_m * stride_biasm + idx_n * stride_biasn), mask, eviction_policy="evict_last")
        acc = acc + bias.to(tl.float32)
    c_offsets = _hinted_sum(idx_m * stride_cm, idx_n * stride_cn, C_HINT_DIM, C_HINT_DIV)
    tl.store(C + c_offsets, acc.to(C.dtype.element_ty), mask)


@triton.jit
def _grouped_tile(tile_id, grid_m, grid_n, GROUP_M: tl.constexpr):
    """The templates' grouped tile order (better L2 reuse): tile ``tile_id``'s (pid_m, pid_n)."""
    width = GROUP_M * grid_n
    group_id = tile_id // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (tile_id % group_size)
    pid_n = (tile_id % width) // (group_size)
    return pid_m, pid_n


@triton.jit
def _tile_offsets(
    pid,
    M,
    N,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    GROUP_M: tl.constexpr,
    A_CONTIG: tl.constexpr,
    B_CONTIG: tl.constexpr,
    M_RUN: tl.constexpr,
    N_RUN: tl.constexpr,
):
    """The mm/bmm templates' tile of program ``pid`` and its wrap-around row and column offsets,
    with the templates' contiguity hints (and the layout hints where the tile wraps)."""
    pid_m, pid_n = _grouped_tile(pid, (M + BLOCK_M - 1) // BLOCK_M, (N + BLOCK_N - 1) // BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if A_CONTIG:
        offs_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    else:
        offs_m = _wrapped(rm, M, M_RUN)
    if B_CONTIG:
        offs_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    else:
        offs_n = _wrapped(rn, N, N_RUN)
    return pid_m, pid_n, offs_m, offs_n


def _mm_body(
    A,
    B,
    C,
    Bias,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    stride_biasm: tl.constexpr,
    stride_biasn: tl.constexpr,
    A_CONTIG: tl.constexpr,
    B_CONTIG: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
    ALLOW_TF32: tl.constexpr,
    USE_FAST_ACCUM: tl.constexpr,
    INDEX_64: tl.constexpr,
    A_HINT_DIM: tl.constexpr,
    A_HINT_DIV: tl.constexpr,
    B_HINT_DIM: tl.constexpr,
    B_HINT_DIV: tl.constexpr,
    C_HINT_DIM: tl.constexpr,
    C_HINT_DIV: tl.constexpr,
    K_RUN: tl.constexpr,
    N_RUN: tl.constexpr,
    M_RUN: tl.constexpr,
):
    pid_m, pid_n, offs_a_m, offs_b_n = _tile_offsets(
        tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M, A_CONTIG, B_CONTIG, M_RUN, N_RUN
    )
    offs_k = tl.arange(0, BLOCK_K)
    if INDEX_64:  # an operand holds more than 2**31 elements: offsets in int64
        offs_a_m = offs_a_m.to(tl.int64)
        offs_b_n = offs_b_n.to(tl.int64)
        offs_k = offs_k.to(tl.int64)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_idx in range(0, tl.cdiv(K, BLOCK_K)):
        a_k = offs_k[None, :] + (k_idx * BLOCK_K)
        b_k = offs_k[:, None] + (k_idx * BLOCK_K)
        a_offsets = _hinted_sum(offs_a_m[:, None] * stride_am, a_k * stride_ak, A_HINT_DIM, A_HINT_DIV)
        b_offsets = _hinted_sum(b_k * stride_bk, offs_b_n[None, :] * stride_bn, B_HINT_DIM, B_HINT_DIV)
        a_ptrs = A + a_offsets
        b_ptrs = B + b_offsets
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a_mask = _bounds_mask(offs_k[None, :], K - k_idx * BLOCK_K, 1, K_RUN)
            b_mask = _bounds_mask(offs_k[:, None], K - k_idx * BLOCK_K, 0, K_RUN)
            a = tl.load(a_ptrs, mask=a_mask, other=0.0)
            b = tl.load(b_ptrs, mask=b_mask, other=0.0)
        if USE_FAST_ACCUM:
            acc = tl.dot(a, b, acc, allow_tf32=ALLOW_TF32, out_dtype=tl.float32)
        else:
            acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=tl.float32)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    idx_m = rm[:, None]
    idx_n = rn[None, :]
    if INDEX_64:
        idx_m = idx_m.to(tl.int64)
    _store_tile(
        C,
        Bias,
        acc,
        idx_m,
        idx_n,
        M,
        N,
        stride_cm,
        stride_cn,
        stride_biasm,
        stride_biasn,
        HAS_BIAS,
        C_HINT_DIM,
        C_HINT_DIV,
        N_RUN,
    )


def _bmm_body(
    A,
    B,
    C,
    Bias,
    M,
    N,
    K,
    BATCH,
    stride_aq,
    stride_am,
    stride_ak,
    stride_bq,
    stride_bk,
    stride_bn,
    stride_cq,
    stride_cm,
    stride_cn,
    stride_biasq: tl.constexpr,
    stride_biasm: tl.constexpr,
    stride_biasn: tl.constexpr,
    A_CONTIG: tl.constexpr,
    B_CONTIG: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr,
    ALLOW_TF32: tl.constexpr,
    USE_FAST_ACCUM: tl.constexpr,
    INDEX_64: tl.constexpr,
    A_HINT_DIM: tl.constexpr,
    A_HINT_DIV: tl.constexpr,
    B_HINT_DIM: tl.constexpr,
    B_HINT_DIV: tl.constexpr,
    C_HINT_DIM: tl.constexpr,
    C_HINT_DIV: tl.constexpr,
    K_RUN: tl.constexpr,
    N_RUN: tl.constexpr,
    M_RUN: tl.constexpr,
):
    pid_m, pid_n, ram, rbn = _tile_offsets(
        tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M, A_CONTIG, B_CONTIG, M_RUN, N_RUN
    )
    rk = tl.arange(0, BLOCK_K)
    idx_q = tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)
    idx_q_clamped = tl.minimum(idx_q, BATCH - 1)
    if INDEX_64:  # an operand holds more than 2**31 elements: offsets in int64
        idx_q_clamped = idx_q_clamped.to(tl.int64)
        ram = ram.to(tl.int64)
        rbn = rbn.to(tl.int64)
        rk = rk.to(tl.int64)
    a_offsets = _hinted_sum(
        ram[:, None] * stride_am + rk[None, :] * stride_ak, idx_q_clamped * stride_aq, A_HINT_DIM, A_HINT_DIV
    )
    b_offsets = _hinted_sum(
        rk[:, None] * stride_bk + rbn[None, :] * stride_bn, idx_q_clamped * stride_bq, B_HINT_DIM, B_HINT_DIV
    )
    A = A + a_offsets
    B = B + b_offsets
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(K, 0, -BLOCK_K):
        if EVEN_K:
            a = tl.load(A)
            b = tl.load(B)
        else:
            a_mask = _bounds_mask(rk[None, :], k, 1, K_RUN)
            b_mask = _bounds_mask(rk[:, None], k, 0, K_RUN)
            a = tl.load(A, mask=a_mask, other=0.0)
            b = tl.load(B, mask=b_mask, other=0.0)
        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32)
        A += BLOCK_K * stride_ak
        B += BLOCK_K * stride_bk
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    idx_q = tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)
    idx_m = rm[:, None]
    if INDEX_64:
        idx_q = idx_q.to(tl.int64)
        idx_m = idx_m.to(tl.int64)
    idx_n = rn[None, :]
    mask = (idx_m < M) & _bounds_mask(idx_n, N, 1, N_RUN) & (idx_q < BATCH)
    if HAS_BIAS:
        bias = tl.load(
            Bias + (idx_q * stride_biasq + idx_m * stride_biasm + idx_n * stride_biasn),
            mask,
            eviction_policy="evict_last",
        )
        acc = acc + bias.to(tl.float32)
    c_offsets = _hinted_sum(idx_q * stride_cq + idx_m * stride_cm, idx_n * stride_cn, C_HINT_DIM, C_HINT_DIV)
    tl.store(C + c_offsets, acc.to(C.dtype.element_ty), mask)


def _tma_mm_body(
    A,
    B,
    C,
    Bias,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    stride_biasm: tl.constexpr,
    stride_biasn: tl.constexpr,
    A_ROW_MAJOR: tl.constexpr,
    B_ROW_MAJOR: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
    ALLOW_TF32: tl.constexpr,
    USE_FAST_ACCUM: tl.constexpr,
    INDEX_64: tl.constexpr,
    A_HINT_DIM: tl.constexpr,
    A_HINT_DIV: tl.constexpr,
    B_HINT_DIM: tl.constexpr,
    B_HINT_DIV: tl.constexpr,
    C_HINT_DIM: tl.constexpr,
    C_HINT_DIV: tl.constexpr,
    K_RUN: tl.constexpr,
    N_RUN: tl.constexpr,
    M_RUN: tl.constexpr,
):
    start_pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = grid_m * grid_n
    a_desc = tl.make_tensor_descriptor(
        base=A,
        shape=[M, K] if A_ROW_MAJOR else [K, M],
        strides=[stride_am, 1] if A_ROW_MAJOR else [stride_ak, 1],
        block_shape=[BLOCK_M, BLOCK_K] if A_ROW_MAJOR else [BLOCK_K, BLOCK_M],
    )
    b_desc = tl.make_tensor_descriptor(
        base=B,
        shape=[K, N] if B_ROW_MAJOR else [N, K],
        strides=[stride_bk, 1] if B_ROW_MAJOR else [stride_bn, 1],
        block_shape=[BLOCK_K, BLOCK_N] if B_ROW_MAJOR else [BLOCK_N, BLOCK_K],
    )
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = _grouped_tile(tile_id, grid_m, grid_n, GROUP_M)
        rm = (pid_m * BLOCK_M).to(tl.int32)
        rn = (pid_n * BLOCK_N).to(tl.int32)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for rk in tl.range(0, K, BLOCK_K):  # int32, as K is (TMA offsets are int32)
            a = tl.load_tensor_descriptor(a_desc, [rm, rk] if A_ROW_MAJOR else [rk, rm])
            b = tl.load_tensor_descriptor(b_desc, [rk, rn] if B_ROW_MAJOR else [rn, rk])
            if USE_FAST_ACCUM:
                acc = tl.dot(a if A_ROW_MAJOR else a.T, b if B_ROW_MAJOR else b.T, acc, allow_tf32=ALLOW_TF32)
            else:
                acc += tl.dot(a if A_ROW_MAJOR else a.T, b if B_ROW_MAJOR else b.T, allow_tf32=ALLOW_TF32)
        idx_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M))[:, None]
        idx_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N))[None, :]
        if INDEX_64:
            idx_m = idx_m.to(tl.int64)
        _store_tile(
            C,
            Bias,
            acc,
            idx_m,
            idx_n,
            M,
            N,
            stride_cm,
            stride_cn,
            stride_biasm,
            stride_biasn,
            HAS_BIAS,
            C_HINT_DIM,
            C_HINT_DIV,
            N_RUN,
        )


# Sizes as plain runtime arguments (one binary serves every shape with the same stride classes)...
_mm_kernel = triton.jit(do_not_specialize=["M", "N", "K"])(_mm_body)
_bmm_kernel = triton.jit(do_not_specialize=["M", "N", "K", "BATCH"])(_bmm_body)
# ...or specialised by Triton like any other int (== 1, multiple of 16), closer to Inductor's
# kernels whose sizes are constants.
_mm_kernel_spec = triton.jit(_mm_body)
_bmm_kernel_spec = triton.jit(do_not_specialize=["BATCH"])(_bmm_body)  # the batch only sizes the grid
_tma_mm_kernel = triton.jit(do_not_specialize=["M", "N", "K"])(_tma_mm_body)
_tma_mm_kernel_spec = triton.jit(_tma_mm_body)


def _descriptor_scratch(size: int, alignment: int, stream: Any) -> Any:
    """Global memory for the device-side tensor descriptors of one launch (Triton's allocator hook)."""
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


@functools.cache
def retyped_kernel(
    batched: bool, constant: tuple[str, ...] = (), runtime: tuple[str, ...] = (), specialize_sizes: bool = True
) -> Any:
    """The mm (bmm) kernel with the ints ``constant`` compile-time constants and the constexprs
    ``runtime`` runtime arguments (:func:`kernel_spec.retyped_source`); the other sizes specialised
    as ``specialize_sizes`` says and the batch count never, as the collector's other kernels (and
    kernel_compiler.variant_key) have them. Triton reads a kernel's source through ``inspect``: the
    retyped body is compiled under a name of its own that ``linecache`` holds, beside this module's
    globals (the helper functions it calls); the same names give the same source, hence the same
    binary, in every process."""
    body = _bmm_body if batched else _mm_body
    source = kernel_spec.retyped_source(textwrap.dedent(inspect.getsource(body)), constant, runtime)
    filename = f"<torch_diode {body.__name__} {hashlib.sha256(source.encode()).hexdigest()[:16]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = dict(globals())
    exec(compile(source, filename, "exec"), namespace)
    unspecialized = ((), ("M", "N", "K"))[not specialize_sizes] + (("BATCH",) if batched else ())
    return triton.jit(do_not_specialize=[n for n in unspecialized if n not in constant])(namespace[body.__name__])


def launch_args(a: Any, b: Any, out: Any, bias: Any, config: KernelConfig) -> tuple[Any, tuple, dict]:
    """(kernel, grid, positional args + constexpr kwargs) for ``out = a @ b (+ bias)``."""
    batched, grid, spec = launch_spec(a, b, out, bias, config)
    if config.template_id == kernel_spec.TMA_TEMPLATE_ID:
        return (_tma_mm_kernel_spec if kernel_spec.SPECIALIZE_SIZES else _tma_mm_kernel), grid, spec
    constant = tuple(n for n in kernel_spec.int_names(batched) if n in kernel_spec.CONSTANT_INTS)  # one order
    if constant:
        return retyped_kernel(batched, constant, specialize_sizes=kernel_spec.SPECIALIZE_SIZES), grid, spec
    if batched:
        return (_bmm_kernel_spec if kernel_spec.SPECIALIZE_SIZES else _bmm_kernel), grid, spec
    return (_mm_kernel_spec if kernel_spec.SPECIALIZE_SIZES else _mm_kernel), grid, spec


def make_launcher(a: Any, b: Any, out: Any, bias: Any, config: KernelConfig):
    """A zero-argument callable launching the config's kernel on these tensors."""
    kernel, grid, spec = launch_args(a, b, out, bias, config)
    args, meta = spec["args"], spec["meta"]
    if config.template_id == kernel_spec.TMA_TEMPLATE_ID:
        triton.set_allocator(_descriptor_scratch)  # where a TMA kernel runs, not on import

    def run() -> None:
        kernel[grid](*args, **meta)

    return run


def warmup(a: Any, b: Any, out: Any, bias: Any, config: KernelConfig) -> None:
    """Compiles the config's kernel for these argument types without launching it.

    The tensors may be on the ``meta`` device (shapes and strides only): Triton specialises a
    tensor argument on its dtype and the 16-byte alignment of its data pointer, so each is
    replaced by a one-element CUDA tensor of its dtype (the caching allocator aligns both it and
    the real, freshly allocated operands to far more than 16 bytes)."""
    import torch

    kernel, grid, spec = launch_args(a, b, out, bias, config)
    args = [
        torch.empty(1, dtype=x.dtype, device="cuda") if isinstance(x, torch.Tensor) and x.is_meta else x
        for x in spec["args"]
    ]
    kernel.warmup(*args, grid=grid, **spec["meta"])

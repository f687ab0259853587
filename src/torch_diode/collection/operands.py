"""The operands of a problem, laid out as it says (transposes, batch, bias shape): the one way
both sweeps and the benchmarks build them."""

from __future__ import annotations

from typing import Any

from ..types import Problem


def operands(problem: Problem, device: str, seed: int | None = 0, fill: bool = True) -> tuple[Any, Any, Any]:
    """(a, b, bias or None) of ``problem`` on ``device``: random normal values from a generator
    seeded with ``seed`` on the device (None: torch's global one), or uninitialised without ``fill``
    (always on the meta device). The bias has the problem's bias shape, not yet expanded."""
    import torch

    fill = fill and device != "meta"
    gen = torch.Generator(device=device).manual_seed(seed) if fill and seed is not None else None

    def make(shape: tuple[int, ...], dtype_name: str) -> Any:
        dtype = getattr(torch, dtype_name)
        if fill:
            return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)
        return torch.empty(shape, device=device, dtype=dtype)

    batch = (problem.B,) if problem.batched else ()
    a = make(batch + ((problem.K, problem.M) if problem.transpose_a else (problem.M, problem.K)), problem.dtype_a)
    b = make(batch + ((problem.N, problem.K) if problem.transpose_b else (problem.K, problem.N)), problem.dtype_b)
    a = a.transpose(-1, -2) if problem.transpose_a else a
    b = b.transpose(-1, -2) if problem.transpose_b else b
    bias = None
    if problem.has_bias:
        bias = make(tuple(problem.bias_shape) if problem.bias_shape else (problem.N,), problem.dtype_out)
    return a, b, bias


def layout_tensors(problem: Problem, device: str, fill: bool = True) -> tuple[Any, Any, Any, Any]:
    """(a, b, out, bias expanded to out or None): the operands as a kernel launch takes them."""
    import torch

    a, b, bias = operands(problem, device, None, fill)
    batch = (problem.B,) if problem.batched else ()
    out = torch.empty(batch + (problem.M, problem.N), device=device, dtype=getattr(torch, problem.dtype_out))
    return a, b, out, None if bias is None else bias.expand(out.shape)

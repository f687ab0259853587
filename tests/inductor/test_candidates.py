"""Inductor's GEMM candidates for the choice handler."""

import contextlib

import torch

from torch_diode.inductor.candidates import same_config_lists


@contextlib.contextmanager
def fp32_precision(value: str):
    before = torch.backends.cuda.matmul.fp32_precision
    torch.backends.cuda.matmul.fp32_precision = value
    try:
        yield
    finally:
        torch.backends.cuda.matmul.fp32_precision = before


def test_enumeration_requires_inductors_own_config_lists():
    """Diode enumerates the Triton template's candidates only where Inductor's heuristic for that
    template holds the lists diode reads (CUDA's): XPU's differ, so XPU keeps Inductor's generators."""
    for uid, op in (("triton::mm", "mm"), ("triton::mm", "addmm"), ("triton::bmm", "bmm"), ("triton::bmm", "baddbmm")):
        assert same_config_lists(uid, "cuda", op), (uid, op)
    assert not same_config_lists("triton::mm", "xpu", "mm")
    assert not same_config_lists("no::such_template", "cuda", "mm")


def test_enumeration_takes_symbolic_rows_and_columns_but_not_a_symbolic_k():
    """EVEN_K (K % BLOCK_K == 0) is known only for a static K: symbolic M and N (Inductor scales the
    configs to their hints, which the problem holds; ALLOW_TF32 is read off Inductor's own first
    candidate, see probe) keep the enumeration with TF32 allowed or not, a symbolic K leaves the
    pool to Inductor's generators."""
    import sympy

    from torch_diode.inductor.candidates import enumerable_uid
    from torch_diode.inductor.config_space import template_id
    from torch_diode.types import Problem

    class Inputs:  # what enumerable_uid reads of Inductor's kernel inputs
        def __init__(self, *mnk):
            self.mnk = mnk

        def mnk_symbolic(self):
            return self.mnk

    problem = Problem("mm", 1, 64, 4096, 4096, "bfloat16", "bfloat16", "bfloat16")
    uid = template_id(problem)
    choices = {uid: iter(())}
    s0 = sympy.Symbol("s0", positive=True, integer=True)
    assert enumerable_uid(problem, Inputs(64, 4096, 4096), choices, None) == uid
    assert enumerable_uid(problem, Inputs(s0, 4096, sympy.Integer(4096)), choices, None) == uid
    assert enumerable_uid(problem, Inputs(64, s0, 4096), choices, None) == uid
    assert enumerable_uid(problem, Inputs(64, 4096, s0), choices, None) is None
    assert enumerable_uid(problem, Inputs(64, 4096, 4096), {}, None) is None  # no Triton template offered
    with fp32_precision("tf32"):
        assert enumerable_uid(problem, Inputs(64, 4096, 4096), choices, None) == uid
        assert enumerable_uid(problem, Inputs(s0, 4096, 4096), choices, None) == uid
        assert enumerable_uid(problem, Inputs(s0, 4096, s0), choices, None) is None

"""Inductor's GEMM candidates for the choice handler."""

from torch_diode.inductor.candidates import same_config_lists


def test_enumeration_requires_inductors_own_config_lists():
    """Diode enumerates the Triton template's candidates only where Inductor's heuristic for that
    template holds the lists diode reads (CUDA's): XPU's differ, so XPU keeps Inductor's generators."""
    for uid, op in (("triton::mm", "mm"), ("triton::mm", "addmm"), ("triton::bmm", "bmm"), ("triton::bmm", "baddbmm")):
        assert same_config_lists(uid, "cuda", op), (uid, op)
    assert not same_config_lists("triton::mm", "xpu", "mm")
    assert not same_config_lists("no::such_template", "cuda", "mm")

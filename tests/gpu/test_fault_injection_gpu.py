"""Faults inside diode on the real enumeration path (the GPU's Triton mm template, whose candidates
diode enumerates itself): a broken model (NaN, +inf, -inf, huge predictions, an engine that raises)
or an exception recording the enumerated decision gives Inductor's stock candidates, counted by
reason, and the compiled result equals eager's; with ``enable_fallback=False`` the fault raises.
The CPU version is tests/integration/test_fault_injection.py. Needs a GPU with a shipped model (H100, H200)."""

import broken_models as faults
import pytest
import torch
from gpu_models import shipped_model_for_this_gpu
from torch._inductor import config as inductor_config
from torch._inductor.virtualized import V

from torch_diode import config
from torch_diode.integration.choices import DiodeInductorChoices

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def model():
    return shipped_model_for_this_gpu()


def compile_mm(choices):
    a = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 384, device="cuda", dtype=torch.float16)
    torch._dynamo.reset()
    # a fallback hands Inductor the pool diode ranks: DEFAULT keeps its benchmarking short
    with (
        V.set_choices_handler(choices),
        config.patch(candidate_pool="DEFAULT"),
        inductor_config.patch(max_autotune_gemm=True, force_disable_caches=True),
    ):
        out = torch.compile(torch.mm)(a, b)
    torch.testing.assert_close(out, torch.mm(a, b), atol=2e-2, rtol=2e-2)


def test_a_sound_model_decides_on_the_enumeration_path(model):
    choices = DiodeInductorChoices(model)
    compile_mm(choices)
    stats = choices.get_stats()
    assert stats["enumerated"] == stats["model_selections"] == 1 and stats["fallbacks_total"] == 0, stats


@pytest.mark.parametrize("fault", faults.FAULTS)
def test_a_broken_model_gives_stock_choices(model, fault):
    choices = faults.broken(model, fault)
    compile_mm(choices)
    stats = choices.get_stats()
    assert (
        stats["fallbacks"] == {faults.FAULTS[fault][1]: 1} and stats["enumerated"] == stats["model_selections"] == 0
    ), stats
    with pytest.raises(Exception, match=faults.FAULTS[fault][1]):
        compile_mm(faults.broken(model, fault, enable_fallback=False))


def test_an_error_recording_the_enumerated_decision_gives_stock_choices(model):
    def overflow(*args):
        raise OverflowError("math range error")

    choices = DiodeInductorChoices(model)
    choices.stats.decided = overflow
    compile_mm(choices)
    stats = choices.get_stats()
    assert stats["fallbacks"] == {"error_OverflowError": 1} and stats["model_selections"] == 0, stats

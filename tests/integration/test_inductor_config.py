"""Inductor's diode settings (fast_autotune, diode_*), the "DIODE" backend and hardware families,
through real torch.compile on this CPU (Inductor offers a bmm one ATen candidate, an addmm two)."""

import logging
import subprocess
import sys
import textwrap

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor.virtualized import V

from torch_diode import config
from torch_diode.hardware import gpu_family, hardware_match
from torch_diode.inductor.settings import SETTINGS, add_settings, decision_settings
from torch_diode.integration.choices import DiodeInductorChoices
from torch_diode.integration.install import diode_choices
from torch_diode.model_file import read_model, write_model
from torch_diode.types import Hardware

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _settings():
    add_settings()  # present already where the import added them; idempotent
    with config.patch(min_dtype_problems=0):  # cpu_model learnt from 3 problems
        yield


def compile_op(fn, *inputs, **settings):
    torch._dynamo.reset()
    # every compile lowers the graph again (the handler is asked); compiled kernels stay cached
    with inductor_config.patch(
        {"max_autotune": True, "fx_graph_cache": False, "autotune_local_cache": False, **settings}
    ):
        return torch.compile(fn)(*inputs)


def bmm_inputs():
    return torch.randn(3, 40, 24), torch.randn(3, 24, 56)


def test_the_settings_are_inductor_config_entries_in_its_cache_key():
    for name in SETTINGS:
        assert getattr(inductor_config, name) is None
    with inductor_config.patch(fast_autotune=False):
        assert "fast_autotune" in inductor_config.save_config_portable()  # part of the FX-graph cache key
        assert decision_settings() == {"fast_autotune": False}
    with inductor_config.patch(
        diode_confidence_threshold=0.8, diode_fallback_to_autotune=False, diode_cache_predictions=False
    ):
        assert decision_settings() == {
            "unsure_heldout_slowdown": 1 / 0.8,
            "fallback_to_autotune": False,
            "cache_predictions": False,
            "unsure_top_k": 1,
        }


def test_a_bad_confidence_threshold_is_ignored_with_one_line(caplog):
    with inductor_config.patch(diode_confidence_threshold=1.5), caplog.at_level(logging.WARNING):
        assert decision_settings() == {}
    assert "diode_confidence_threshold: expected a number in (0, 1], got 1.5" in caplog.text


def test_diode_backend_offers_aten_and_diode_decides(cpu_model):
    a, b = bmm_inputs()
    with diode_choices(cpu_model) as choices:
        out = compile_op(torch.bmm, a, b, max_autotune_gemm_backends="DIODE", fast_autotune=True)
    torch.testing.assert_close(out, torch.bmm(a, b))
    stats = choices.get_stats()
    assert stats["model_selections"] == 1 and stats["fallbacks_total"] == 0


def test_diode_backend_without_a_model_is_aten_triton():
    a, b = bmm_inputs()
    torch.testing.assert_close(compile_op(torch.bmm, a, b, max_autotune_gemm_backends="DIODE"), torch.bmm(a, b))


def test_fast_autotune_off_hands_inductor_its_stock_choices(cpu_model):
    a, b = bmm_inputs()
    with diode_choices(cpu_model) as choices:
        compile_op(torch.bmm, a, b, fast_autotune=False)
        assert choices.get_stats()["fast_autotune_off"] == 1 and choices.get_stats()["total_calls"] == 0
        compile_op(torch.bmm, a, b, fast_autotune=True)
        assert choices.get_stats()["model_selections"] == 1


def test_cache_predictions_setting(cpu_model):
    a, b = bmm_inputs()
    with diode_choices(cpu_model) as choices:
        for _ in range(2):
            compile_op(torch.bmm, a, b, diode_cache_predictions=False)
        assert choices.get_stats()["cache_hits"] == 0 and choices.get_stats()["model_selections"] == 2
        compile_op(torch.bmm, a, b)  # decided and remembered
        compile_op(torch.bmm, a, b)
        assert choices.get_stats()["cache_hits"] == 1


def test_confidence_threshold_sets_the_held_out_rule(cpu_model, tmp_path):
    """The held-out rule judges problems whose rows are not 16-byte aligned (the kind the training
    run's held-out first picks are recorded for): 1.03x the best is within 1/0.95, not 1/0.99."""
    model = read_model(cpu_model)
    model.metadata["training_data"]["heldout_top1_slowdown"] = {"misaligned": {"geomean": 1.03, "problems": 20}}
    model.metadata["training_data"]["misaligned_problems"] = 20
    path = write_model(tmp_path / "heldout.diode", model)
    a, b = torch.randn(2, 32, 47), torch.randn(2, 47, 64)  # A's rows: 47 fp32 = 188 bytes, not 16-byte aligned
    with diode_choices(path) as choices:
        compile_op(torch.bmm, a, b, diode_confidence_threshold=0.95)  # 1.03 <= 1/0.95: sure
        assert choices.get_stats()["unsure_misaligned"] == 0 and choices.get_stats()["model_selections"] == 1
        compile_op(torch.bmm, a, b, diode_confidence_threshold=0.99)  # 1.03 > 1/0.99: unsure
        assert choices.get_stats()["unsure_misaligned"] == 1


class Recording(DiodeInductorChoices):
    """Records how many candidates each decision hands Inductor."""

    def _finalize_template_configs(self, *args, **kwargs):
        out = super()._finalize_template_configs(*args, **kwargs)
        self.returned = getattr(self, "returned", []) + [len(out)]
        return out


def test_fallback_to_autotune_off_still_compiles_where_diode_does_not_decide(cpu_model, tmp_path):
    """A CPU offers one candidate per call: the ATen-alone list itself is checked on the GPU
    (tests/gpu/test_guide_examples_gpu.py), where Triton candidates come with it."""
    other = read_model(cpu_model)
    other.metadata["hardware"]["device_name"] = "NVIDIA H100 80GB HBM3"  # no model for this CPU: fallback
    path = write_model(tmp_path / "h100.diode", other)
    x, w, bias = torch.randn(16, 32), torch.randn(32, 8), torch.randn(8)
    recording = Recording(path)
    with V.set_choices_handler(recording):
        out = compile_op(torch.addmm, bias, x, w, diode_fallback_to_autotune=False)
    torch.testing.assert_close(out, torch.addmm(bias, x, w))
    assert recording.get_stats()["fallbacks"] == {"no_model_for_hardware": 1} and max(recording.returned) == 1


def test_disable_takes_the_settings_and_the_backend_out():
    code = """
    import torch, torch_diode
    from torch._inductor import config
    config.max_autotune_gemm_backends = "DIODE"
    f = lambda a, b: torch.bmm(a, b)
    a, b = torch.randn(2, 8, 8), torch.randn(2, 8, 8)
    with config.patch(max_autotune=True, fx_graph_cache=False):
        torch.compile(f)(a, b)
        torch_diode.disable()
        print(hasattr(config, "fast_autotune"))
        torch._dynamo.reset()
        try:
            torch.compile(f)(a, b)
        except Exception as e:  # stock Inductor: "DIODE" is no backend it knows
            print("NoValidChoicesError" in str(e))
    """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "True"]


def test_gpu_families():
    assert {gpu_family(n) for n in ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H100")} == {
        "H100"
    }
    assert gpu_family("NVIDIA A100-SXM4-80GB") == "A100" and gpu_family("AMD Instinct MI300X") == "MI300X"
    assert gpu_family("NVIDIA H200") == "H200" and gpu_family("CPU x86_64") is None
    sxm = {"device_name": "NVIDIA H100 80GB HBM3", "compute_capability": [9, 0]}
    gpu = lambda name, cc=(9, 0): Hardware(name, cc, 114, 80 << 30, 232448, "2.11")
    assert hardware_match(sxm, gpu("NVIDIA H100 80GB HBM3")) == "exact"
    assert hardware_match(sxm, gpu("NVIDIA H100 PCIe")) == "family"
    assert hardware_match(sxm, gpu("NVIDIA H100 NVL")) == "family"
    assert hardware_match(sxm, gpu("NVIDIA H200")) is None  # another family
    assert hardware_match(sxm, gpu("NVIDIA H100 PCIe", (8, 0))) is None  # another architecture


def test_registry_gives_another_sku_the_nearest_model_of_its_family(cpu_model, tmp_path, caplog):
    from torch_diode import registry

    names = []
    for name, device, sms in (
        ("sxm", "NVIDIA H100 80GB HBM3", 132),
        ("nvl", "NVIDIA H100 NVL", 132),
        ("a100", "NVIDIA A100-SXM4-80GB", 108),
    ):
        m = read_model(cpu_model)
        m.metadata["hardware"].update(
            device_name=device,
            compute_capability=[9, 0] if "H100" in device else [8, 0],
            sm_count=sms,
            memory_bytes=(80 if name == "sxm" else 94) << 30,
        )
        registry.register_model_path(f"test-{name}", write_model(tmp_path / f"{name}.diode", m))
        names.append(f"test-{name}")
    try:
        pcie = Hardware("NVIDIA H100 PCIe", (9, 0), 114, 80 << 30, 232448, "2.11")
        with caplog.at_level(logging.WARNING, logger="torch_diode.registry"):
            assert registry.model_for_hardware(pcie)[::2] == ("test-sxm", "family")  # same memory as the SXM
            assert registry.model_for_hardware(pcie)[0] == "test-sxm"
        assert caplog.text.count("no model for NVIDIA H100 PCIe; using test-sxm") == 1  # once
        nvl = Hardware("NVIDIA H100 NVL", (9, 0), 132, 94 << 30, 232448, "2.11")
        assert registry.model_for_hardware(nvl)[::2] == ("test-nvl", "exact")
        h200 = Hardware("NVIDIA H200", (9, 0), 132, 141 << 30, 232448, "2.11")
        assert registry.model_for_hardware(h200)[::2] == ("NVIDIA-H200-matmul", "exact")  # shipped, its own
        h200_nvl = Hardware("NVIDIA H200 NVL", (9, 0), 132, 141 << 30, 232448, "2.11")
        assert registry.model_for_hardware(h200_nvl)[::2] == ("NVIDIA-H200-matmul", "family")
        assert registry.model_for_hardware(Hardware("NVIDIA B200", (10, 0), 148, 180 << 30, 232448, "2.11")) is None
    finally:
        for name in names:
            registry._registered.pop(name)


def test_a_family_model_decides_every_gemm_unsure(cpu_model, tmp_path):
    """The handler on an H100 PCIe (hardware described, the compile real) with a model of the H100
    SXM: it decides, every decision unsure."""
    m = read_model(cpu_model)
    m.metadata["hardware"].update(device_name="NVIDIA H100 80GB HBM3", compute_capability=[9, 0])
    path = write_model(tmp_path / "sxm.diode", m)
    pcie = Hardware("NVIDIA H100 PCIe", (9, 0), 114, 80 << 30, 232448, torch.__version__)

    class OnPCIe(DiodeInductorChoices):
        def _hardware_for(self, kernel_inputs):
            return pcie

    choices = OnPCIe(path)
    a, b = bmm_inputs()
    with V.set_choices_handler(choices):
        torch.testing.assert_close(compile_op(torch.bmm, a, b), torch.bmm(a, b))
    stats = choices.get_stats()
    assert stats["model_selections"] == 1 and stats["unsure_hardware_family"] == 1 and stats["unsure_widened"] == 1

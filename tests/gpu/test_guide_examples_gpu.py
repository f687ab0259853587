"""The torch.compile integration guide's examples on the GPU, as written (each in a fresh process:
their imports register the shipped model). On an H100 diode must decide every GEMM: the handler's
statistics are printed by each script and checked here. On another GPU they must compile with
stock behaviour."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.gpu
_spec = importlib.util.spec_from_file_location(
    "guide_examples", Path(__file__).resolve().parents[1] / "guide_examples.py"
)
guide = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(guide)

STATS = """
import json, torch_diode
from torch_diode.integration.install import installed_choices
_c = installed_choices()
print("STATS " + json.dumps(_c.get_stats() if _c is not None else None, default=str))
"""


def run(code: str) -> dict | None:
    env = {**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}
    env.pop("TORCH_DIODE_NO_AUTOREGISTER", None)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code) + STATS], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("STATS "))
    return json.loads(line[len("STATS ") :])


def h100() -> bool:
    return "H100" in torch.cuda.get_device_name()


def assert_diode_decided_every_gemm(stats: dict | None, gemms: int) -> None:
    if not h100():  # no shipped model for this GPU: stock behaviour (the compile above succeeded)
        return
    assert stats is not None, "the import registered no model on an H100"
    assert stats["fallbacks_total"] == 0, stats["fallbacks"]
    # every call with candidates is decided (Inductor may also call the hook with none: addmm's
    # 1-D-bias ATen variant, for instance, which counts under no_candidates)
    assert stats["model_selections"] >= gemms, stats
    assert stats["total_calls"] == stats["model_selections"] + stats["no_candidates"], stats


def test_complete_example_diode_decides_its_gemm():
    stats = run(guide.COMPLETE_EXAMPLE + "torch.testing.assert_close(result, a @ b, rtol=2e-2, atol=2e-2)\n")
    assert_diode_decided_every_gemm(stats, 1)
    if h100():
        assert stats["unsure_widened"] == 0  # an aligned fp16 GEMM in the training range: one pick


def test_configuration_options_example():
    stats = run(
        "import torch\nimport torch_diode_models\n"
        + guide.CONFIGURATION_OPTIONS
        + textwrap.dedent("""
    x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    f = torch.compile(lambda x, w: torch.relu(x @ w) @ w, mode="max-autotune")
    torch.testing.assert_close(f(x, w), torch.relu(x @ w) @ w, rtol=5e-2, atol=5e-1)
    """)
    )
    assert_diode_decided_every_gemm(stats, 1)
    if h100():
        assert stats["cache_hits"] >= 1  # the second GEMM has the first's problem


def test_training_workflow_diode_decides_forward_and_backward_gemms():
    setup = textwrap.dedent("""
    import torch
    dataloader = [torch.randn(256, 1024, device="cuda") for _ in range(3)]
    targets = torch.randn(256, 1024, device="cuda")
    criterion = torch.nn.MSELoss()
    """)
    stats = run(setup + guide.TRAINING_WORKFLOW + "assert torch.isfinite(loss)\n")
    assert_diode_decided_every_gemm(stats, 4)  # 2 forward addmm, backward mm for the inputs' and weights' grads


def test_inference_workflow_with_cudagraphs():
    setup = textwrap.dedent("""
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda().half()
    input_tensor = torch.randn(512, 1024, device="cuda", dtype=torch.half)
    """)
    stats = run(
        setup
        + guide.INFERENCE_WORKFLOW
        + "torch.testing.assert_close(output, model(input_tensor), rtol=2e-2, atol=2e-2)\n"
    )
    assert_diode_decided_every_gemm(stats, 2)


def test_troubleshooting_compilation_errors_settings_hand_inductor_its_own_choices():
    stats = run(
        "import torch\nimport torch_diode_models\n"
        + guide.COMPILATION_ERRORS
        + textwrap.dedent("""
    a = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 256, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(torch.compile(torch.mm, mode="max-autotune")(a, b), a @ b, rtol=2e-2, atol=2e-2)
    """)
    )
    if h100():
        assert stats["model_selections"] == 0 and stats["fast_autotune_off"] >= 1


def test_debugging_and_profiling_example():
    setup = textwrap.dedent("""
    import torch
    my_function = lambda x: torch.mm(x, x)
    input_tensor = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    """)
    stats = run(
        setup
        + guide.DEBUGGING
        + textwrap.dedent("""
    if "H100" in torch.cuda.get_device_name():
        assert stats["total_predictions"] == 1 and stats["fallbacks"] == 0, stats
    """)
    )
    assert_diode_decided_every_gemm(stats, 1)


def test_fallback_to_autotune_off_gives_the_aten_choice_alone(tmp_path):
    """A model of other hardware: every GEMM falls back; with diode_fallback_to_autotune False
    Inductor gets the ATen choice alone (default mode's kernel), else every stock candidate."""
    from torch._inductor import config as inductor_config
    from torch._inductor.virtualized import V

    from torch_diode.inductor.settings import add_settings
    from torch_diode.integration.choices import DiodeInductorChoices
    from torch_diode.model_file import read_model, write_model

    add_settings()
    from torch_diode.registry import resolve_model

    other = read_model(resolve_model("NVIDIA-H100-matmul"))
    other.metadata["hardware"].update(device_name="NVIDIA A100-SXM4-80GB", compute_capability=[8, 0])
    path = write_model(tmp_path / "a100.diode", other)

    class Recording(DiodeInductorChoices):
        def _finalize_template_configs(self, *args, **kwargs):
            out = super()._finalize_template_configs(*args, **kwargs)
            self.returned = getattr(self, "returned", []) + [len(out)]
            return out

    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    for fallback in (True, False):
        recording = Recording(path)
        torch._dynamo.reset()
        with (
            V.set_choices_handler(recording),
            inductor_config.patch(max_autotune=True, force_disable_caches=True, diode_fallback_to_autotune=fallback),
        ):
            torch.testing.assert_close(torch.compile(torch.mm)(a, a), a @ a, rtol=2e-2, atol=2e-2)
        assert recording.get_stats()["fallbacks"] == {"no_model_for_hardware": 1}
        assert (max(recording.returned) == 1) is (not fallback), (fallback, recording.returned)


def test_model_path_none_detects_the_model_for_this_gpu():
    from torch_diode.hardware import detect_hardware
    from torch_diode.integration.inductor_integration import create_diode_choices
    from torch_diode.registry import model_for_hardware

    choices = create_diode_choices(model_path=None, device="cuda")
    found = model_for_hardware(detect_hardware("cuda"))
    assert (choices.model_path is None) is (found is None)
    if h100():
        assert choices.model_path.endswith("NVIDIA-H100-matmul.diode") and choices.engine is not None

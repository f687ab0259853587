"""The torch.compile integration guide's examples on the GPU, as written (each in a fresh process:
their imports register the shipped model). On an H100 diode must decide every GEMM: the handler's
statistics are printed by each script and checked here. On another GPU they must compile with
stock behaviour."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

pytestmark = pytest.mark.gpu

STATS = """
import json, torch_diode
from torch_diode.integration.install import installed_choices
_c = installed_choices()
print("STATS " + json.dumps(_c.get_stats() if _c is not None else None, default=str))
"""


def run(code: str) -> dict | None:
    env = {**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}
    env.pop("TORCH_DIODE_NO_AUTOREGISTER", None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code) + STATS], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("STATS "))
    return json.loads(line[len("STATS "):])


def h100() -> bool:
    return "H100" in torch.cuda.get_device_name()


def assert_diode_decided_every_gemm(stats: dict | None, gemms: int) -> None:
    if not h100():  # no shipped model for this GPU: stock behaviour (the compile above succeeded)
        return
    assert stats is not None, "the import registered no model on an H100"
    assert stats["fallbacks_total"] == 0, stats["fallbacks"]
    assert stats["model_selections"] >= gemms and stats["model_selections"] == stats["total_calls"], stats


def test_complete_example_diode_decides_its_gemm():
    stats = run("""
    import torch
    import torch_diode_models  # Auto-registers the best model for your hardware
    from torch._inductor import config

    # Configure PyTorch to use Diode acceleration
    config.max_autotune_gemm_backends = "DIODE"
    config.fast_autotune = True

    # Your existing PyTorch code - no changes needed!
    def matmul_function(a, b):
        return torch.mm(a, b)

    # Compile with torch.compile - now accelerated by Diode
    compiled_fn = torch.compile(matmul_function, mode="max-autotune")

    # Use as normal
    a = torch.randn(1024, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 4096, device="cuda", dtype=torch.float16)

    result = compiled_fn(a, b)  # Fast compilation + optimal performance
    torch.testing.assert_close(result, a @ b, rtol=2e-2, atol=2e-2)
    """)
    assert_diode_decided_every_gemm(stats, 1)
    if h100():
        assert stats["unsure_widened"] == 0  # an aligned fp16 GEMM in the training range: one pick


def test_configuration_options_example():
    stats = run("""
    import torch
    import torch_diode_models
    from torch._inductor import config

    # Basic Diode configuration
    config.max_autotune_gemm_backends = "DIODE"
    config.fast_autotune = True

    # Advanced options
    config.diode_fallback_to_autotune = True   # Fallback for unsupported cases
    config.diode_confidence_threshold = 0.95   # Minimum prediction confidence
    config.diode_cache_predictions = True      # Cache predictions for repeated sizes

    x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    f = torch.compile(lambda x, w: torch.relu(x @ w) @ w, mode="max-autotune")
    torch.testing.assert_close(f(x, w), torch.relu(x @ w) @ w, rtol=5e-2, atol=5e-1)
    """)
    assert_diode_decided_every_gemm(stats, 1)
    if h100():
        assert stats["cache_hits"] >= 1  # the second GEMM has the first's problem


def test_training_workflow_diode_decides_forward_and_backward_gemms():
    stats = run("""
    import torch
    import torch.nn as nn
    import torch_diode_models
    from torch._inductor import config

    # Enable Diode acceleration
    config.max_autotune_gemm_backends = "DIODE"
    config.fast_autotune = True

    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = nn.Linear(1024, 2048)
            self.linear2 = nn.Linear(2048, 1024)

        def forward(self, x):
            x = self.linear1(x)
            x = torch.relu(x)
            return self.linear2(x)

    model = MyModel().cuda()
    dataloader = [torch.randn(256, 1024, device="cuda") for _ in range(3)]
    targets = torch.randn(256, 1024, device="cuda")
    criterion = nn.MSELoss()

    # Compile with Diode acceleration
    compiled_model = torch.compile(model, mode="max-autotune")

    # Training loop - faster compilation on first run
    optimizer = torch.optim.Adam(model.parameters())
    for batch in dataloader:
        optimizer.zero_grad()
        output = compiled_model(batch)  # Fast compilation + optimal performance
        loss = criterion(output, targets)
        loss.backward()
        optimizer.step()
    assert torch.isfinite(loss)
    """)
    assert_diode_decided_every_gemm(stats, 4)  # 2 forward addmm, backward mm for the inputs' and weights' grads


def test_inference_workflow_with_cudagraphs():
    # torch.compile refuses a ScriptModule (the guide's torch.jit.load) in torch 2.10 and later: the eager module
    stats = run("""
    import torch
    import torch_diode_models
    from torch._inductor import config

    # Configure for inference
    config.max_autotune_gemm_backends = "DIODE"
    config.fast_autotune = True
    config.triton.cudagraphs = True  # Enable CUDA graphs for even better performance

    # Load your model
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda().half()
    input_tensor = torch.randn(512, 1024, device="cuda", dtype=torch.half)

    # Compile with minimal warmup time
    compiled_model = torch.compile(model, mode="max-autotune")

    # First inference compiles quickly thanks to Diode
    with torch.no_grad():
        output = compiled_model(input_tensor)
        torch.testing.assert_close(output, model(input_tensor), rtol=2e-2, atol=2e-2)
    """)
    assert_diode_decided_every_gemm(stats, 2)


def test_troubleshooting_compilation_errors_settings_hand_inductor_its_own_choices():
    stats = run("""
    import torch
    import torch_diode_models
    # Disable Diode temporarily
    from torch._inductor import config
    config.max_autotune_gemm_backends = "TRITON"
    config.fast_autotune = False
    a = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 256, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(torch.compile(torch.mm, mode="max-autotune")(a, b), a @ b, rtol=2e-2, atol=2e-2)
    """)
    if h100():
        assert stats["model_selections"] == 0 and stats["fast_autotune_off"] >= 1


def test_debugging_and_profiling_example():
    stats = run("""
    import torch
    import torch_diode_models

    my_function = lambda a, b: torch.mm(a, b)
    input_tensor = (torch.randn(1024, 1024, device="cuda", dtype=torch.float16),) * 2
    # Enable detailed logging
    torch_diode_models.set_log_level("DEBUG")

    # Profile model predictions
    with torch_diode_models.profile_predictions():
        compiled_fn = torch.compile(my_function, mode="max-autotune")
        result = compiled_fn(*input_tensor)

    # View prediction statistics
    stats = torch_diode_models.get_prediction_stats()
    print(f"Predictions made: {stats['total_predictions']}")
    print(f"Average confidence: {stats['avg_confidence']:.3f}")
    print(f"Fallbacks to autotune: {stats['fallbacks']}")
    if "H100" in torch.cuda.get_device_name():
        assert stats["total_predictions"] == 1 and stats["fallbacks"] == 0, stats
    """)
    assert_diode_decided_every_gemm(stats, 1)


def test_fallback_to_autotune_off_gives_the_aten_choice_alone(tmp_path):
    """A model of other hardware: every GEMM falls back; with diode_fallback_to_autotune False
    Inductor gets the ATen choice alone (default mode's kernel), else every stock candidate."""
    from torch._inductor import config as inductor_config
    from torch._inductor.virtualized import V

    from torch_diode.integration.choices import DiodeInductorChoices
    from torch_diode.model_file import read_model, write_model
    from torch_diode.integration.inductor_config import add_settings

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
        with V.set_choices_handler(recording), inductor_config.patch(max_autotune=True, force_disable_caches=True,
                                                                     diode_fallback_to_autotune=fallback):
            torch.testing.assert_close(torch.compile(torch.mm)(a, a), a @ a, rtol=2e-2, atol=2e-2)
        assert recording.get_stats()["fallbacks"] == {"no_model_for_hardware": 1}
        assert (max(recording.returned) == 1) is (not fallback), (fallback, recording.returned)

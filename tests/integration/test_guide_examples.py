"""The examples of the torch-diode documents users have (the torch.compile integration guide, the
inductor-integration README, the package README), run as written through real torch.compile on
this CPU, each in a fresh process (their imports have side effects). On a CPU there is no model
for the hardware: each must compile with stock behaviour (no AttributeError, no
NoValidChoicesError) and give eager's result. Where an example names a GPU, the code runs with
``device="cpu"`` and float32 (the only change); the GPU runs are tests/gpu/test_guide_examples_gpu.py.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
_spec = importlib.util.spec_from_file_location(
    "guide_examples", Path(__file__).resolve().parents[1] / "guide_examples.py"
)
guide = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(guide)


def run(code: str, env: dict | None = None) -> str:
    """Runs ``code`` in a new interpreter on the CPU; its stdout (stderr on failure, in the message)."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", **guide.FRESH_GRAPHS_ENV, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def test_complete_example_compiles_with_stock_behaviour_without_a_model():
    out = run(
        guide.on_cpu(guide.COMPLETE_EXAMPLE)
        + textwrap.dedent("""
    torch.testing.assert_close(result, a @ b, rtol=1e-4, atol=1e-3)
    print(torch_diode_models.registered_model, config.max_autotune_gemm_backends, config.fast_autotune)
    """)
    )
    assert out.split() == ["None", "DIODE", "True"]


def test_quick_start_steps_import_torch_diode_models_then_configure():
    out = run("""
    import torch_diode_models
    import torch
    from torch._inductor import config

    # Enable fast autotuning with Diode models
    config.max_autotune_gemm_backends = "DIODE"
    config.fast_autotune = True
    print(config.fast_autotune)
    """)
    assert out.split() == ["True"]


def test_configuration_options_exist_and_set_torch_diode_config():
    out = run(
        "import torch_diode_models\n"
        + guide.CONFIGURATION_OPTIONS
        + textwrap.dedent("""
    from torch_diode.inductor.settings import decision_settings
    s = decision_settings()
    print(s["fast_autotune"], s["fallback_to_autotune"], round(s["unsure_heldout_slowdown"], 4), s["cache_predictions"])
    import torch
    f = torch.compile(lambda a, b: torch.addmm(a, a, b), mode="max-autotune")
    x = torch.randn(16, 16)
    torch.testing.assert_close(f(x, x), torch.addmm(x, x, x))
    """)
    )
    assert out.split() == ["True", "True", str(round(1 / 0.95, 4)), "True"]


def test_training_workflow_compiles_and_trains():
    setup = textwrap.dedent("""
    import torch
    dataloader = [torch.randn(32, 1024) for _ in range(2)]
    targets = torch.randn(32, 1024)
    criterion = torch.nn.MSELoss()
    """)
    out = run(setup + guide.on_cpu(guide.TRAINING_WORKFLOW) + "print(bool(torch.isfinite(loss)))\n")
    assert out.split() == ["True"]


def test_inference_workflow_with_cudagraphs_setting():
    setup = textwrap.dedent("""
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 16))
    input_tensor = torch.randn(8, 64)
    """)
    out = run(
        setup + guide.INFERENCE_WORKFLOW + "torch.testing.assert_close(output, model(input_tensor)); print('ok')\n"
    )
    assert out.split() == ["ok"]


def test_hardware_detection_and_model_list():
    out = run("""
    import torch_diode_models

    # Check detected hardware
    print(f"Detected hardware: {torch_diode_models.get_detected_hardware()}")

    # List available models
    available_models = torch_diode_models.list_available_models()
    print(f"Available models: {available_models}")
    """)
    assert "Detected hardware: Hardware(device_name='CPU" in out and "NVIDIA-H100-matmul" in out


def test_manual_model_selection_on_other_hardware_falls_back():
    out = run("""
    import torch
    import torch_diode_models

    # Use a specific model (e.g., for benchmarking different configurations)
    choices = torch_diode_models.register_model("NVIDIA-H100-matmul")
    from torch._inductor import config
    config.max_autotune_gemm_backends = "DIODE"
    config.fast_autotune = True
    f = torch.compile(lambda a, b: torch.addmm(a, a, b), mode="max-autotune")
    x = torch.randn(32, 32)
    torch.testing.assert_close(f(x, x), torch.addmm(x, x, x))
    s = choices.get_stats()
    print(s["model_selections"], s["fallbacks"])
    """)
    assert out.split("\n")[0] == "0 {'no_model_for_hardware': 1}"


def test_troubleshooting_model_not_found_falls_back_with_a_warning():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
    import logging
    logging.basicConfig()
    import torch
    import torch_diode_models

    # Check available models
    print(torch_diode_models.list_available_models())

    # Use a similar hardware model as fallback
    choices = torch_diode_models.register_model("NVIDIA-A100-matmul")  # Similar to H100
    f = torch.compile(lambda a, b: torch.addmm(a, a, b), mode="max-autotune")
    x = torch.randn(32, 32)
    torch.testing.assert_close(f(x, x), torch.addmm(x, x, x))
    print(choices.get_stats()["fallbacks"])
    """),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "", **guide.FRESH_GRAPHS_ENV},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "{'model_load_error': 1}" in proc.stdout
    assert "NVIDIA-A100-matmul cannot be loaded" in proc.stderr  # logged at WARNING


def test_troubleshooting_performance_regression_settings():
    out = run("""
    import torch_diode_models
    # Enable fallback to traditional autotuning
    from torch._inductor import config
    config.diode_fallback_to_autotune = True

    # Increase confidence threshold
    config.diode_confidence_threshold = 0.99
    from torch_diode.inductor.settings import decision_settings
    print(round(decision_settings()["unsure_heldout_slowdown"], 4))
    """)
    assert out.split() == [str(round(1 / 0.99, 4))]


def test_troubleshooting_disable_diode_settings_exist():
    # "TRITON" alone offers nothing on a CPU (stock Inductor's NoValidChoicesError): the settings
    # are checked here, their compile on the GPU (tests/gpu).
    out = run(
        "import torch_diode_models\n"
        + guide.COMPILATION_ERRORS
        + textwrap.dedent("""
    from torch_diode.inductor.settings import decision_settings
    print(decision_settings()["fast_autotune"])
    """)
    )
    assert out.split() == ["False"]


def test_debugging_and_profiling():
    setup = textwrap.dedent("""
    import torch
    my_function = lambda x: torch.mm(x, x)
    input_tensor = torch.randn(16, 16)
    """)
    out = run(setup + guide.DEBUGGING)
    assert "Predictions made: 0" in out and "Fallbacks to autotune: 0" in out


def test_integration_readme_basic_setup_with_an_unloadable_model_file(tmp_path):
    bad = tmp_path / "model.pt"
    bad.write_bytes(b"\x80\x02 not a diode model")
    out = run(f"""
    import torch
    from torch_diode.integration.inductor_integration import install_diode_choices

    # Install Diode choices globally
    choices = install_diode_choices(
        model_path={str(bad)!r},
        device="cuda",
        top_k_configs=3,
        performance_threshold=1.1
    )

    # Now all torch.compile operations will use the Diode model
    @torch.compile(mode="max-autotune")
    def my_matmul(a, b):
        return torch.mm(a, b)

    a, b = torch.randn(32, 16), torch.randn(16, 8)
    torch.testing.assert_close(my_matmul(a, b), a @ b)
    stats = choices.get_stats()
    print(stats["model_load_error"] is not None, stats["fallbacks"], stats["fallback_model_load_error"])
    """)
    assert out.split("\n")[0] == "True {'model_load_error': 1} 1"


def test_integration_readme_unloadable_model_raises_without_fallback(tmp_path):
    bad = tmp_path / "model.pt"
    bad.write_bytes(b"not a model")
    from torch_diode.integration.inductor_integration import create_diode_choices

    with pytest.raises(ValueError, match="model.pt"):
        create_diode_choices(model_path=str(bad), enable_fallback=False)


def test_integration_readme_manual_usage():
    # Inductor has no V.get_choices_handler() (torch 2.10-2.13): V.set_choices_handler returns a
    # context manager that restores the handler before it, used here for the README's save/restore.
    out = run("""
    import torch
    from torch_diode.integration.inductor_integration import create_diode_choices
    from torch._inductor.virtualized import V

    # Create a DiodeInductorChoices instance
    choices = create_diode_choices(
        model_path=None,
        device="cuda",
        top_k_configs=5
    )

    # Temporarily install it
    with V.set_choices_handler(choices):
        # Use torch.compile operations...
        from torch._inductor import config
        with config.patch(max_autotune=True):  # the FX-graph cache is off (FRESH_GRAPHS_ENV)
            f = torch.compile(lambda x, y: torch.addmm(x, x, y))
            x = torch.randn(8, 8)
            torch.testing.assert_close(f(x, x), torch.addmm(x, x, x))
    # Restored: the original handler
    stats = choices.get_stats()
    print(
        choices.model_path,
        stats["total_calls"] > 0,
        stats["model_selections"],
        stats["fallback_no_model"],
        stats["configs_filtered"],
    )
    """)
    assert out.split() == ["None", "True", "0", "1", "0"]


def test_integration_readme_statistics():
    from torch_diode.integration.inductor_integration import DiodeInductorChoices

    stats = DiodeInductorChoices(None).get_stats()
    for key in ("total_calls", "model_selections", "configs_filtered"):
        assert stats[key] == 0


def test_package_readme_import_torch_diode_adds_the_settings_without_importing_torch():
    out = run("""
    import sys
    import torch_diode
    print("torch" in sys.modules)
    from torch._inductor import config
    print(config.fast_autotune, config.diode_confidence_threshold)
    print(torch_diode.disable(), hasattr(config, "fast_autotune"))
    """)
    assert out.split() == ["False", "None", "None", "0", "False"]


def test_library_only_mode_adds_nothing():
    out = run(
        """
    import torch
    import torch_diode
    from torch._inductor import config
    print(hasattr(config, "fast_autotune"))
    torch_diode.enable_inductor_settings()
    print(hasattr(config, "fast_autotune"))
    """,
        env={"TORCH_DIODE_NO_AUTOREGISTER": "1"},
    )
    assert out.split() == ["False", "True"]

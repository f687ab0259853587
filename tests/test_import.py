"""Importing torch_diode has no side effects: no CUDA initialisation, no Inductor changes."""

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    ).stdout


def test_import_does_not_initialise_cuda_or_touch_inductor():
    out = run(
        """
        import torch
        def forbidden(*a, **k):
            raise SystemExit("CUDA was initialised on import")
        torch.cuda._lazy_init = forbidden
        torch.cuda.init = forbidden
        import torch._inductor.config as c
        from torch._inductor import select_algorithm as sa
        before = dict(c.get_config_copy())
        import torch_diode, torch_diode.features, torch_diode.cli, torch_diode.collection.inductor_sweep
        after = dict(c.get_config_copy())
        # diode changed no config value (it adds its own settings, all None) nor created the
        # algorithm selector (savers)
        added = set(after) - set(before)
        unchanged = {k: after[k] for k in before} == before and all(after[k] is None for k in added)
        expected = {"fast_autotune", "diode_fallback_to_autotune", "diode_confidence_threshold",
                    "diode_cache_predictions"}
        print(unchanged and added == expected and sa._ALGORITHM_SELECTOR_CACHE is None, torch.cuda.is_initialized())
        """
    )
    assert out.split() == ["True", "False"]


def test_import_does_not_load_heavy_modules():
    out = run(
        """
        import sys
        import torch_diode
        print(sorted(m for m in ("torch", "matplotlib", "torch._inductor") if m in sys.modules))
        """
    )
    assert out.strip() == "[]"


def test_import_leaves_the_offline_tools_out():
    """The runtime imports no offline tooling: ``import torch_diode`` loads neither the collection,
    training and evaluation code nor the command line; ``torch_diode.Collector`` imports the
    collection on first use."""
    out = run(
        """
        import sys
        import torch_diode
        offline = ("torch_diode.collection", "torch_diode.training", "torch_diode.evaluation", "torch_diode.cli")
        print(sorted(m for m in sys.modules if m.startswith(offline)))
        print(torch_diode.Collector is torch_diode.collection.recorder.Collector)
        """
    )
    assert out.split("\n")[:2] == ["[]", "True"]


def test_version_is_pyprojects():
    import re
    from pathlib import Path

    import torch_diode

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    [version] = re.findall(r'^version = "(.+)"$', pyproject, re.M)  # [project]'s (tomllib is Python 3.11+)
    assert torch_diode.__version__ == version

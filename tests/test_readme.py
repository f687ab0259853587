"""The README's examples run as written on a CPU: its Python example for torch.compile (where no
model matches the machine, every GEMM falls back and is counted) and its dataset, training and
validation commands (their /tmp/ paths put under the test's own folder)."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torch_diode.model_file import model_metadata

ROOT = Path(__file__).resolve().parents[1]


def _helper(name: str):
    """A helper module of tests/, loaded by path (the tests are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


readme = _helper("readme_blocks")
guide = _helper("guide_examples")

SECTION_USE = "Use it with torch.compile"
SECTION_TOOLS = "Collect, inspect, train, validate"
GPU = 'device="cuda"'  # how a block of the README that needs a GPU is told apart


def test_the_readme_marks_its_gpu_code_and_keeps_cpu_code_in_both_sections():
    python = readme.blocks("python", SECTION_USE)
    assert [(GPU in b) for b in python] == [True, False]
    assert len(readme.commands(SECTION_TOOLS)) >= 8
    assert not any(c.startswith("diode collect") for c in readme.commands(SECTION_TOOLS))


@pytest.mark.slow
def test_readme_torch_compile_example_runs_on_a_cpu_and_counts_the_fallback():
    (code,) = [b for b in readme.blocks("python", SECTION_USE) if GPU not in b]
    code += "import json\nprint('STATS ' + json.dumps(choices.get_stats(), default=str))\n"
    env = {**os.environ, **guide.FRESH_GRAPHS_ENV}  # a cached graph would skip the handler
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    stats = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("STATS "))[len("STATS ") :])
    assert stats["model_selections"] == 0
    assert stats["fallbacks"].get("no_model_for_hardware", 0) >= 1, stats


@pytest.mark.slow
def test_readme_dataset_training_and_validation_commands_run_as_written(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command in readme.commands(SECTION_TOOLS):
        command = command.replace("/tmp/", f"{tmp_path}/")
        proc = subprocess.run(command, shell=True, capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
        assert proc.returncode == 0, f"{command}\n{proc.stderr[-4000:]}"
    assert json.loads((tmp_path / "report.json").read_text())["num_problems"] > 0
    assert (tmp_path / "my.diode").stat().st_size > 0
    assert model_metadata(tmp_path / "adapted.diode")["training"]["trainable_layers"] == 1

"""The workflows under workflows/ run end to end on this CPU (real torch.compile, tiny sizes)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def test_tutorial_script_runs_every_step(tmp_path):
    env = {**os.environ, "SHAPES": "2", "EPOCHS": "20", "DIODE": f"{sys.executable} -m torch_diode.cli"}
    proc = subprocess.run(
        ["bash", str(ROOT / "workflows" / "tutorial.sh"), str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # collection turns the caches off on purpose: Dynamo's warning about it is not repeated per problem
    assert "dynamo_pgo force disabled" not in proc.stderr
    for name in ("train.json", "model.diode", "validation.json", "validate_model.json", "validate_max_autotune.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert json.loads((tmp_path / "validate_model.json").read_text())["num_problems"] >= 1


def test_bring_your_own_model_records_trains_and_installs(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "workflows" / "bring_your_own_model.py"),
            "--work",
            str(tmp_path),
            "--device",
            "cpu",
            "--epochs",
            "20",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "outputs match eager" in proc.stdout and "'fallbacks_total': 0" in proc.stdout
    assert (tmp_path / "my_model.diode").stat().st_size > 0


def test_demo_without_a_gpu_shows_the_shipped_model_against_max_autotune():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "workflows" / "demo.py")], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "NVIDIA-H100-matmul" in proc.stdout and "MODEL VS MAX-AUTOTUNE" in proc.stdout
    from torch_diode.dataset_io import load_datasets

    problems = sum(1 for _ in load_datasets([ROOT / "data" / "h100" / "validation"]).problems())
    assert f"problems: {problems}" in proc.stdout  # every problem of the shipped validation set

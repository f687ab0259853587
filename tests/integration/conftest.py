"""Fixtures of the Inductor integration tests."""

import pytest

from torch_diode.collection.inductor_sweep import sweep_inductor
from torch_diode.model_file import write_model
from torch_diode.training.train import TrainConfig, train_model
from torch_diode.types import Problem, load_dataset


@pytest.fixture(scope="session")
def cpu_model(tmp_path_factory):
    """A model trained on bmm timings recorded from real torch.compile on this CPU."""
    d = tmp_path_factory.mktemp("model")
    problems = [
        Problem("bmm", b, m, n, k, "float32", "float32", "float32")
        for b, m, n, k in [(2, 32, 48, 16), (3, 64, 32, 24), (2, 96, 80, 48)]
    ]
    sweep_inductor(problems, d / "cpu.json", device="cpu", backends="CPP,ATEN", progress=False)
    model, _ = train_model(
        load_dataset(d / "cpu.json"), TrainConfig(num_epochs=20, validation_fraction=0.0), progress=False
    )
    return write_model(d / "cpu.diode", model)

"""Fixtures of the Inductor integration tests."""

import pytest
from filelock import FileLock

from torch_diode.collection.inductor_sweep import sweep_inductor
from torch_diode.dataset_io import load_dataset
from torch_diode.model_file import write_model
from torch_diode.training.train import TrainConfig, train_model
from torch_diode.types import Problem


@pytest.fixture(scope="session")
def cpu_model(tmp_path_factory, worker_id):
    """A model trained on bmm timings recorded from real torch.compile on this CPU: made once per
    test run, by the first pytest-xdist worker that needs it (the others wait and read it)."""
    if worker_id == "master":
        return _train_cpu_model(tmp_path_factory.mktemp("model"))
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, above every worker's own
    with FileLock(str(shared / "cpu_model.lock")):
        path = shared / "cpu_model" / "cpu.diode"
        return path if path.is_file() else _train_cpu_model(path.parent)


def _train_cpu_model(d):
    d.mkdir(parents=True, exist_ok=True)
    problems = [
        Problem("bmm", b, m, n, k, "float32", "float32", "float32")
        for b, m, n, k in [(2, 32, 48, 16), (3, 64, 32, 24), (2, 96, 80, 48)]
    ]
    sweep_inductor(problems, d / "cpu.json", device="cpu", backends="CPP,ATEN", progress=False)
    model, _ = train_model(
        load_dataset(d / "cpu.json"), TrainConfig(num_epochs=20, validation_fraction=0.0), progress=False
    )
    return write_model(d / "cpu.diode", model)

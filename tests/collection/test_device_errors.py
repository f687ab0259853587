"""A device that cannot measure is an error, never a shape skipped and marked done."""

import pytest
import torch

from torch_diode.collection import inductor_sweep
from torch_diode.collection.inductor_sweep import sweep_inductor
from torch_diode.dataset_io import load_dataset
from torch_diode.hardware import DeviceError, check_device, device_works
from torch_diode.types import Problem, problem_key

# operands of 2^48 elements: their allocation fails at once, on any machine
HUGE = Problem(op="mm", B=1, M=2**24, N=2**24, K=2**24, dtype_a="float32", dtype_b="float32", dtype_out="float32")


def test_check_device():
    check_device("cpu")
    assert device_works("cpu")
    for bad in ("banana", "cuda:99", "meta"):
        with pytest.raises(DeviceError, match=bad.split(":")[0]):
            check_device(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_sweeping_on_a_missing_device_fails_before_writing(tmp_path):
    out = tmp_path / "x.json"
    with pytest.raises(DeviceError, match="CUDA is not available"):
        sweep_inductor([HUGE], out, device="cuda", progress=False)
    assert not out.exists()


def test_a_shape_failing_on_a_working_device_is_skipped_with_its_reason(tmp_path):
    out = tmp_path / "x.json"
    summary = sweep_inductor([HUGE], out, device="cpu", progress=False)
    assert summary.problems_skipped == 1 and summary.problems_measured == 0
    skipped = load_dataset(out).metadata["skipped"]
    assert [s["problem_key"] for s in skipped] == [problem_key(HUGE)] and "memory" in skipped[0]["reason"].lower()


def test_a_failure_the_device_confirms_stops_the_run_without_marking_the_shape(tmp_path, monkeypatch):
    """The device stops working (simulated: the health check after the failure says so): the
    run stops with DeviceError, and the shape is neither completed nor skipped, so a later run
    on a working device measures it."""
    out = tmp_path / "x.json"
    monkeypatch.setattr(inductor_sweep, "device_works", lambda device: False)
    with pytest.raises(DeviceError, match="stopped working"):
        sweep_inductor([HUGE], out, device="cpu", progress=False)
    meta = load_dataset(out).metadata
    assert not meta.get("completed") and not meta.get("skipped")
    assert meta["in_flight"]["problem_key"] == problem_key(HUGE)


def test_a_sweep_never_adds_to_a_file_measured_on_another_gpu(tmp_path):
    """A file holds one GPU's measurements: resuming into a file measured elsewhere (an H100's
    file on an H200, say) stops before anything is measured, and the file is left as it was."""
    from dataclasses import replace

    from torch_diode.dataset_io import save_dataset
    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, TimedConfig

    h100 = replace(detect_hardware("cpu"), device_name="NVIDIA H100 80GB HBM3")
    ds = Dataset()
    ds.add(
        h100,
        Problem("mm", 1, 32, 32, 32, "float32", "float32", "float32"),
        [TimedConfig(KernelConfig("aten::mm"), 5.0)],
    )
    out = tmp_path / "h100.json"
    save_dataset(ds, out)
    before = out.read_bytes()
    small = Problem("mm", 1, 16, 16, 16, "float32", "float32", "float32")
    with pytest.raises(DeviceError, match=r"h100\.json: measured on NVIDIA H100 80GB HBM3, but cpu is "):
        sweep_inductor([small], out, device="cpu", backends="CPP,ATEN", progress=False)
    assert out.read_bytes() == before

"""Which shipped model the GPU tests use."""

import pytest
import torch


def shipped_model_for_this_gpu() -> str:
    """The shipped model made for this GPU (an exact hardware match), or the test is skipped."""
    from torch_diode.hardware import detect_hardware
    from torch_diode.registry import model_for_hardware

    found = model_for_hardware(detect_hardware("cuda"))
    if found is None or found[2] != "exact":
        pytest.skip(f"no shipped model for {torch.cuda.get_device_name()}")
    return found[0]


def gpu_slug() -> str:
    """The GPU's short name for result files: h100, h200 (the device name's model number)."""
    import re

    found = re.search(r"\b([A-Z]\d{2,3})\b", torch.cuda.get_device_name())
    return found.group(1).lower() if found else "gpu"

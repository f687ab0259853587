"""Which shipped model the GPU tests use."""

import pytest
import torch


def exact_shipped_model() -> str | None:
    """The shipped model made for this GPU (an exact hardware match), or None."""
    from torch_diode.hardware import detect_hardware
    from torch_diode.registry import model_for_hardware

    found = model_for_hardware(detect_hardware("cuda"))
    return found[0] if found is not None and found[2] == "exact" else None


def shipped_model_for_this_gpu() -> str:
    """:func:`exact_shipped_model`, or the test is skipped."""
    name = exact_shipped_model()
    if name is None:
        pytest.skip(f"no shipped model for {torch.cuda.get_device_name()}")
    return name


def gpu_slug() -> str:
    """The GPU's short name for result files: h100, h200 (the device name's model number)."""
    import re

    found = re.search(r"\b([A-Z]\d{2,3})\b", torch.cuda.get_device_name())
    return found.group(1).lower() if found else "gpu"

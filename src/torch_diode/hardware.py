"""Describing the machine measurements are made on, without initialising CUDA needlessly."""

from __future__ import annotations

import logging
import os
import platform

from .errors import UserError
from .types import Hardware

logger = logging.getLogger(__name__)

# Used as the "shared memory" of a CPU so that features stay defined; CPU data trains CPU models.
_CPU_SMEM_PER_BLOCK_BYTES = 1 << 20


def _versions() -> tuple[str, str | None, str | None]:
    import torch

    try:
        import triton  # noqa: F401

        triton_version = triton.__version__
    except Exception:  # triton is optional on CPU machines
        triton_version = None
    return torch.__version__, triton_version, torch.version.cuda


def detect_hardware(device: str | int | None = None) -> Hardware:
    """The :class:`Hardware` record of a device (``"cuda"``, ``"cuda:1"``, ``"cpu"``...).

    ``None`` means the current CUDA device where CUDA is available, else the CPU. Only a CUDA
    device initialises CUDA.
    """
    import torch

    torch_version, triton_version, cuda_version = _versions()
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        smem = getattr(props, "shared_memory_per_block_optin", 0) or getattr(props, "shared_memory_per_block", 0)
        return Hardware(
            device_name=props.name,
            compute_capability=(props.major, props.minor),
            sm_count=props.multi_processor_count,
            memory_bytes=props.total_memory,
            smem_per_block_bytes=int(smem),
            torch_version=torch_version,
            triton_version=triton_version,
            cuda_version=cuda_version,
        )
    if dev.type == "cpu":
        name = platform.processor() or platform.machine() or "cpu"
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            memory = 0
        return Hardware(
            device_name=f"CPU {name}",
            compute_capability=None,
            sm_count=os.cpu_count() or 1,
            memory_bytes=int(memory),
            smem_per_block_bytes=_CPU_SMEM_PER_BLOCK_BYTES,
            torch_version=torch_version,
            triton_version=triton_version,
            cuda_version=None,
        )
    raise ValueError(f"detect_hardware: unsupported device {device!r}")


def current_device(device: str):
    """A context making ``device`` (``cuda:1``) the current CUDA device: Triton launches kernels,
    and CUDA events record, on the current device's stream, whatever device the tensors are on.
    A no-op context for non-CUDA devices."""
    from contextlib import nullcontext

    import torch

    if str(device).startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.device(torch.device(device))
    return nullcontext()


class DeviceError(UserError):
    """A device cannot be measured on: not a device name, absent here, or it stopped working."""


def check_device(device: str) -> None:
    """Raises DeviceError unless ``device`` (``cuda``, ``cuda:1``, ``cpu``...) can run kernels
    here: a collection on a machine without it must fail at once, not skip every shape."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise DeviceError(f"{device!r} is not a device name such as cpu, cuda or cuda:1") from None
    if dev.type == "cpu":
        return
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch is built without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise DeviceError(
                f"{device!r}: CUDA is not available here ({why}); measure with --device cpu or on a GPU machine"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceError(f"{device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
        return
    backend = getattr(torch, dev.type, None)
    if dev.type == "meta" or not getattr(backend, "is_available", lambda: False)():
        raise DeviceError(f"{device!r}: no {dev.type} device to measure on here")


def device_works(device: str) -> bool:
    """Whether a tiny kernel still runs on ``device`` (after a failure: the shape's fault, or the device's)."""
    import torch

    try:
        x = torch.ones(8, device=device) + 1
        if str(device).startswith("cuda"):
            torch.cuda.synchronize(torch.device(device))
        return float(x.sum()) == 16.0
    except Exception:
        return False


_VENDOR_WORDS = {
    "NVIDIA",
    "AMD",
    "INTEL",
    "TESLA",
    "GEFORCE",
    "QUADRO",
    "RADEON",
    "INSTINCT",
    "RTX",
    "GTX",
    "DATA",
    "CENTER",
}


def gpu_family(device_name: str) -> str | None:
    """The product family in a GPU's name: its first word holding a digit, after the vendor's words
    (``NVIDIA H100 80GB HBM3``, ``NVIDIA H100 PCIe`` and ``NVIDIA H100 NVL`` are ``H100``,
    ``NVIDIA A100-SXM4-80GB`` is ``A100``, ``AMD Instinct MI300X`` is ``MI300X``); None for a CPU
    or a name without one."""
    import re

    if device_name.upper().startswith("CPU"):
        return None
    for word in re.split(r"[\s\-_/]+", device_name.upper()):
        if word and word not in _VENDOR_WORDS and any(c.isdigit() for c in word):
            return word
    return None


def hardware_match(model_hardware: dict, hardware: Hardware) -> str | None:
    """How a model trained on ``model_hardware`` (a model file's metadata record) fits ``hardware``:
    ``"exact"`` (the same device name), ``"family"`` (another SKU of the same GPU: the same compute
    capability and family name, e.g. an H100 PCIe for a model of the H100 SXM) or None."""
    name = model_hardware.get("device_name")
    if not name:
        return None
    if Hardware(name, None, 1, 0, 1, "").hardware_id == hardware.hardware_id:
        return "exact"
    capability = model_hardware.get("compute_capability")
    family = gpu_family(name)
    if (
        capability
        and hardware.compute_capability
        and tuple(capability) == tuple(hardware.compute_capability)
        and family is not None
        and family == gpu_family(hardware.device_name)
    ):
        return "family"
    return None

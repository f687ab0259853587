"""torch-diode: learned GEMM kernel selection for torch.compile.

Import behaviour: where a pre-trained model shipped with the package matches the GPU,
``import torch_diode`` installs diode's choice handler for it and turns on Inductor's GEMM
autotune path (``max_autotune_gemm``), logging what it did; ``torch_diode.disable()`` undoes it.
``TORCH_DIODE_NO_AUTOREGISTER=1`` gives the library-only behaviour. On a machine without a
matching model (a CPU-only one included), the import changes nothing, does not initialise CUDA
and does not even import torch.
"""

from __future__ import annotations

import logging

from .collection import Collector, collect
from .types import (
    Dataset,
    DatasetFormatError,
    Hardware,
    KernelConfig,
    Problem,
    TimedConfig,
    load_dataset,
    load_datasets,
    save_dataset,
)

__version__ = "0.1.0"

logger = logging.getLogger(__name__)
logger.addHandler(logging.NullHandler())

_LAZY = {
    "DiodeInductorChoices": ("torch_diode.integration.choices", "DiodeInductorChoices"),
    "get_prediction_stats": ("torch_diode.integration.stats", "get_prediction_stats"),
    "profile_predictions": ("torch_diode.integration.stats", "profile_predictions"),
    "install_diode_choices": ("torch_diode.integration.install", "install_diode_choices"),
    "uninstall_diode_choices": ("torch_diode.integration.install", "uninstall_diode_choices"),
    "create_diode_choices": ("torch_diode.integration.install", "create_diode_choices"),
    "diode_choices": ("torch_diode.integration.install", "diode_choices"),
    "config": ("torch_diode.config", None),
}


def __getattr__(name: str):
    """The Inductor-facing API is imported on first use (it imports torch._inductor)."""
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = importlib.import_module(module)
        return getattr(value, attr) if attr else value
    raise AttributeError(f"module 'torch_diode' has no attribute {name!r}")


def get_detected_hardware(device: str | None = None) -> Hardware:
    """The Hardware record of ``device`` (default: the current CUDA device, else the CPU)."""
    from .hardware import detect_hardware

    return detect_hardware(device)


def list_available_models() -> list[str]:
    """Names of the shipped and registered models."""
    from .registry import available_models

    return list(available_models())


def register_model(name_or_path: str, enable_gemm_autotune: bool = True, **kwargs):
    """Installs diode's choice handler with this model (a name or a path) and returns it."""
    from .integration.install import install_diode_choices

    return install_diode_choices(name_or_path, enable_gemm_autotune=enable_gemm_autotune, **kwargs)


def set_log_level(level: int | str) -> None:
    """Log level of torch-diode's loggers ("DEBUG", "INFO", logging.WARNING...)."""
    logger.setLevel(level.upper() if isinstance(level, str) else level)


def disable() -> int:
    """Undoes every installation (the import's included); returns how many were undone."""
    import sys

    install = sys.modules.get("torch_diode.integration.install")
    count = 0
    while install is not None and install.uninstall_diode_choices():
        count += 1
    return count


def _maybe_nvidia_gpu() -> bool:
    """False only where there is certainly no usable NVIDIA GPU (checked without importing torch)."""
    import glob
    import os
    import sys

    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    if sys.platform.startswith("linux"):
        return bool(glob.glob("/dev/nvidia[0-9]*"))
    return True  # elsewhere torch decides


def autoregister(force: bool = False) -> str | None:
    """The import-time registration: install the shipped model matching this GPU, if any.
    Returns the model's name, or None (no GPU, no matching model, or disabled)."""
    from . import config as _config
    from .registry import shipped_models

    if not (force or _config.autoregister):
        return None
    models = shipped_models()
    if not models:
        return None  # nothing to register: do not even import torch
    if not _maybe_nvidia_gpu():
        return None  # a machine without an NVIDIA GPU: keep the import light, torch stays unimported
    import torch

    if not torch.cuda.is_available():
        return None
    from .hardware import detect_hardware
    from .model_file import model_metadata

    hardware = detect_hardware("cuda")
    for name, path in models.items():
        trained = (model_metadata(path).get("hardware") or {}).get("hardware_id")
        if trained == hardware.hardware_id:
            register_model(str(path))
            logger.info("torch-diode: %s detected; model %s registered, GEMM autotuning via diode enabled "
                        "(torch_diode.disable() undoes this)", hardware.device_name, name)
            return name
    logger.info("torch-diode: no shipped model for %s; nothing changed", hardware.device_name)
    return None


autoregister()

__all__ = [
    "Collector",
    "DiodeInductorChoices",
    "autoregister",
    "config",
    "create_diode_choices",
    "diode_choices",
    "disable",
    "get_detected_hardware",
    "get_prediction_stats",
    "install_diode_choices",
    "list_available_models",
    "profile_predictions",
    "register_model",
    "set_log_level",
    "uninstall_diode_choices",
    "Dataset",
    "DatasetFormatError",
    "Hardware",
    "KernelConfig",
    "Problem",
    "TimedConfig",
    "collect",
    "load_dataset",
    "load_datasets",
    "save_dataset",
]

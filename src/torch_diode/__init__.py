"""torch-diode: learned GEMM kernel selection for torch.compile.

Import behaviour: ``import torch_diode`` adds the torch.compile integration guide's settings to
Inductor's config (``fast_autotune``, ``diode_*``, the ``"DIODE"`` GEMM backend:
:mod:`torch_diode.inductor.settings`; if Inductor is not imported yet, when it is).
Where a pre-trained model shipped with the package matches the GPU (or its family:
:mod:`torch_diode.registry`), it installs diode's choice handler for it and turns on Inductor's
GEMM autotune path (``max_autotune_gemm``), logging what it did. ``torch_diode.disable()``
undoes all of it. ``TORCH_DIODE_NO_AUTOREGISTER=1``, and the library-only distribution
``torch-diode-lib``, give an import without side effects. On a machine without a matching model
(a CPU-only one included), the import does not initialise CUDA and does not even import torch.
"""

from __future__ import annotations

import logging

from .dataset_io import load_dataset, load_datasets, save_dataset
from .formats import DatasetFormatError
from .types import Dataset, Hardware, KernelConfig, Problem, TimedConfig
from .version import __version__

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
    "Collector": ("torch_diode.collection", "Collector"),
    "collect": ("torch_diode.collection", "collect"),
}


def __getattr__(name: str):
    """The Inductor-facing API (it imports torch._inductor) and the collection tools (offline
    tooling, which the runtime never imports) are imported on first use."""
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
    """Undoes every installation (the import's included) and takes diode's settings out of
    Inductor's config; returns how many installations were undone."""
    import sys

    from .inductor.settings import remove_settings

    global _autoregistered
    install = sys.modules.get("torch_diode.integration.install")
    count = 0
    while install is not None and install.uninstall_diode_choices():
        count += 1
    remove_settings()
    _autoregistered = None
    return count


def enable_inductor_settings() -> None:
    """Adds the guide's settings (``fast_autotune``, ``diode_*``) to Inductor's config and the
    ``"DIODE"`` backend, as the import does unless it is library-only."""
    from .inductor.settings import add_settings

    add_settings()


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


_autoregistered: str | None = None


def autoregister(force: bool = False) -> str | None:
    """The import-time registration: diode's Inductor settings, and the shipped model matching
    this GPU or its family, if any (once). Returns the model's name, or None (no GPU, no matching
    model, or disabled)."""
    global _autoregistered
    from . import config as _config
    from .registry import shipped_models

    if not (force or _config.autoregister):
        return None
    enable_inductor_settings()
    if _autoregistered is not None:
        return _autoregistered
    models = shipped_models()
    if not models:
        return None  # nothing to register: do not even import torch
    if not _maybe_nvidia_gpu():
        return None  # a machine without an NVIDIA GPU: keep the import light, torch stays unimported
    import torch

    if not torch.cuda.is_available():
        return None
    from .hardware import detect_hardware
    from .registry import model_for_hardware

    hardware = detect_hardware("cuda")
    found = model_for_hardware(hardware)  # a model of the GPU's family is logged at WARNING
    if found is None:
        logger.info("torch-diode: no shipped model for %s; no handler installed", hardware.device_name)
        return None
    name, path, _ = found
    register_model(str(path))
    logger.info(
        "torch-diode: %s detected; model %s registered, GEMM autotuning via diode enabled "
        "(torch_diode.disable() undoes this)",
        hardware.device_name,
        name,
    )
    _autoregistered = name
    return name


autoregister()

__all__ = [
    "__version__",
    "Collector",
    "DiodeInductorChoices",
    "autoregister",
    "config",
    "create_diode_choices",
    "diode_choices",
    "disable",
    "enable_inductor_settings",
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

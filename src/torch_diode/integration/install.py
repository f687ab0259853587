"""Installing DiodeInductorChoices into Inductor, and taking it out again.

The handler goes onto :mod:`torch_diode.inductor.hooks`'s stack (where it is installed and what
an install changes is described there); ``uninstall_diode_choices()`` restores every value the
last install changed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import config
from ..inductor.hooks import install_handler, installed_handler, uninstall_handler

logger = logging.getLogger(__name__)


def create_diode_choices(
    model_path: str | os.PathLike | None = None,
    device: str = "cpu",
    top_k_configs: int | None = None,
    performance_threshold: float | None = None,
    enable_fallback: bool | None = None,
):
    """A DiodeInductorChoices (not installed). ``None`` settings follow ``torch_diode.config``."""
    from .choices import DiodeInductorChoices

    return DiodeInductorChoices(model_path, device, top_k_configs, performance_threshold, enable_fallback)


def install_diode_choices(
    model_path: str | os.PathLike | None = None,
    device: str = "cpu",
    top_k_configs: int | None = None,
    performance_threshold: float | None = None,
    enable_fallback: bool | None = None,
    enable_gemm_autotune: bool = False,
):
    """Installs a DiodeInductorChoices for the model (a path or name) and returns it.

    ``enable_gemm_autotune`` also sets Inductor's ``max_autotune_gemm`` so that plain
    ``torch.compile`` offers GEMM candidates to diode (the auto-registration does this).

    A model that cannot be loaded (an unknown name, a missing or malformed file) is one WARNING
    line; the handler is installed without it, so every GEMM Inductor asks it about gets the stock
    choices, counted as ``model_load_error``, and nothing else changes: ``max_autotune_gemm``
    stays as it was (``enable_gemm_autotune`` is ignored) and no ptxas is chosen.
    """
    from ..inductor.settings import add_settings

    choices = create_diode_choices(model_path, device, top_k_configs, performance_threshold, enable_fallback)
    add_settings()  # Inductor's fast_autotune / diode_* settings and the "DIODE" backend
    loaded = choices.load_error is None
    install_handler(choices, enable_gemm_autotune and loaded, with_ptxas=loaded)
    if loaded:
        logger.info("torch-diode: choice handler installed (model %s)", choices.model_path)
    return choices


def uninstall_diode_choices() -> bool:
    """Undoes the last install (handler and Inductor config values). False if none was installed."""
    if not uninstall_handler():
        return False
    logger.info("torch-diode: choice handler uninstalled")
    return True


def installed_choices() -> Any:
    return installed_handler()


@contextmanager
def diode_choices(model_path: str | os.PathLike | None = None, **kwargs: Any) -> Iterator[Any]:
    """``with diode_choices(model): ...`` installs for the block and restores afterwards."""
    choices = install_diode_choices(model_path, **kwargs)
    try:
        yield choices
    finally:
        if installed_choices() is choices:
            uninstall_diode_choices()


__all__ = [
    "create_diode_choices",
    "diode_choices",
    "install_diode_choices",
    "installed_choices",
    "uninstall_diode_choices",
    "config",
]

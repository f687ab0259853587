"""Installing DiodeInductorChoices into Inductor, and taking it out again.

Where torch has ``torch._inductor.config.inductor_choices_class`` (2.13), diode's handler is
installed there, so every compile thread uses it and the FX-graph cache key includes its
``uuid()`` (a cached graph compiled without diode is not reused). Elsewhere the handler is set for
the current thread with ``V.set_choices_handler`` and the FX-graph cache is turned off while it is
installed, since a cache hit would skip it. ``uninstall_diode_choices()`` restores every value
it changed.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import Any, Iterator

from .. import config

logger = logging.getLogger(__name__)

_installed: list[dict[str, Any]] = []  # a stack: nested installs restore in order


def create_diode_choices(model_path: str | os.PathLike | None = None, device: str = "cpu", top_k_configs: int | None = None,
                         performance_threshold: float | None = None, enable_fallback: bool | None = None):
    """A DiodeInductorChoices (not installed). ``None`` settings follow ``torch_diode.config``."""
    from .choices import DiodeInductorChoices

    return DiodeInductorChoices(model_path, device, top_k_configs, performance_threshold, enable_fallback)


_UNSET = object()


def _current_handler() -> Any:
    """The handler set on this thread, or _UNSET: Inductor's ``_get_handler`` would instead make
    and install a default one, and restoring that object is not the same as restoring "unset"."""
    from torch._inductor.virtualized import _choices, threadlocal

    return getattr(threadlocal, _choices._key, _UNSET)


def install_diode_choices(model_path: str | os.PathLike | None = None, device: str = "cpu",
                          top_k_configs: int | None = None, performance_threshold: float | None = None,
                          enable_fallback: bool | None = None, enable_gemm_autotune: bool = False):
    """Installs a DiodeInductorChoices for the model (a path or name) and returns it.

    ``enable_gemm_autotune`` also sets Inductor's ``max_autotune_gemm`` so that plain
    ``torch.compile`` offers GEMM candidates to diode (the auto-registration does this).
    """
    from .inductor_config import add_settings

    choices = create_diode_choices(model_path, device, top_k_configs, performance_threshold, enable_fallback)
    add_settings()  # Inductor's fast_autotune / diode_* settings and the "DIODE" backend
    _install(choices, enable_gemm_autotune)
    logger.info("torch-diode: choice handler installed (model %s)", choices.model_path)
    return choices


def _install(choices: Any, enable_gemm_autotune: bool) -> None:
    from torch._inductor import config as inductor_config
    from torch._inductor.virtualized import V

    record: dict[str, Any] = {"choices": choices, "handler": _current_handler(), "config": {},
                              "enable_gemm_autotune": enable_gemm_autotune}
    if hasattr(inductor_config, "inductor_choices_class"):
        record["config"]["inductor_choices_class"] = inductor_config.inductor_choices_class
        inductor_config.inductor_choices_class = lambda: choices
    else:
        record["config"]["fx_graph_cache"] = inductor_config.fx_graph_cache
        inductor_config.fx_graph_cache = False
    if enable_gemm_autotune:
        record["config"]["max_autotune_gemm"] = inductor_config.max_autotune_gemm
        inductor_config.max_autotune_gemm = True
    V.set_choices_handler(choices)
    _installed.append(record)


def suspend_diode_choices() -> list[Any]:
    """Takes the installed diode handlers out, innermost first, while one of them is the handler in
    force, restoring what was there before; hand the result to :func:`resume_diode_choices` to
    put them back. The Collector does this so that it records Inductor's own autotuning, not
    diode's selection."""
    suspended = []
    # only while diode's handler is the one in force: a handler set on top of it stays untouched
    while _installed and _current_handler() is _installed[-1]["choices"]:
        suspended.append(_installed[-1])
        uninstall_diode_choices()
    return suspended


def resume_diode_choices(suspended: list[Any]) -> None:
    for record in reversed(suspended):
        _install(record["choices"], record["enable_gemm_autotune"])


def uninstall_diode_choices() -> bool:
    """Undoes the last install (handler and Inductor config values). False if none was installed."""
    from torch._inductor import config as inductor_config
    from torch._inductor.virtualized import V

    if not _installed:
        return False
    record = _installed.pop()
    for key, value in record["config"].items():
        setattr(inductor_config, key, value)
    if record["handler"] is _UNSET:
        from torch._inductor.virtualized import _choices, threadlocal

        if hasattr(threadlocal, _choices._key):
            delattr(threadlocal, _choices._key)
    else:
        V.set_choices_handler(record["handler"])
    logger.info("torch-diode: choice handler uninstalled")
    return True


def installed_choices() -> Any:
    return _installed[-1]["choices"] if _installed else None


@contextmanager
def diode_choices(model_path: str | os.PathLike | None = None, **kwargs: Any) -> Iterator[Any]:
    """``with diode_choices(model): ...`` installs for the block and restores afterwards."""
    choices = install_diode_choices(model_path, **kwargs)
    try:
        yield choices
    finally:
        if installed_choices() is choices:
            uninstall_diode_choices()


__all__ = ["create_diode_choices", "diode_choices", "install_diode_choices", "installed_choices", "uninstall_diode_choices", "config"]

"""The settings the torch.compile integration guide puts in Inductor's config, and its "DIODE" backend.

Inductor's config (``torch._inductor.config``, a ConfigModule) rejects names it does not hold.
:func:`add_settings` adds these entries to it and teaches Inductor the ``"DIODE"`` GEMM backend;
:func:`remove_settings` (``torch_diode.disable()``) takes both out again. ``import torch_diode``
(the full distribution, auto-registration on) and :func:`install_diode_choices` call
:func:`add_settings`; where ``torch._inductor`` is not imported yet, the import does not import
it: the entries are added the moment Inductor's config module is first imported.

Each Inductor setting below defaults to None; the parentheses name the torch_diode.config setting
it sets (with that setting's default):

- ``fast_autotune`` (sets ``fast_autotune``, default True): False: diode's handler hands Inductor its
  stock candidates, which max-autotune benchmarks; True: diode's handler (where one is
  installed) chooses
- ``diode_fallback_to_autotune`` (sets ``fallback_to_autotune``, default True): True: a GEMM
  diode does not decide gets Inductor's stock candidates (autotuned), an unsure one ``unsure_top_k``
  candidates; False: the ATen choice alone (default mode's kernel, nothing benchmarked) and the
  first pick alone
- ``diode_confidence_threshold`` (sets ``unsure_heldout_slowdown`` = 1 / c; 0.95 gives 1.053;
  the default 1.05 is c = 0.952): c in (0, 1]: diode trusts its first pick for a kind of problem
  (aligned or not) where its first picks on the held-out problems of that kind reached on
  geometric mean at least c of the best measured speed; else the problem is unsure and Inductor
  benchmarks ``unsure_top_k`` candidates
- ``diode_cache_predictions`` (sets ``cache_predictions``): remember the decision of a repeated
  problem

None (the default) leaves the torch_diode.config setting as it is; a value set in Inductor's
config wins over it while a GEMM is decided. ``diode_confidence_threshold`` is not compared with
``get_prediction_stats()["avg_confidence"]``, which is the predicted gap between a decision's
best and second-best candidates.

``max_autotune_gemm_backends`` holding ``DIODE`` (alone, ``"DIODE"``, or with others,
``"DIODE,CPP"``): Inductor offers the ATen and Triton candidates, as for ``"ATEN,TRITON"``, and
diode's handler, where installed, chooses among them. Without a handler or a model for the GPU,
``"DIODE"`` is ``"ATEN,TRITON"``. Inductor reads the backend list through
``torch._inductor.utils._use_autotune_backend`` (torch 2.10 to 2.13: ``use_aten_gemm_kernels``
and ``use_triton_template`` call it); diode wraps that function. Where a torch lacks either hook
(the config's entry table, that function), nothing is changed and a warning says so.
"""

from __future__ import annotations

import importlib.abc
import logging
import math
import sys
from typing import Any

logger = logging.getLogger(__name__)

DIODE_BACKEND = "DIODE"
# Inductor setting -> the torch_diode.config setting it sets (see the module docstring)
SETTINGS = {
    "fast_autotune": "fast_autotune",
    "diode_fallback_to_autotune": "fallback_to_autotune",
    "diode_confidence_threshold": "unsure_heldout_slowdown",
    "diode_cache_predictions": "cache_predictions",
}
_CONFIG_MODULE = "torch._inductor.config"
_UTILS_MODULE = "torch._inductor.utils"

_added: list[str] = []  # entries this module put into Inductor's config
_original_backend_check: Any = None  # Inductor's _use_autotune_backend, while wrapped
_warned: set[str] = set()


def _warn_once(key: str, message: str, *args: Any) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(message, *args)


# ----- Inductor's config entries -----------------------------------------------------------------
def _mark_changed(cfg: Any) -> None:
    """Invalidates the config module's cached hash and dict (their names differ between versions)."""
    for var in ("_hash_dirty_var",):
        if hasattr(cfg, var):
            getattr(cfg, var).set(True)
    if hasattr(cfg, "_get_dict_dirty_keys_var"):
        cfg._get_dict_dirty_keys_var.set(None)  # None: every key dirty
    if "_is_dirty" in getattr(cfg, "__dict__", {}):
        cfg._is_dirty = True


def _add_entries(cfg: Any) -> None:
    import inspect

    try:
        from torch.utils._config_module import _Config, _ConfigEntry

        table = cfg._config
        takes_name = "name" in inspect.signature(_ConfigEntry.__init__).parameters
    except Exception as e:  # another torch's ConfigModule
        _warn_once(
            "entries",
            "torch-diode: cannot add %s to Inductor's config (%s: %s); set them in torch_diode.config",
            ", ".join(SETTINGS),
            type(e).__name__,
            e,
        )
        return
    for name in SETTINGS:
        if name in table:
            continue  # present already (ours, or Inductor's own in some future torch: left alone)
        spec = _Config(default=None)
        table[name] = _ConfigEntry(spec, name) if takes_name else _ConfigEntry(spec)
        _added.append(name)
    _mark_changed(cfg)


def _remove_entries(cfg: Any) -> None:
    table = getattr(cfg, "_config", {})
    while _added:
        table.pop(_added.pop(), None)
    _mark_changed(cfg)


# ----- the "DIODE" backend ---------------------------------------------------------------------------
def _wrap_backend_check(utils: Any) -> None:
    global _original_backend_check
    original = getattr(utils, "_use_autotune_backend", None)
    users = [getattr(utils, f, None) for f in ("use_aten_gemm_kernels", "use_triton_template")]
    if original is None or not all(u is not None and "_use_autotune_backend" in u.__code__.co_names for u in users):
        _warn_once(
            "backend",
            "torch-diode: this torch reads max_autotune_gemm_backends in a way diode does not know; "
            "'DIODE' is not understood there (use 'ATEN,TRITON')",
        )
        return
    if _original_backend_check is not None:
        return

    def _use_autotune_backend(backend: str) -> bool:
        return original(backend) or (backend.upper() in ("ATEN", "TRITON") and original(DIODE_BACKEND))

    _use_autotune_backend.__wrapped__ = original  # type: ignore[attr-defined]
    _original_backend_check = original
    utils._use_autotune_backend = _use_autotune_backend


def _unwrap_backend_check() -> None:
    global _original_backend_check
    utils = sys.modules.get(_UTILS_MODULE)
    if _original_backend_check is not None and utils is not None:
        utils._use_autotune_backend = _original_backend_check
    _original_backend_check = None


# ----- when Inductor is imported later -------------------------------------------------------------
class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs diode's additions right after Inductor's config or utils module is first imported, so
    that ``import torch_diode`` need not import torch."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in (_CONFIG_MODULE, _UTILS_MODULE):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_then_add(module: Any) -> None:
            exec_module(module)
            _apply(fullname, module)

        loader.exec_module = exec_then_add  # this module's own loader object only
        return spec


_finder: _AfterImport | None = None


def _apply(name: str, module: Any) -> None:
    try:
        if name == _CONFIG_MODULE:
            _add_entries(module)
        else:
            _wrap_backend_check(module)
    except Exception as e:  # never break an import of Inductor
        _warn_once(name, "torch-diode: could not extend %s (%s: %s)", name, type(e).__name__, e)
    if _CONFIG_MODULE in sys.modules and _UTILS_MODULE in sys.modules:
        _stop_watching()


def _stop_watching() -> None:
    global _finder
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _finder = None


def add_settings() -> None:
    """Adds the settings to Inductor's config and the "DIODE" backend (idempotent); where Inductor
    is not imported yet, as soon as it is."""
    global _finder
    for name in (_CONFIG_MODULE, _UTILS_MODULE):
        if name in sys.modules:
            _apply(name, sys.modules[name])
    if not (_CONFIG_MODULE in sys.modules and _UTILS_MODULE in sys.modules) and _finder is None:
        _finder = _AfterImport()
        sys.meta_path.insert(0, _finder)


def remove_settings() -> None:
    """Undoes :func:`add_settings`: the entries leave Inductor's config, the backend check is Inductor's own."""
    _stop_watching()
    if _CONFIG_MODULE in sys.modules:
        _remove_entries(sys.modules[_CONFIG_MODULE])
    _unwrap_backend_check()


# ----- what the handler reads -------------------------------------------------------------------
def overrides() -> dict[str, Any]:
    """torch_diode.config values set by Inductor settings (those not None), for a decision."""
    cfg = sys.modules.get(_CONFIG_MODULE)
    out: dict[str, Any] = {}
    if cfg is None:
        return out
    for name, target in SETTINGS.items():
        value = getattr(cfg, name, None)
        if value is None:
            continue
        if name == "diode_confidence_threshold":
            try:
                c = float(value)
                if not (0.0 < c <= 1.0) or math.isnan(c):
                    raise ValueError
            except (TypeError, ValueError):
                _warn_once(
                    f"bad:{value!r}",
                    "torch-diode: torch._inductor.config.diode_confidence_threshold: expected a "
                    "number in (0, 1], got %r; ignored",
                    value,
                )
                continue
            value = 1.0 / c
        else:
            value = bool(value)
        out[target] = value
    return out


def decision_settings() -> dict[str, Any]:
    """The torch_diode.config values one decision runs with: :func:`overrides`, and with
    ``fallback_to_autotune`` off an unsure decision keeps its first pick alone (``unsure_top_k`` 1)."""
    from .. import config

    values = overrides()
    if not values.get("fallback_to_autotune", config.fallback_to_autotune):
        values["unsure_top_k"] = 1
    return values


__all__ = ["DIODE_BACKEND", "SETTINGS", "add_settings", "decision_settings", "overrides", "remove_settings"]

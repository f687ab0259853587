"""torch-diode's own settings, settable in code (``torch_diode.config.top_k_configs = 3``) and by
environment variables read at import. ``patch(**values)`` changes some for a ``with`` block.

| setting | environment variable | default | meaning |
|---|---|---|---|
| enable_fallback | TORCH_DIODE_ENABLE_FALLBACK | 1 | any failure inside diode hands Inductor its stock choices (else it raises) |
| top_k_configs | TORCH_DIODE_TOP_K | 1 | choices kept per GEMM (1: nothing is benchmarked) |
| performance_threshold | TORCH_DIODE_PERFORMANCE_THRESHOLD | 1.0 | also keep choices predicted within this factor of the best (1.1 = 10%) |
| max_selected_configs | TORCH_DIODE_MAX_SELECTED | 8 | cap on the choices kept |
| unsure_top_k | TORCH_DIODE_UNSURE_TOP_K | 5 | choices Inductor benchmarks where the model is unsure: the best predicted among ATen and Inductor's DEFAULT Triton configs (torch_diode.selection.widen) |
| unsure_heldout_slowdown | TORCH_DIODE_UNSURE_HELDOUT_SLOWDOWN | 1.05 | a problem is unsure where the model's first picks on held-out problems of its kind (misaligned rows or not) were on geometric mean slower than this factor (recorded by diode train) |
| min_dtype_problems | TORCH_DIODE_MIN_DTYPE_PROBLEMS | 100 | a problem whose element type had fewer training problems is unsure too (the model records its problems per element type) |
| extern_preference | TORCH_DIODE_EXTERN_PREFERENCE | 1.1 | keep the best ATen/cuBLAS choice first unless a Triton config is predicted this factor faster (1.0: off; see torch_diode.selection) |
| candidate_pool | TORCH_DIODE_CANDIDATE_POOL | EXHAUSTIVE | Inductor search space the model ranks (DEFAULT or EXHAUSTIVE) |
| cache_predictions | TORCH_DIODE_CACHE_PREDICTIONS | 1 | remember the decision for a repeated problem |
| enumerate_candidates | TORCH_DIODE_ENUMERATE_CANDIDATES | 1 | diode enumerates the Triton mm/bmm candidates itself instead of Inductor's generator building them all (static sizes, stock config settings) |
| allow_hardware_mismatch | TORCH_DIODE_ALLOW_HARDWARE_MISMATCH | 0 | use a model on hardware it was not trained for |
| autoregister | TORCH_DIODE_NO_AUTOREGISTER (inverted) | on | ``import torch_diode`` registers a shipped model matching the GPU (or its family, see torch_diode.registry) and adds diode's settings to Inductor's config |
| fast_autotune | TORCH_DIODE_FAST_AUTOTUNE | 1 | an installed handler chooses (0: it hands Inductor the stock candidates); Inductor's ``fast_autotune`` sets it |
| fallback_to_autotune | TORCH_DIODE_FALLBACK_TO_AUTOTUNE | 1 | a GEMM diode does not decide gets Inductor's stock candidates and an unsure one ``unsure_top_k`` (0: the ATen choice alone, and the first pick alone); Inductor's ``diode_fallback_to_autotune`` sets it |

Inductor's settings from the torch.compile integration guide (``diode_confidence_threshold``,
``diode_cache_predictions``, ...) map onto these: torch_diode.integration.inductor_config.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() not in ("0", "false", "no", "off", "")


enable_fallback: bool = _env_bool("TORCH_DIODE_ENABLE_FALLBACK", True)
top_k_configs: int = int(os.environ.get("TORCH_DIODE_TOP_K", "1"))
performance_threshold: float = float(os.environ.get("TORCH_DIODE_PERFORMANCE_THRESHOLD", "1.0"))
max_selected_configs: int = int(os.environ.get("TORCH_DIODE_MAX_SELECTED", "8"))
unsure_top_k: int = int(os.environ.get("TORCH_DIODE_UNSURE_TOP_K", "5"))
unsure_heldout_slowdown: float = float(os.environ.get("TORCH_DIODE_UNSURE_HELDOUT_SLOWDOWN", "1.05"))
min_dtype_problems: int = int(os.environ.get("TORCH_DIODE_MIN_DTYPE_PROBLEMS", "100"))
extern_preference: float = float(os.environ.get("TORCH_DIODE_EXTERN_PREFERENCE", "1.1"))
candidate_pool: str = os.environ.get("TORCH_DIODE_CANDIDATE_POOL", "EXHAUSTIVE")
cache_predictions: bool = _env_bool("TORCH_DIODE_CACHE_PREDICTIONS", True)
enumerate_candidates: bool = _env_bool("TORCH_DIODE_ENUMERATE_CANDIDATES", True)
allow_hardware_mismatch: bool = _env_bool("TORCH_DIODE_ALLOW_HARDWARE_MISMATCH", False)
def _library_only() -> bool:
    """The library-only distribution (torch-diode-lib) ships ``torch_diode/_library_only.py``."""
    import importlib.util

    return importlib.util.find_spec("torch_diode._library_only") is not None


autoregister: bool = not _env_bool("TORCH_DIODE_NO_AUTOREGISTER", False) and not _library_only()
fast_autotune: bool = _env_bool("TORCH_DIODE_FAST_AUTOTUNE", True)
fallback_to_autotune: bool = _env_bool("TORCH_DIODE_FALLBACK_TO_AUTOTUNE", True)

_NAMES = ("enable_fallback", "top_k_configs", "performance_threshold", "max_selected_configs", "unsure_top_k",
          "unsure_heldout_slowdown", "min_dtype_problems", "extern_preference", "candidate_pool", "cache_predictions", "enumerate_candidates", "allow_hardware_mismatch", "autoregister",
          "fast_autotune", "fallback_to_autotune")


def snapshot() -> dict[str, Any]:
    return {name: globals()[name] for name in _NAMES}


@contextmanager
def patch(**values: Any) -> Iterator[None]:
    unknown = set(values) - set(_NAMES)
    if unknown:
        raise AttributeError(f"torch_diode.config has no setting {sorted(unknown)}")
    old = {k: globals()[k] for k in values}
    globals().update(values)
    try:
        yield
    finally:
        globals().update(old)

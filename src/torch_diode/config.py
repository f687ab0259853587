"""torch-diode's own settings, settable in code (``torch_diode.config.top_k_configs = 3``) and by
environment variables read at import. ``patch(**values)`` changes some for a ``with`` block.

| setting | environment variable | default | meaning |
|---|---|---|---|
| enable_fallback | TORCH_DIODE_ENABLE_FALLBACK | 1 | any failure inside diode hands Inductor its stock choices (else it raises) |
| top_k_configs | TORCH_DIODE_TOP_K | 1 | choices kept per GEMM (1: nothing is benchmarked) |
| performance_threshold | TORCH_DIODE_PERFORMANCE_THRESHOLD | 1.0 | also keep choices predicted within this factor of the best (1.1 = 10%) |
| max_selected_configs | TORCH_DIODE_MAX_SELECTED | 8 | cap on the choices kept |
| unsure_top_k | TORCH_DIODE_UNSURE_TOP_K | 5 | choices Inductor benchmarks where the model is unsure: the best predicted among ATen and Inductor's DEFAULT Triton configs (torch_diode.selection.widen) |
| unsure_heldout_slowdown | TORCH_DIODE_UNSURE_HELDOUT_SLOWDOWN | 1.05 | a misaligned problem (rows not 16-byte aligned) is unsure where the model's first picks on held-out misaligned problems were on geometric mean slower than this factor (recorded by diode train) |
| unsure_loss_probability | TORCH_DIODE_UNSURE_LOSS_PROBABILITY | 0.2 | a problem is unsure where the estimated probability that the first pick is more than 5% slower than the best ATen choice exceeds this (from the spread of the model's ensemble members and the calibration diode train records; torch_diode.selection.loss_probability) |
| min_dtype_problems | TORCH_DIODE_MIN_DTYPE_PROBLEMS | 100 | a problem whose element type had fewer training problems is unsure too (the shipped H100 model: 166 fp32 problems; a model with 39 had top-1 0.88, worst 2.45x on held-out fp32) |
| extern_preference | TORCH_DIODE_EXTERN_PREFERENCE | 1.1 | keep the best ATen/cuBLAS choice first unless a Triton config is predicted this factor faster (1.0: off; see torch_diode.selection) |
| candidate_pool | TORCH_DIODE_CANDIDATE_POOL | EXHAUSTIVE | Inductor search space the model ranks (DEFAULT or EXHAUSTIVE) |
| cache_predictions | TORCH_DIODE_CACHE_PREDICTIONS | 1 | remember the decision for a repeated problem |
| enumerate_candidates | TORCH_DIODE_ENUMERATE_CANDIDATES | 1 | diode enumerates the Triton mm/bmm candidates itself instead of Inductor's generator building them all (static sizes, stock config settings) |
| allow_hardware_mismatch | TORCH_DIODE_ALLOW_HARDWARE_MISMATCH | 0 | use a model on hardware it was not trained for |
| autoregister | TORCH_DIODE_NO_AUTOREGISTER (inverted) | on | ``import torch_diode`` registers a shipped model matching the GPU |
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
unsure_loss_probability: float = float(os.environ.get("TORCH_DIODE_UNSURE_LOSS_PROBABILITY", "0.2"))
min_dtype_problems: int = int(os.environ.get("TORCH_DIODE_MIN_DTYPE_PROBLEMS", "100"))
extern_preference: float = float(os.environ.get("TORCH_DIODE_EXTERN_PREFERENCE", "1.1"))
candidate_pool: str = os.environ.get("TORCH_DIODE_CANDIDATE_POOL", "EXHAUSTIVE")
cache_predictions: bool = _env_bool("TORCH_DIODE_CACHE_PREDICTIONS", True)
enumerate_candidates: bool = _env_bool("TORCH_DIODE_ENUMERATE_CANDIDATES", True)
allow_hardware_mismatch: bool = _env_bool("TORCH_DIODE_ALLOW_HARDWARE_MISMATCH", False)
autoregister: bool = not _env_bool("TORCH_DIODE_NO_AUTOREGISTER", False)

_NAMES = ("enable_fallback", "top_k_configs", "performance_threshold", "max_selected_configs", "unsure_top_k",
          "unsure_heldout_slowdown", "unsure_loss_probability", "min_dtype_problems", "extern_preference", "candidate_pool", "cache_predictions", "enumerate_candidates", "allow_hardware_mismatch", "autoregister")


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

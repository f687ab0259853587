"""torch-diode's own settings, settable in code (``torch_diode.config.top_k_configs = 3``) and by
environment variables read at import. ``patch(**values)`` changes some for a ``with`` block.

Each setting below reads: name (environment variable; default): meaning.

- ``enable_fallback`` (``TORCH_DIODE_ENABLE_FALLBACK``; 1): any failure inside diode hands
  Inductor its stock choices (else it raises)
- ``top_k_configs`` (``TORCH_DIODE_TOP_K``; 1): choices kept per GEMM (1: nothing is benchmarked)
- ``performance_threshold`` (``TORCH_DIODE_PERFORMANCE_THRESHOLD``; 1.0): also keep choices
  predicted within this factor of the best (1.1 = 10%)
- ``max_selected_configs`` (``TORCH_DIODE_MAX_SELECTED``; 8): cap on the choices kept
- ``unsure_top_k`` (``TORCH_DIODE_UNSURE_TOP_K``; 5): choices Inductor benchmarks where the model
  is unsure: the best predicted, with the best ATen choice and the best of the templates stock
  max-autotune tries (Inductor's DEFAULT list) among them (torch_diode.selection.widen)
- ``unsure_heldout_slowdown`` (``TORCH_DIODE_UNSURE_HELDOUT_SLOWDOWN``; 1.05): a misaligned
  problem (rows not 16-byte aligned) is unsure where the model's first picks on held-out
  misaligned problems were on geometric mean slower than this factor (recorded by diode train)
- ``unsure_loss_probability`` (``TORCH_DIODE_UNSURE_LOSS_PROBABILITY``; 0.2): a problem is unsure
  where the estimated probability that the first pick is more than 5% slower than the best ATen
  choice exceeds this (from the spread of the model's ensemble members and the calibration
  diode train records; torch_diode.selection.loss_probability)
- ``min_dtype_problems`` (``TORCH_DIODE_MIN_DTYPE_PROBLEMS``; 100): a problem whose element type
  had fewer training problems is unsure too (the model records its problems per element type)
- ``extern_preference`` (``TORCH_DIODE_EXTERN_PREFERENCE``; 1.1): keep the best ATen/cuBLAS choice
  first unless a Triton config is predicted this factor faster (1.0: off; not applied where an
  operand's rows are misaligned; see torch_diode.selection)
- ``candidate_pool`` (``TORCH_DIODE_CANDIDATE_POOL``; EXHAUSTIVE): Inductor search space the
  model ranks (DEFAULT or EXHAUSTIVE)
- ``cache_predictions`` (``TORCH_DIODE_CACHE_PREDICTIONS``; 1): remember the decision for a
  repeated problem
- ``enumerate_candidates`` (``TORCH_DIODE_ENUMERATE_CANDIDATES``; 1): diode enumerates the Triton
  mm/bmm candidates itself instead of Inductor's generator building them all (a static K,
  stock config settings)
- ``dynamic_decisions`` (``TORCH_DIODE_DYNAMIC_DECISIONS``; 1): a GEMM with symbolic sizes (a
  dynamic graph) is decided over the sizes it will run, keeping cuBLAS unless one Triton config is
  predicted to win at all of them (torch_diode.selection.dynamic); 0: at the hinted sizes alone
- ``dynamic_sizes`` (``TORCH_DIODE_DYNAMIC_SIZES``, comma-separated; 1,2,3,4,8,13,16,32,64,100,
  128,256,333,512,1000,1024,2048,3000,4096,8192): the sizes a dynamic dimension is judged at,
  besides its hint and the bounds Inductor knows (``mark_dynamic(min=, max=)``), within those bounds:
  a serving stack's batch sizes and token counts; each size ranks the ATen choices and the Triton
  configs predicted at the hint no slower than them (torch_diode.selection.judged_over_range)
- ``allow_hardware_mismatch`` (``TORCH_DIODE_ALLOW_HARDWARE_MISMATCH``; 0): use a model on
  hardware it was not trained for
- ``autoregister`` (``TORCH_DIODE_NO_AUTOREGISTER``, inverted; on): ``import torch_diode``
  registers a shipped model matching the GPU (or its family, see torch_diode.registry) and adds
  diode's settings to Inductor's config
- ``fast_autotune`` (``TORCH_DIODE_FAST_AUTOTUNE``; 1): an installed handler chooses (0: it hands
  Inductor the stock candidates); Inductor's ``fast_autotune`` sets it
- ``fallback_to_autotune`` (``TORCH_DIODE_FALLBACK_TO_AUTOTUNE``; 1): a GEMM diode does not
  decide gets Inductor's stock candidates and an unsure one ``unsure_top_k`` (0: the ATen choice
  alone, and the first pick alone); Inductor's ``diode_fallback_to_autotune`` sets it
- ``worker_ptxas`` (``TORCH_DIODE_WORKER_PTXAS``; 1): installing a handler makes this process
  compile Triton kernels with the ptxas Inductor's compile workers use (Inductor's own rule,
  ``TRITON_PTXAS_PATH``: torch's bundled ptxas unless the variable is set), so that when Inductor
  benchmarks an unsure decision's choices it finds the kernels its workers compiled in Triton's
  cache instead of compiling each again (torch_diode.inductor.hooks.use_worker_ptxas); 0: leave
  ``TRITON_PTXAS_PATH`` alone
- ``max_file_bytes`` (``TORCH_DIODE_MAX_FILE_BYTES``; 1073741824, 1 GiB): the largest file a
  reader of datasets, models, shapesets and reports reads, and the most a gzip-compressed one may
  inflate to; past it the reader refuses the file in one line naming it (torch_diode.fileio)
- ``max_nesting`` (``TORCH_DIODE_MAX_NESTING``; 64): the deepest nesting of objects and arrays a
  data file may have (torch-diode's own reach about 8)

Inductor's settings from the torch.compile integration guide (``diode_confidence_threshold``,
``diode_cache_predictions``, ...) map onto these: torch_diode.inductor.settings.

Booleans read 1/true/yes/on or 0/false/no/off (or empty). A value that does not parse or is out
of range (``TORCH_DIODE_TOP_K=abc``, ``TORCH_DIODE_TOP_K=0``, a NaN factor) is logged as a WARNING
naming the variable and ignored: the default stays.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger(__name__)

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _parse_bool(text: str) -> bool:
    word = text.lower()
    if word not in _TRUE + _FALSE:
        raise ValueError(text)
    return word in _TRUE


def _from_env(name: str, default: Any, parse: Callable[[str], Any], valid: Callable[[Any], bool], expected: str) -> Any:
    """The setting in environment variable ``name``; a value that does not parse or is out of range
    is logged (a WARNING naming the variable) and the default kept: a typo in the environment must
    never make ``import torch_diode`` fail."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = parse(raw.strip())
        ok = valid(value)
    except (ValueError, OverflowError):
        ok = False
    if not ok:
        _warn(f"torch-diode: ignoring {name}={raw!r}: expected {expected}; using the default {default!r}")
        return default
    return value


def _warn(message: str) -> None:
    """A WARNING on this module's logger; where the program has configured no logging (the
    package's NullHandler would swallow it) it goes out as a Python warning, so it is seen,
    attributed to the first caller outside torch-diode (the user's line)."""
    if logging.getLogger().handlers:
        logger.warning(message)
    else:
        warnings.warn(message, RuntimeWarning, stacklevel=_outside_stacklevel())


def _outside_stacklevel() -> int:
    """The ``stacklevel`` of ``warnings.warn`` called from :func:`_warn` that names the first frame
    outside this package (and outside importlib, for a warning at import)."""
    import sys

    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(2), 2
    while frame is not None and (
        frame.f_code.co_filename.startswith(package)
        or frame.f_code.co_filename.startswith("<frozen")
        or frame.f_code.co_filename.endswith("contextlib.py")
    ):
        frame, level = frame.f_back, level + 1
    return level


def _env_bool(name: str, default: bool) -> bool:
    return _from_env(name, default, _parse_bool, lambda v: True, f"one of {', '.join(_TRUE + _FALSE[:-1])} or empty")


def _env_int(name: str, default: int, minimum: int) -> int:
    return _from_env(name, default, int, lambda v: v >= minimum, f"an integer >= {minimum}")


def _env_float(
    name: str, default: float, minimum: float, inclusive: bool = True, maximum: float | None = None
) -> float:
    above = (lambda v: v >= minimum) if inclusive else (lambda v: v > minimum)
    below = (lambda v: True) if maximum is None else (lambda v: v <= maximum)
    span = f"{'>=' if inclusive else '>'} {minimum:g}" + ("" if maximum is None else f" and <= {maximum:g}")
    ok = lambda v: math.isfinite(v) and above(v) and below(v)  # noqa: E731
    return _from_env(name, default, float, ok, f"a finite number {span}")


enable_fallback: bool = _env_bool("TORCH_DIODE_ENABLE_FALLBACK", True)
top_k_configs: int = _env_int("TORCH_DIODE_TOP_K", 1, minimum=1)
performance_threshold: float = _env_float("TORCH_DIODE_PERFORMANCE_THRESHOLD", 1.0, minimum=1.0)
max_selected_configs: int = _env_int("TORCH_DIODE_MAX_SELECTED", 8, minimum=1)
unsure_top_k: int = _env_int("TORCH_DIODE_UNSURE_TOP_K", 5, minimum=1)
unsure_heldout_slowdown: float = _env_float("TORCH_DIODE_UNSURE_HELDOUT_SLOWDOWN", 1.05, minimum=0.0, inclusive=False)
unsure_loss_probability: float = _env_float("TORCH_DIODE_UNSURE_LOSS_PROBABILITY", 0.2, minimum=0.0, maximum=1.0)
min_dtype_problems: int = _env_int("TORCH_DIODE_MIN_DTYPE_PROBLEMS", 100, minimum=0)
extern_preference: float = _env_float("TORCH_DIODE_EXTERN_PREFERENCE", 1.1, minimum=1.0)
candidate_pool: str = _from_env(
    "TORCH_DIODE_CANDIDATE_POOL",
    "EXHAUSTIVE",
    str.upper,
    lambda v: v in ("DEFAULT", "EXHAUSTIVE"),
    "DEFAULT or EXHAUSTIVE",
)
cache_predictions: bool = _env_bool("TORCH_DIODE_CACHE_PREDICTIONS", True)
enumerate_candidates: bool = _env_bool("TORCH_DIODE_ENUMERATE_CANDIDATES", True)
allow_hardware_mismatch: bool = _env_bool("TORCH_DIODE_ALLOW_HARDWARE_MISMATCH", False)
dynamic_decisions: bool = _env_bool("TORCH_DIODE_DYNAMIC_DECISIONS", True)


def _parse_sizes(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


dynamic_sizes: tuple[int, ...] = _from_env(
    "TORCH_DIODE_DYNAMIC_SIZES",
    (1, 2, 3, 4, 8, 13, 16, 32, 64, 100, 128, 256, 333, 512, 1000, 1024, 2048, 3000, 4096, 8192),
    _parse_sizes,
    lambda v: 0 < len(v) <= 256 and all(1 <= s <= 1 << 31 for s in v),
    "comma-separated sizes from 1 to 2^31 (at most 256)",
)


def _library_only() -> bool:
    """The library-only distribution (torch-diode-lib) ships ``torch_diode/_library_only.py``."""
    import importlib.util

    return importlib.util.find_spec("torch_diode._library_only") is not None


autoregister: bool = not _env_bool("TORCH_DIODE_NO_AUTOREGISTER", False) and not _library_only()
fast_autotune: bool = _env_bool("TORCH_DIODE_FAST_AUTOTUNE", True)
fallback_to_autotune: bool = _env_bool("TORCH_DIODE_FALLBACK_TO_AUTOTUNE", True)
worker_ptxas: bool = _env_bool("TORCH_DIODE_WORKER_PTXAS", True)
max_file_bytes: int = _env_int("TORCH_DIODE_MAX_FILE_BYTES", 1 << 30, minimum=1)
max_nesting: int = _env_int("TORCH_DIODE_MAX_NESTING", 64, minimum=1)

_NAMES = (
    "enable_fallback",
    "top_k_configs",
    "performance_threshold",
    "max_selected_configs",
    "unsure_top_k",
    "unsure_heldout_slowdown",
    "unsure_loss_probability",
    "min_dtype_problems",
    "extern_preference",
    "candidate_pool",
    "cache_predictions",
    "enumerate_candidates",
    "allow_hardware_mismatch",
    "dynamic_decisions",
    "dynamic_sizes",
    "autoregister",
    "fast_autotune",
    "fallback_to_autotune",
    "worker_ptxas",
    "max_file_bytes",
    "max_nesting",
)


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

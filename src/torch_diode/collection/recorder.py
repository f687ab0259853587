"""Recording every autotuned GEMM choice that torch.compile benchmarks.

``with torch_diode.collect("runs/my_model.msgpack"): compiled(x)`` adds a feedback saver to
Inductor's algorithm selector; each time Inductor benchmarks the choices for an mm, addmm, bmm or
baddbmm, the full problem and every choice with its time (failures kept as failures) go into a
:class:`~torch_diode.types.Dataset` that is written to ``path`` atomically after each GEMM, so a
killed process loses at most the GEMM in flight.
"""

from __future__ import annotations

import functools
import logging
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..types import Dataset, DatasetWriter, Hardware, KernelConfig, Problem, TimedConfig

logger = logging.getLogger(__name__)

RECORDED_OPS = ("mm", "addmm", "bmm", "baddbmm")

# Inductor config values the recorder sets while it is active: with caches on, Inductor can take
# timings from its autotune cache or skip lowering on an FX-graph cache hit, and the saver would
# see stale or no timings.
_CACHE_OFF = {"force_disable_caches": True}

_PARAM_FIELDS = {
    "BLOCK_M": "block_m",
    "BLOCK_N": "block_n",
    "BLOCK_K": "block_k",
    "GROUP_M": "group_m",
    "num_stages": "num_stages",
    "num_warps": "num_warps",
}
_FLAG_FIELDS = {"EVEN_K": "even_k", "ALLOW_TF32": "allow_tf32", "USE_FAST_ACCUM": "use_fast_accum"}


def _scalar(value: Any) -> Any:
    """int/float/bool/str of a kwarg value (sympy integers included); None if not a scalar."""
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value
    try:  # sympy Integer and friends
        if getattr(value, "is_integer", False) and getattr(value, "is_number", False):
            return int(value)
    except Exception:
        return None
    return None


def config_from_kwargs(template_id: str, kwargs: dict[str, Any]) -> KernelConfig:
    """A KernelConfig from a template's kwargs (``ktc.params.to_kwargs()`` + ``extra_kwargs``)."""
    fields: dict[str, Any] = {"template_id": template_id}
    extras: dict[str, Any] = {}
    for key, value in kwargs.items():
        scalar = _scalar(value)
        if key in _PARAM_FIELDS and scalar is not None:
            fields[_PARAM_FIELDS[key]] = int(scalar)
        elif key in _FLAG_FIELDS and scalar is not None:
            fields[_FLAG_FIELDS[key]] = bool(scalar)
        elif key == "ACC_TYPE" and scalar is not None:
            fields["acc_type"] = str(scalar)
        elif scalar is not None and not key.startswith("_"):
            extras[key] = scalar
    if "block_m" not in fields:
        # Not a tiled template: no block sizes, whatever else it carries.
        for name in ("block_n", "block_k", "group_m", "num_stages", "num_warps"):
            fields.pop(name, None)
    else:
        for name in ("block_n", "block_k", "num_stages", "num_warps"):
            fields.setdefault(name, 0)
    return KernelConfig(**fields, extras=extras)


def config_from_choice(choice: Any) -> KernelConfig:
    """Reads a ChoiceCaller's template and parameters from its KernelTemplateChoice.

    Choices built outside the KernelTemplateChoice path (the CPU's CPP GEMM template, older
    torch) fall back to their template object: its ``uid``, or backend and name.
    """
    while getattr(choice, "_wrapped", None) is not None:  # DataProcessorChoiceCallerWrapper
        choice = choice._wrapped
    ktc = (getattr(choice, "annotations", None) or {}).get("ktc")
    if ktc is not None:
        kwargs = {**ktc.params.to_kwargs(), **(ktc.extra_kwargs or {})}
        return config_from_kwargs(ktc.template.uid, kwargs)
    template = getattr(choice, "template", None) or getattr(choice, "choice", None)
    if template is not None and hasattr(template, "uid"):
        return config_from_kwargs(template.uid, getattr(choice, "info_kwargs", None) or {})
    if template is not None and hasattr(template, "name"):
        try:
            backend = str(choice.info_dict().get("backend", type(choice).__name__))
        except Exception:
            backend = type(choice).__name__
        return config_from_kwargs(f"{backend.lower()}::{template.name}", getattr(choice, "info_kwargs", None) or {})
    return KernelConfig(template_id=f"{type(choice).__name__}::{getattr(choice, 'name', 'unknown')}")


def _hint_impl(expr: Any, require: bool = False) -> int:
    """A concrete size: the expression itself when static, else Inductor's hint for it. With
    ``require``, a symbolic size without a hint raises LookupError instead of a guess."""
    if isinstance(expr, int) or getattr(expr, "is_number", False):
        return int(expr)
    from torch._inductor.virtualized import V

    sizevars = V.graph.sizevars
    for name in ("optimization_hint", "size_hint"):
        fn = getattr(sizevars, name, None)
        if fn is None:
            continue
        if not require:
            return int(fn(expr, fallback=8192))
        try:
            value = fn(expr, fallback=None)
        except Exception as e:
            raise LookupError(f"no hint for {expr}: {e}") from None
        if value is None:
            raise LookupError(f"no hint for {expr}")
        return int(value)
    return int(expr)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def _is_transposed(strides: tuple[int, ...], sizes: tuple[int, ...]) -> bool:
    # Column-major in the last two dims: the row index moves fastest.
    return strides[-2] == 1 and strides[-1] != 1 and sizes[-2] > 1


def problem_from_nodes(op: str, input_nodes: list[Any], out_dtype: Any, require_hints: bool = False) -> Problem:
    """The Problem of an autotuned GEMM from Inductor's input IR nodes (sizes hinted)."""
    _hint = functools.partial(_hint_impl, require=require_hints)
    bias = None
    nodes = list(input_nodes)
    if op in ("addmm", "baddbmm"):
        bias, nodes = nodes[0], nodes[1:]
    a, b = nodes[0], nodes[1]
    size_a = tuple(_hint(s) for s in a.get_size())
    size_b = tuple(_hint(s) for s in b.get_size())
    strides_a = tuple(_hint(s) for s in a.get_stride())
    strides_b = tuple(_hint(s) for s in b.get_stride())
    batch = size_a[0] if len(size_a) == 3 else 1
    bias_shape = None
    if bias is not None:
        bias_size = tuple(_hint(s) for s in bias.get_size())
        bias_stride = tuple(_hint(s) for s in bias.get_stride())
        # Inductor expands the bias to the output's shape; broadcast dims have stride 0.
        bias_shape = tuple(1 if st == 0 else sz for sz, st in zip(bias_size, bias_stride))
    return Problem(
        op=op,
        B=batch,
        M=size_a[-2],
        N=size_b[-1],
        K=size_a[-1],
        dtype_a=_dtype_name(a.get_dtype()),
        dtype_b=_dtype_name(b.get_dtype()),
        dtype_out=_dtype_name(out_dtype),
        transpose_a=_is_transposed(strides_a, size_a),
        transpose_b=_is_transposed(strides_b, size_b),
        strides_a=strides_a,
        strides_b=strides_b,
        bias_shape=bias_shape,
    )


def _selector_savers() -> list:
    from torch._inductor import select_algorithm

    getter = getattr(select_algorithm, "get_algorithm_selector_cache", None)
    cache = getter() if getter is not None else None
    savers = getattr(cache, "feedback_saver_fns", None)
    if savers is None:
        raise RuntimeError(
            "torch-diode: this torch has no AlgorithmSelectorCache.feedback_saver_fns; "
            "recording needs torch >= 2.10"
        )
    return savers


class Collector:
    """Records autotuned GEMM choices from torch.compile into a dataset file.

    Use as a context manager or with :meth:`start` / :meth:`stop`. An existing file at ``path``
    is loaded and extended (a resumed run adds to it). ``flush_every`` GEMMs the file is
    rewritten atomically. ``stats`` counts recorded GEMMs, skipped ops and errors.

    From creation to :meth:`stop` (or :meth:`close`) the collector holds the file's writer lock
    (:class:`~torch_diode.types.DatasetWriter`): a second writer of the same file is refused with
    DatasetLockedError rather than overwriting this one's data.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        flush_every: int = 1,
        ops: tuple[str, ...] = RECORDED_OPS,
        disable_caches: bool = True,
        settings: dict[str, Any] | None = None,
        suspend_diode: bool = True,
    ):
        self.path = Path(path)
        self.flush_every = max(1, flush_every)
        self.ops = tuple(ops)
        self.disable_caches = disable_caches
        self.suspend_diode = suspend_diode
        self._suspended: list[Any] = []
        self._writer = DatasetWriter(self.path)
        try:
            self.dataset = self._writer.load() or Dataset()
        except BaseException:
            self._writer.close()
            raise
        self.dataset.metadata.setdefault("sources", []).append(
            {"tool": "torch_diode.collect", "settings": dict(settings or {})}
        )
        self.stats: Counter[str] = Counter()
        self._saved_config: dict[str, Any] = {}
        self._active = False
        self._pending = 0
        self._hardware: dict[str, Hardware] = {}
        # The exact object added to Inductor's list, so that stop() removes only ours.
        self._saver = self._on_feedback

    # ----- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "Collector":
        if self._active:
            return self
        from torch._inductor import config as inductor_config

        savers = _selector_savers()  # an unsupported torch fails here, before anything changes
        self.reopen()
        if self.suspend_diode:
            # record Inductor's own autotuning: with diode's handler in place (e.g. registered on
            # import on a GPU with a shipped model) Inductor would benchmark diode's pick only
            from ..integration.install import suspend_diode_choices

            self._suspended = suspend_diode_choices()
        if self.disable_caches:
            for key, value in _CACHE_OFF.items():
                self._saved_config[key] = getattr(inductor_config, key)
                setattr(inductor_config, key, value)
        savers.append(self._saver)
        self._active = True
        logger.info("torch-diode: recording autotuned GEMMs into %s", self.path)
        return self

    def stop(self) -> Dataset:
        if not self._active:
            self._writer.close()  # never started: nothing recorded to write
            return self.dataset
        from torch._inductor import config as inductor_config

        savers = _selector_savers()
        for i in range(len(savers) - 1, -1, -1):
            if savers[i] is self._saver:
                del savers[i]
        for key, value in self._saved_config.items():
            setattr(inductor_config, key, value)
        self._saved_config.clear()
        if self._suspended:
            from ..integration.install import resume_diode_choices

            resume_diode_choices(self._suspended)
            self._suspended = []
        self._active = False
        self.close()
        logger.info("torch-diode: recording stopped: %s", dict(self.stats))
        return self.dataset

    def close(self) -> None:
        """Writes the file and gives up its lock (done by :meth:`stop`)."""
        if self._writer.locked:
            try:
                self.flush()
            finally:
                self._writer.close()

    def __enter__(self) -> "Collector":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def flush(self) -> None:
        if not self._writer.locked:
            raise RuntimeError(f"{self.path}: the collector is closed; reopen() takes the file back")
        self._writer.save(self.dataset)
        self._pending = 0

    def reopen(self) -> None:
        """The file's lock again after :meth:`close`, and the file as it is now (it holds all that
        this collector had when it let go, and whatever another writer added since)."""
        if not self._writer.locked:
            self._writer.acquire()
            self.dataset = self._writer.load() or self.dataset

    # ----- the saver -----------------------------------------------------------------------------
    def _on_feedback(self, timings: dict, name: str, input_nodes: Any, choices: Any = None, *rest: Any) -> None:
        # Called inside Inductor's lowering: it must never raise into torch.compile.
        try:
            self.record(timings, name, input_nodes, choices)
        except Exception:
            self.stats["errors"] += 1
            logger.exception("torch-diode: could not record the timings of %s", name)

    def _hardware_of(self, node: Any) -> Hardware:
        from ..hardware import detect_hardware

        device = node.get_device()
        key = str(device)
        if key not in self._hardware:
            self._hardware[key] = detect_hardware(device)
        return self._hardware[key]

    def record(self, timings: dict, name: str, input_nodes: Any, choices: Any = None) -> Problem | None:
        """Adds one autotune result (``timings``: ChoiceCaller -> milliseconds)."""
        if name not in self.ops:
            self.stats[f"skipped_{name}"] += 1
            return None
        caller_list = list(choices) if choices else list(timings)
        out_dtype = caller_list[0].layout.dtype
        problem = problem_from_nodes(name, list(input_nodes), out_dtype)
        timed = []
        for choice, time_ms in timings.items():
            config = config_from_choice(choice)
            if time_ms is None or not math.isfinite(time_ms) or time_ms <= 0:
                timed.append(TimedConfig.failure(config))
                self.stats["failed_choices"] += 1
            else:
                timed.append(TimedConfig(config, float(time_ms) * 1000.0))
        # Choices that failed to precompile are dropped from `timings` but listed in `choices`.
        timed_ids = {id(c) for c in timings}
        for choice in caller_list:
            if id(choice) not in timed_ids:
                timed.append(TimedConfig.failure(config_from_choice(choice)))
                self.stats["failed_choices"] += 1
        self.dataset.add(self._hardware_of(list(input_nodes)[-1]), problem, timed)
        self.stats["gemms"] += 1
        self.stats["choices"] += len(timed)
        self._pending += 1
        if self._pending >= self.flush_every:
            self.flush()
        logger.debug("torch-diode: recorded %s with %d choices", problem.short(), len(timed))
        return problem


def collect(path: str | os.PathLike, **kwargs: Any) -> Collector:
    """Records every autotuned mm/addmm/bmm/baddbmm while active. See :class:`Collector`."""
    return Collector(path, **kwargs)

"""Where diode plugs into Inductor: the choice-handler stack and the autotune feedback savers.

A handler (an InductorChoices) is installed where torch has
``torch._inductor.config.inductor_choices_class`` (2.11 and later), so every compile thread uses
it, as an :class:`InstalledChoices`: the FX-graph cache key holds the handler's ``uuid()`` (a
cached graph compiled without it, or with another model or settings, is not reused), whether torch
asks the factory for ``uuid()`` (``_cache_config_factory_keys``, 2.13) or pickles the config
(2.11: a lambda there makes Inductor log "Failed to pickle cache key" and bypass the cache).
Elsewhere it is set for the current thread with ``V.set_choices_handler`` and the FX-graph cache
is turned off while it is installed, since a cache hit would skip it. :func:`uninstall_handler`
restores every value the install changed; installs nest as a stack.

Installing also applies Inductor's rule for its compile workers' ptxas to this process
(:func:`use_worker_ptxas`, the ``worker_ptxas`` setting).

A feedback saver is called by Inductor's algorithm selector with every autotune result; the
recorder adds one while it records.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

_installed: list[dict[str, Any]] = []  # a stack: nested installs restore in order
_UNSET = object()


class InstalledChoices:
    """``inductor_choices_class``'s value while ``handler`` is installed: calling it gives the
    handler (as Inductor does for each compile thread), and its ``uuid()`` and pickled form are
    the handler's ``uuid()`` at the time Inductor computes a cache key. Copies are the object
    itself (Inductor copies its config)."""

    def __init__(self, handler: Any):
        self.handler = handler

    def __call__(self) -> Any:
        return self.handler

    def uuid(self) -> str:
        return self.handler.uuid()

    def __reduce__(self) -> tuple:
        return _unpickled_choices, (self.uuid(),)

    def __copy__(self) -> InstalledChoices:
        return self

    def __deepcopy__(self, memo: dict) -> InstalledChoices:
        return self

    def __repr__(self) -> str:
        return f"InstalledChoices({self.uuid()})"


def _unpickled_choices(uuid: str) -> InstalledChoices | None:
    """A pickled InstalledChoices read back: the installed one of that identity, else None
    (Inductor's default choices: the handler is not in this process)."""
    return next(
        (r["factory"] for r in reversed(_installed) if r["factory"] is not None and r["factory"].uuid() == uuid), None
    )


def _current_handler() -> Any:
    """The handler set on this thread, or _UNSET: Inductor's ``_get_handler`` would instead make
    and install a default one, and restoring that object is not the same as restoring "unset"."""
    from torch._inductor.virtualized import _choices, threadlocal

    return getattr(threadlocal, _choices._key, _UNSET)


def use_worker_ptxas() -> str | None:
    """Makes Triton compile in this process with the ptxas that Inductor's compile workers use, by
    Inductor's own rule for them (``torch._inductor.runtime.compile_tasks._set_triton_ptxas_path``:
    ``TRITON_PTXAS_PATH`` is set to torch's bundled ptxas where torch ships one and the variable is
    unset). Triton's cache key holds the ptxas version; Inductor benchmarks the choices of a
    decision with several (an unsure one) by loading each kernel in this process, and with another
    ptxas than the workers' it misses the kernels they compiled and compiles each again, one after
    the other. Triton reads the version once per process, the first time it keys a kernel
    (Inductor keys its kernels as it generates them), and Inductor applies the same rule in this
    process only when it compiles a kernel here (before its pool is up), after it has keyed it: a
    process that compiled before this call may hold the version of another ptxas than its path.
    So the memos of the version (Triton's, its PTX features, and Inductor's backend and its hash)
    are cleared, and the compiles that start after this key with the path's. Returns
    ``TRITON_PTXAS_PATH`` afterwards (None: unset, Triton's own). Never raises: the handler works
    without it, at the cost of those compiles."""
    try:
        from torch._inductor.runtime.compile_tasks import _set_triton_ptxas_path
    except ImportError as e:  # a torch without the rule: nothing to align with
        logger.debug("torch-diode: Inductor's compile workers' ptxas rule not found (%s)", e)
    else:
        try:
            _set_triton_ptxas_path()
        except Exception as e:  # noqa: BLE001 - an install never fails on it
            logger.warning("torch-diode: could not apply Inductor's compile workers' ptxas (%s)", e)
        _forget_ptxas_version()
    return os.environ.get("TRITON_PTXAS_PATH")


# The memos of the ptxas version: (module, attribute path) of functools caches.
_PTXAS_VERSION_MEMOS = (
    ("triton.backends.nvidia.compiler", "get_ptxas_version"),
    ("triton.backends.nvidia.compiler", "get_features"),  # the PTX version that ptxas takes
    ("triton.backends.nvidia.compiler", "CUDABackend.hash"),
    ("torch.utils._triton", "triton_backend"),
    ("torch.utils._triton", "triton_hash_with_backend"),
)


def _forget_ptxas_version() -> None:
    """Clears the memos of the ptxas version in the modules that are loaded (one not loaded yet has
    none); a memo another version lacks is passed over."""
    for module, path in _PTXAS_VERSION_MEMOS:
        memo = sys.modules.get(module)
        for name in path.split("."):
            memo = getattr(memo, name, None)
        if hasattr(memo, "cache_clear"):
            memo.cache_clear()


def install_handler(handler: Any, enable_gemm_autotune: bool, with_ptxas: bool = True) -> None:
    """Makes ``handler`` Inductor's choice handler. ``enable_gemm_autotune`` also sets Inductor's
    ``max_autotune_gemm`` so that plain ``torch.compile`` offers GEMM candidates to it;
    ``with_ptxas`` applies ``config.worker_ptxas`` (:func:`use_worker_ptxas`)."""
    from torch._inductor import config as inductor_config
    from torch._inductor.virtualized import V

    record: dict[str, Any] = {
        "handler": handler,
        "before": _current_handler(),
        "config": {},
        "enable_gemm_autotune": enable_gemm_autotune,
        "factory": None,
    }
    if hasattr(inductor_config, "inductor_choices_class"):
        record["config"]["inductor_choices_class"] = inductor_config.inductor_choices_class
        record["factory"] = inductor_config.inductor_choices_class = InstalledChoices(handler)
    else:
        record["config"]["fx_graph_cache"] = inductor_config.fx_graph_cache
        inductor_config.fx_graph_cache = False
    if enable_gemm_autotune:
        record["config"]["max_autotune_gemm"] = inductor_config.max_autotune_gemm
        inductor_config.max_autotune_gemm = True
    V.set_choices_handler(handler)
    _installed.append(record)
    from .. import config

    if config.worker_ptxas and with_ptxas:
        use_worker_ptxas()


def uninstall_handler() -> bool:
    """Undoes the last install (handler and Inductor config values). False if none was installed."""
    from torch._inductor import config as inductor_config
    from torch._inductor.virtualized import V

    if not _installed:
        return False
    record = _installed.pop()
    for key, value in record["config"].items():
        setattr(inductor_config, key, value)
    if record["before"] is _UNSET:
        from torch._inductor.virtualized import _choices, threadlocal

        if hasattr(threadlocal, _choices._key):
            delattr(threadlocal, _choices._key)
    else:
        V.set_choices_handler(record["before"])
    return True


def installed_handler() -> Any:
    """The handler of the last install, or None."""
    return _installed[-1]["handler"] if _installed else None


def suspend_handlers() -> list[Any]:
    """Takes the installed handlers out, innermost first, while one of them is the handler in
    force, restoring what was there before; hand the result to :func:`resume_handlers` to put
    them back. The recorder does this so that it records Inductor's own autotuning."""
    suspended = []
    # only while an installed handler is the one in force: a handler set on top of it stays untouched
    while _installed and _current_handler() is _installed[-1]["handler"]:
        suspended.append(_installed[-1])
        uninstall_handler()
    return suspended


def resume_handlers(suspended: list[Any]) -> None:
    for record in reversed(suspended):
        install_handler(record["handler"], record["enable_gemm_autotune"])


def feedback_savers() -> list[Callable[..., None]]:
    """Inductor's list of autotune feedback savers (``AlgorithmSelectorCache.feedback_saver_fns``)."""
    from torch._inductor import select_algorithm

    getter = getattr(select_algorithm, "get_algorithm_selector_cache", None)
    cache = getter() if getter is not None else None
    savers = getattr(cache, "feedback_saver_fns", None)
    if savers is None:
        raise RuntimeError(
            "torch-diode: this torch has no AlgorithmSelectorCache.feedback_saver_fns; recording needs torch >= 2.10"
        )
    return savers


def set_inductor_config(values: dict[str, Any]) -> dict[str, Any]:
    """Sets Inductor config values; returns the values they replace (to set back)."""
    from torch._inductor import config as inductor_config

    before = {key: getattr(inductor_config, key) for key in values}
    for key, value in values.items():
        setattr(inductor_config, key, value)
    return before


def check_cpu_isa_with_caches() -> None:
    """Has Inductor find the CPU's vector ISAs now, outside a compile. It builds a small C++ kernel
    per ISA once per process: inside a compile with ``force_disable_caches`` it builds them in a
    new temporary folder every time, where outside one it keeps them in its cache folder for the
    next process. The GEMMs measured are compiled and timed as before: only the ISA checks' builds
    are kept."""
    try:
        from torch._inductor import cpu_vec_isa

        cpu_vec_isa.valid_vec_isa_list()  # functools.cache: the process keeps the answer
    except Exception:  # no C++ compiler, say: Inductor meets the same when it compiles, and says so
        logger.debug("torch-diode: Inductor's CPU ISA check failed", exc_info=True)

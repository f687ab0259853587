"""Where diode plugs into Inductor: the choice-handler stack and the autotune feedback savers.

A handler (an InductorChoices) is installed where torch has
``torch._inductor.config.inductor_choices_class`` (2.13), so every compile thread uses it and the
FX-graph cache key includes its ``uuid()`` (a cached graph compiled without it is not reused).
Elsewhere it is set for the current thread with ``V.set_choices_handler`` and the FX-graph cache
is turned off while it is installed, since a cache hit would skip it. :func:`uninstall_handler`
restores every value the install changed; installs nest as a stack.

A feedback saver is called by Inductor's algorithm selector with every autotune result; the
recorder adds one while it records.
"""

from __future__ import annotations

from typing import Any, Callable

_installed: list[dict[str, Any]] = []  # a stack: nested installs restore in order
_UNSET = object()


def _current_handler() -> Any:
    """The handler set on this thread, or _UNSET: Inductor's ``_get_handler`` would instead make
    and install a default one, and restoring that object is not the same as restoring "unset"."""
    from torch._inductor.virtualized import _choices, threadlocal

    return getattr(threadlocal, _choices._key, _UNSET)


def install_handler(handler: Any, enable_gemm_autotune: bool) -> None:
    """Makes ``handler`` Inductor's choice handler. ``enable_gemm_autotune`` also sets Inductor's
    ``max_autotune_gemm`` so that plain ``torch.compile`` offers GEMM candidates to it."""
    from torch._inductor import config as inductor_config
    from torch._inductor.virtualized import V

    record: dict[str, Any] = {"handler": handler, "before": _current_handler(), "config": {},
                              "enable_gemm_autotune": enable_gemm_autotune}
    if hasattr(inductor_config, "inductor_choices_class"):
        record["config"]["inductor_choices_class"] = inductor_config.inductor_choices_class
        inductor_config.inductor_choices_class = lambda: handler
    else:
        record["config"]["fx_graph_cache"] = inductor_config.fx_graph_cache
        inductor_config.fx_graph_cache = False
    if enable_gemm_autotune:
        record["config"]["max_autotune_gemm"] = inductor_config.max_autotune_gemm
        inductor_config.max_autotune_gemm = True
    V.set_choices_handler(handler)
    _installed.append(record)


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
            "torch-diode: this torch has no AlgorithmSelectorCache.feedback_saver_fns; "
            "recording needs torch >= 2.10"
        )
    return savers


def set_inductor_config(values: dict[str, Any]) -> dict[str, Any]:
    """Sets Inductor config values; returns the values they replace (to set back)."""
    from torch._inductor import config as inductor_config

    before = {key: getattr(inductor_config, key) for key in values}
    for key, value in values.items():
        setattr(inductor_config, key, value)
    return before

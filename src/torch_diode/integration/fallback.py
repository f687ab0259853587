"""Why the handler hands Inductor its stock choices: :class:`Fallback` (diode does not decide a
GEMM, counted by reason in the stats) and the two signals inside the hook: an exception to raise
as it is (:class:`PassThrough`) and a fallback already counted (:class:`FellBack`)."""

from __future__ import annotations


class Fallback(Exception):
    """Diode does not decide this GEMM; ``reason`` is counted in the stats. ``error``: a failure
    of diode (its features, model or decision), which raises where ``enable_fallback`` is off; else
    a GEMM the model does not cover."""

    def __init__(self, reason: str, detail: str = "", error: bool = False):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.error = error


class PassThrough(Exception):
    """An exception (``error``) the hook raises as it is: Inductor's own (generating its stock
    candidates), or one of diode's already counted that must raise (``enable_fallback`` off)."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


class FellBack(Exception):
    """Diode does not decide this GEMM, the fallback already counted: the hook hands Inductor its
    stock candidates."""


__all__ = ["Fallback", "FellBack", "PassThrough"]

"""Inductor's objects -> the data model: IR nodes -> Problem, template kwargs, ChoiceCallers and
KernelTemplateChoices -> KernelConfig, and a KernelConfig put back into a KernelTemplateChoice.

The recorder, the fast sweep and the choice handler all convert here, so that a config recorded,
measured and chosen is one and the same KernelConfig.
"""

from __future__ import annotations

import functools
from typing import Any

from ..types import KernelConfig, Problem

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
        return ktc_config(ktc)
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


def ktc_config(ktc: Any) -> KernelConfig:
    """The KernelConfig of an Inductor KernelTemplateChoice."""
    return config_from_kwargs(ktc.template.uid, {**ktc.params.to_kwargs(), **(ktc.extra_kwargs or {})})


def ktc_with_config(base: Any, config: KernelConfig) -> Any:
    """A KernelTemplateChoice of ``base``'s template, inputs and layout with ``config``'s tile
    parameters, built as Inductor's lookup table builds its choices; None unless it converts back
    to ``config``."""
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    kwargs = {
        **base.params.to_kwargs(),
        "BLOCK_M": config.block_m,
        "BLOCK_N": config.block_n,
        "BLOCK_K": config.block_k,
        "GROUP_M": config.group_m,
        "num_stages": config.num_stages,
        "num_warps": config.num_warps,
        "EVEN_K": config.even_k,
    }
    ktc = KernelTemplateChoice(
        template=base.template,
        params=DictKernelTemplateParams(kwargs),
        extra_kwargs=base.extra_kwargs,
        layout=base.layout,
        inputs=base.inputs,
    )
    return ktc if ktc_config(ktc) == config else None

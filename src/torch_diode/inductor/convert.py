"""Inductor's objects -> the data model: IR nodes -> Problem, template kwargs, ChoiceCallers and
KernelTemplateChoices -> KernelConfig, and a KernelConfig put back into a KernelTemplateChoice.

The recorder, the fast sweep and the choice handler all convert here, so that a config recorded,
measured and chosen is one and the same KernelConfig.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..selection.dynamic import SizeRange, size_scenarios
from ..types import BIAS_OPS, MAX_SIZE, KernelConfig, Problem

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


def _hint_impl(expr: Any, require: bool = False, values: Mapping[Any, int] | None = None) -> int:
    """A concrete size: the expression itself when static, else Inductor's hint for it. With
    ``require``, a symbolic size without a hint raises LookupError instead of a guess. ``values``:
    sizes of symbols to put in first (a dynamic GEMM at another size than the hint)."""
    if values and getattr(expr, "free_symbols", None):
        expr = expr.subs({s: v for s, v in values.items() if s in expr.free_symbols})
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


def problem_from_nodes(
    op: str,
    input_nodes: list[Any],
    out_dtype: Any,
    require_hints: bool = False,
    values: Mapping[Any, int] | None = None,
) -> Problem:
    """The Problem of an autotuned GEMM from Inductor's input IR nodes (sizes hinted, or with the
    symbols of ``values`` at those sizes)."""
    _hint = functools.partial(_hint_impl, require=require_hints, values=values)
    bias = None
    nodes = list(input_nodes)
    if op in BIAS_OPS:
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


def size_symbols(input_nodes: list[Any]) -> list[Any]:
    """The free symbols of a GEMM's input sizes and strides (none: static sizes), by name."""
    symbols: set = set()
    for node in input_nodes:
        for expr in (*node.get_size(), *node.get_stride()):
            symbols |= set(getattr(expr, "free_symbols", ()))
    return sorted(symbols, key=str)


def _bound(value: Any) -> int | None:
    """A finite integer bound of a value range, else None (Inductor's int_oo, sympy's oo)."""
    if value is None or getattr(value, "is_infinite", False) or "oo" in str(value):  # int_oo, sympy's oo
        return None  # (Inductor's int_oo says is_finite True)
    try:
        bound = int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return bound if 1 <= bound <= MAX_SIZE else None


def size_range(symbol: Any) -> SizeRange:
    """The hint and the bounds Inductor's shape environment holds for ``symbol`` (from
    ``mark_dynamic(min=, max=)``, or 2 and none for an automatic dynamic size). Raises LookupError
    where the symbol has no hint."""
    from torch._inductor.virtualized import V

    hint = _hint_impl(symbol, require=True)
    value_range = getattr(getattr(V.graph.sizevars, "shape_env", None), "var_to_range", {}).get(symbol)
    lower = _bound(getattr(value_range, "lower", None)) or 1
    return SizeRange(hint=hint, lower=min(lower, hint), upper=_bound(getattr(value_range, "upper", None)))


@dataclass(frozen=True)
class DynamicSizes:
    """A GEMM with symbolic sizes at the sizes it is decided over (``selection.dynamic``): the
    Problem of each scenario, the hints' first, and ``key``, what the scenarios depend on."""

    problems: tuple[Problem, ...]
    key: tuple


def dynamic_sizes(op: str, input_nodes: list[Any], out_dtype: Any, distribution: Sequence[int]) -> DynamicSizes | None:
    """The scenarios of a GEMM whose sizes are symbolic (None where they are static): each symbol
    over its range and ``distribution`` (:func:`torch_diode.selection.size_scenarios`); scenarios
    whose sizes no Problem holds (past the core's bounds) are left out."""
    symbols = size_symbols(input_nodes)
    if not symbols:
        return None
    ranges = {str(s): size_range(s) for s in symbols}
    by_name = {str(s): s for s in symbols}
    problems: list[Problem] = []
    for scenario in size_scenarios(ranges, distribution):
        try:
            values = {by_name[name]: size for name, size in scenario.items()}
            problems.append(problem_from_nodes(op, input_nodes, out_dtype, require_hints=True, values=values))
        except ValueError:
            if not problems:
                raise
    key = (tuple(sorted((name, r.hint, r.lower, r.upper) for name, r in ranges.items())), tuple(distribution))
    return DynamicSizes(tuple(dict.fromkeys(problems)), key)


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

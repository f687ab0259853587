"""The one feature path: data-model objects -> integer rows -> C++ features (torch_diode._C).

Training, validation, prediction and the Inductor choice handler all call :func:`featurize`
(or :func:`featurize_many`, or :func:`featurize_rows` on configs already turned into their
:func:`config_rows`); nothing else computes features.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import numpy as np

from ._C import FEATURE_NAMES as _FEATURE_NAMES
from ._C import FEATURE_VERSION as _FEATURE_VERSION
from ._C import (
    compute_features,
    compute_features_batch,
    config_columns,
    dtype_names,
    op_names,
    problem_columns,
)
from ._C import template_kind as _template_kind
from ._C import template_kind_names as _template_kind_names
from .types import Hardware, KernelConfig, Problem

FEATURE_VERSION: int = _FEATURE_VERSION
FEATURE_NAMES: tuple[str, ...] = _FEATURE_NAMES
NUM_FEATURES = len(FEATURE_NAMES)

_OP_CODE = {name: i for i, name in enumerate(op_names())}
_DTYPE_CODE = {name: i for i, name in enumerate(dtype_names())}


@cache
def template_kind(template_id: str) -> int:
    return _template_kind(template_id)


def template_kind_names() -> tuple[str, ...]:
    """The engine's template kinds, by code (``template_kind`` maps a template id to one)."""
    return tuple(_template_kind_names())


def problem_row(problem: Problem) -> np.ndarray:
    return np.array(
        [
            _OP_CODE[problem.op],
            problem.B,
            problem.M,
            problem.N,
            problem.K,
            _DTYPE_CODE[problem.dtype_a],
            _DTYPE_CODE[problem.dtype_b],
            _DTYPE_CODE[problem.dtype_out],
            int(problem.transpose_a),
            int(problem.transpose_b),
            int(problem.has_bias),
            *problem.leading_dims,
        ],
        dtype=np.int64,
    )


def config_row(config: KernelConfig) -> list[int]:
    return [
        template_kind(config.template_id),
        config.block_m or 0,
        config.block_n or 0,
        config.block_k or 0,
        config.group_m or 0,
        config.num_stages or 0,
        config.num_warps or 0,
        int(config.even_k),
        int(config.allow_tf32),
        int(config.use_fast_accum),
        k_split(config),
    ]


def k_split(config: KernelConfig) -> int:
    """decompose_k's split of K (the number of parts, Inductor's ``k_split``); 0 for a config
    without one."""
    return int(dict(config.extras).get("k_split", 0) or 0)


def config_rows(configs: Sequence[KernelConfig]) -> np.ndarray:
    rows = np.array([config_row(c) for c in configs], dtype=np.int64)
    return rows.reshape(len(configs), len(config_columns()))


def hardware_row(hardware: Hardware) -> np.ndarray:
    return np.array([hardware.sm_count, hardware.smem_per_block_bytes], dtype=np.int64)


def featurize(problem: Problem, configs: Sequence[KernelConfig], hardware: Hardware) -> np.ndarray:
    """float32[len(configs), NUM_FEATURES]: the model input for one problem and its configs."""
    return featurize_rows(problem, config_rows(configs), hardware)


def featurize_rows(problem: Problem, rows: np.ndarray, hardware: Hardware) -> np.ndarray:
    """:func:`featurize` of configs given as their :func:`config_rows`."""
    return compute_features(problem_row(problem), rows, hardware_row(hardware))


@cache
def _aten_kinds() -> tuple[int, ...]:
    return tuple(code for code, name in enumerate(template_kind_names()) if name.startswith("aten_"))


def is_extern(rows: np.ndarray) -> np.ndarray:
    """Which configs, given by their :func:`config_rows`, are extern (ATen/cuBLAS) choices: those
    of an ATen template kind. Having no block sizes is not enough: decompose_k and the CPU's C++
    template have none, and they compile kernels."""
    return np.isin(np.asarray(rows).reshape(-1, len(config_columns()))[:, 0], _aten_kinds())


def is_aten(config: KernelConfig) -> bool:
    """:func:`is_extern` of one config."""
    return template_kind(config.template_id) in _aten_kinds()


class Candidates:
    """The candidates of one decision as parts, each its configs' :func:`config_rows` and a
    function making the KernelConfig of a row: every candidate is featurized, KernelConfig
    objects are made only for those asked for (the Triton template's ~1,400 enumerated ones
    would cost more than the rest of a decision)."""

    def __init__(self, parts: Sequence[tuple[np.ndarray, Callable[[int], KernelConfig]]]):
        columns = len(config_columns())
        self.rows = (
            np.concatenate([r.reshape(-1, columns) for r, _ in parts]) if parts else np.zeros((0, columns), np.int64)
        )
        self._starts = np.cumsum([0] + [len(r) for r, _ in parts])[:-1]
        self._makers = [make for _, make in parts]

    @classmethod
    def of(cls, configs: Sequence[KernelConfig]) -> Candidates:
        return cls([(config_rows(configs), configs.__getitem__)])

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def extern(self) -> np.ndarray:
        return is_extern(self.rows)

    def locate(self, i: int) -> tuple[int, int]:
        """(part, row within the part) of candidate ``i``."""
        part = int(np.searchsorted(self._starts, i, side="right")) - 1
        return part, int(i - self._starts[part])

    def config(self, i: int) -> KernelConfig:
        part, j = self.locate(i)
        return self._makers[part](j)


def featurize_many(
    problems: Sequence[Problem], problem_index: np.ndarray, configs: Sequence[KernelConfig], hardware: Hardware
) -> np.ndarray:
    """Features of ``configs[i]`` paired with ``problems[problem_index[i]]``, in one C++ call."""
    if not configs:
        return np.zeros((0, NUM_FEATURES), dtype=np.float32)
    rows = np.stack([problem_row(p) for p in problems]) if problems else np.zeros((0, len(problem_columns())), np.int64)
    return compute_features_batch(
        rows, np.ascontiguousarray(problem_index, dtype=np.int64), config_rows(configs), hardware_row(hardware)
    )

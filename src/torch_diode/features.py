"""The one feature path: data-model objects -> integer rows -> C++ features (torch_diode._C).

Training, validation, prediction and the Inductor choice handler all call :func:`featurize`
(or :func:`featurize_many`); nothing else computes features.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from . import _C
from .types import DTYPES, OPS, Hardware, KernelConfig, Problem

FEATURE_VERSION: int = _C.FEATURE_VERSION
FEATURE_NAMES: tuple[str, ...] = tuple(_C.feature_names())
NUM_FEATURES = len(FEATURE_NAMES)

_OP_CODE = {name: i for i, name in enumerate(_C.op_names())}
_DTYPE_CODE = {name: i for i, name in enumerate(_C.dtype_names())}
assert tuple(_C.op_names()) == OPS and tuple(_C.dtype_names()) == DTYPES, "C++/Python enums differ"


@lru_cache(maxsize=None)
def template_kind(template_id: str) -> int:
    return _C.template_kind(template_id)


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
    ]


def config_rows(configs: Sequence[KernelConfig]) -> np.ndarray:
    rows = np.array([config_row(c) for c in configs], dtype=np.int64)
    return rows.reshape(len(configs), len(_C.config_columns()))


def hardware_row(hardware: Hardware) -> np.ndarray:
    return np.array([hardware.sm_count, hardware.smem_per_block_bytes], dtype=np.int64)


def featurize(problem: Problem, configs: Sequence[KernelConfig], hardware: Hardware) -> np.ndarray:
    """float32[len(configs), NUM_FEATURES]: the model input for one problem and its configs."""
    return _C.compute_features(problem_row(problem), config_rows(configs), hardware_row(hardware))


def featurize_many(
    problems: Sequence[Problem], problem_index: np.ndarray, configs: Sequence[KernelConfig], hardware: Hardware
) -> np.ndarray:
    """Features of ``configs[i]`` paired with ``problems[problem_index[i]]``, in one C++ call."""
    if not configs:
        return np.zeros((0, NUM_FEATURES), dtype=np.float32)
    rows = np.stack([problem_row(p) for p in problems]) if problems else np.zeros((0, len(_C.problem_columns())), np.int64)
    return _C.compute_features_batch(
        rows, np.ascontiguousarray(problem_index, dtype=np.int64), config_rows(configs), hardware_row(hardware)
    )

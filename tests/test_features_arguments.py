"""The C++ feature extractor's (torch_diode._C) arguments: the row layouts it takes and one clear
ValueError, naming the table, row and column, for every malformed input."""

from __future__ import annotations

import numpy as np
import pytest

from torch_diode import _C
from torch_diode.features import NUM_FEATURES, config_rows, problem_row
from torch_diode.types import DTYPES, KernelConfig, Problem

HW = np.array([132, 232448], dtype=np.int64)
GOOD_PROBLEM = np.array([0, 1, 128, 256, 64, 1, 1, 1, 0, 0, 0, 64, 256, 256], dtype=np.int64)
GOOD_CONFIG = np.array([[3, 64, 64, 32, 8, 3, 4, 1, 0, 0, 0]], dtype=np.int64)


def test_row_layouts():
    p = Problem("baddbmm", 4, 100, 200, 300, "bfloat16", "bfloat16", "float32", True, False)
    row = problem_row(p)
    assert row.dtype == np.int64 and row.shape == (len(_C.problem_columns()),)
    cols = dict(zip(_C.problem_columns(), row.tolist()))
    assert cols == {
        "op": 3, "batch": 4, "m": 100, "n": 200, "k": 300, "dtype_a": DTYPES.index("bfloat16"),
        "dtype_b": DTYPES.index("bfloat16"), "dtype_out": DTYPES.index("float32"),
        "transpose_a": 1, "transpose_b": 0, "has_bias": 1, "ld_a": 100, "ld_b": 200, "ld_out": 200,
    }  # fmt: skip
    c = config_rows([KernelConfig("triton::mm", 64, 32, 16, 8, 3, 4, True, False, True), KernelConfig("aten::mm")])
    assert c.shape == (2, len(_C.config_columns()))
    assert c[0].tolist() == [3, 64, 32, 16, 8, 3, 4, 1, 0, 1, 0]
    assert c[1].tolist() == [0] * 11
    split = config_rows([KernelConfig("decompose_k", extras={"k_split": 12})])
    assert dict(zip(_C.config_columns(), split[0].tolist())) == {
        "template_kind": list(_C.template_kind_names()).index("decompose_k"), "block_m": 0, "block_n": 0, "block_k": 0,
        "group_m": 0, "num_stages": 0, "num_warps": 0, "even_k": 0, "allow_tf32": 0, "use_fast_accum": 0,
        "k_split": 12,
    }  # fmt: skip


def _with(a: np.ndarray, index, value) -> np.ndarray:
    a = a.copy()
    a[index] = value
    return a


def test_good_arguments_work():
    out = _C.compute_features(GOOD_PROBLEM, GOOD_CONFIG, HW)
    assert out.shape == (1, NUM_FEATURES)


@pytest.mark.parametrize(
    "problem, configs, hardware, pattern",
    [
        (GOOD_PROBLEM[:10], GOOD_CONFIG, HW, r"problem must have 14 columns, got 10"),
        (np.append(GOOD_PROBLEM, 0), GOOD_CONFIG, HW, r"problem must have 14 columns, got 15"),
        (GOOD_PROBLEM[None, :], GOOD_CONFIG, HW, r"problem must have 1 dimension"),
        (GOOD_PROBLEM, GOOD_CONFIG[:, :10], HW, r"configs must have 11 columns, got 10"),
        (GOOD_PROBLEM, GOOD_CONFIG[0], HW, r"configs must have 2 dimension"),
        (_with(GOOD_PROBLEM, 2, 0), GOOD_CONFIG, HW, r"column 'm' is 0"),
        (_with(GOOD_PROBLEM, 4, -5), GOOD_CONFIG, HW, r"column 'k' is -5"),
        (_with(GOOD_PROBLEM, 1, 0), GOOD_CONFIG, HW, r"column 'batch' is 0"),
        (_with(GOOD_PROBLEM, 0, 4), GOOD_CONFIG, HW, r"column 'op' is 4"),
        (_with(GOOD_PROBLEM, 0, -1), GOOD_CONFIG, HW, r"column 'op' is -1"),
        (_with(GOOD_PROBLEM, 5, 8), GOOD_CONFIG, HW, r"column 'dtype_a' is 8"),
        (_with(GOOD_PROBLEM, 7, 99), GOOD_CONFIG, HW, r"column 'dtype_out' is 99"),
        (_with(GOOD_PROBLEM, 8, 2), GOOD_CONFIG, HW, r"column 'transpose_a' is 2"),
        (_with(GOOD_PROBLEM, 11, 0), GOOD_CONFIG, HW, r"column 'ld_a' is 0"),
        (_with(GOOD_PROBLEM, 13, -1), GOOD_CONFIG, HW, r"column 'ld_out' is -1"),
        (GOOD_PROBLEM, _with(GOOD_CONFIG, (0, 1), -16), HW, r"column 'block_m' is -16"),
        (GOOD_PROBLEM, _with(GOOD_CONFIG, (0, 2), -64), HW, r"column 'block_n' is -64"),
        (GOOD_PROBLEM, _with(GOOD_CONFIG, (0, 3), 0), HW, r"column 'block_k' is 0"),
        (GOOD_PROBLEM, _with(GOOD_CONFIG, (0, 5), 0), HW, r"column 'num_stages' is 0"),
        (GOOD_PROBLEM, _with(GOOD_CONFIG, (0, 6), 0), HW, r"column 'num_warps' is 0"),
        (GOOD_PROBLEM, _with(GOOD_CONFIG, (0, 0), 9), HW, r"column 'template_kind' is 9"),
        (GOOD_PROBLEM, _with(GOOD_CONFIG, (0, 7), 3), HW, r"column 'even_k' is 3"),
        (GOOD_PROBLEM, GOOD_CONFIG, np.array([0, 232448], np.int64), r"sm_count must be >= 1, got 0"),
        (GOOD_PROBLEM, GOOD_CONFIG, np.array([132, 0], np.int64), r"smem_per_block_bytes must be >= 1"),
        (GOOD_PROBLEM, GOOD_CONFIG, np.array([132], np.int64), r"hardware must have 2 entries"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_arguments_raise_value_error(problem, configs, hardware, pattern):
    with pytest.raises(ValueError, match=pattern):
        _C.compute_features(problem, configs, hardware)


def test_bad_row_is_named():
    configs = np.repeat(GOOD_CONFIG, 4, axis=0)
    configs[2, 5] = 0
    with pytest.raises(ValueError, match=r"configs row 2: column 'num_stages' is 0, expected 1\.\."):
        _C.compute_features(GOOD_PROBLEM, configs, HW)


def test_batch_bad_arguments():
    problems = np.stack([GOOD_PROBLEM, _with(GOOD_PROBLEM, 0, 2)])
    configs = np.repeat(GOOD_CONFIG, 3, axis=0)
    ok = _C.compute_features_batch(problems, np.array([0, 1, 1], np.int64), configs, HW)
    assert ok.shape == (3, NUM_FEATURES)
    with pytest.raises(ValueError, match=r"problem_index row 1: column 'index' is 2, expected 0\.\.1"):
        _C.compute_features_batch(problems, np.array([0, 2, 1], np.int64), configs, HW)
    with pytest.raises(ValueError, match=r"problem_index row 0: column 'index' is -1"):
        _C.compute_features_batch(problems, np.array([-1, 0, 1], np.int64), configs, HW)
    with pytest.raises(ValueError, match=r"problem_index has 2 entries, configs has 3 rows"):
        _C.compute_features_batch(problems, np.array([0, 1], np.int64), configs, HW)
    with pytest.raises(ValueError, match=r"problems must have 14 columns, got 13"):
        _C.compute_features_batch(problems[:, :13], np.array([0, 1, 1], np.int64), configs, HW)
    with pytest.raises(ValueError, match=r"problems row 1: column 'm' is 0"):
        _C.compute_features_batch(_with(problems, (1, 2), 0), np.array([0, 0, 0], np.int64), configs, HW)
    with pytest.raises(ValueError, match=r"problems must be a non-empty"):
        _C.compute_features_batch(np.zeros((0, 14), np.int64), np.zeros(0, np.int64), configs[:0], HW)


def test_untiled_row_with_zero_stages_is_fine():
    # num_stages 0 is an error only where the config is tiled (block_m > 0).
    aten = np.array([[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], np.int64)
    out = _C.compute_features(GOOD_PROBLEM, aten, HW)
    assert out.shape == (1, NUM_FEATURES)

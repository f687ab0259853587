"""Fuzzing the C++ core through its Python face (torch_diode._C).

Every array argument of every feature, inference and metrics entry point gets random arrays: any
dtype, any shape, NaN/inf/huge values, non-contiguous views, and things that are not arrays at
all; the model loader gets random bytes and mutations of the shipped model file. Each call must
either succeed with well-formed output or raise ValueError (ModelFormatError is one); any other
exception, or a crash, fails. Scalar arguments are fuzzed over the range of their C++ types (a
Python int outside it is refused by the binding with TypeError, as the stubs' types say).

The examples are derandomized and bounded for `make test`; DIODE_FUZZ_EXAMPLES=N runs N
examples per test instead (a longer search: DIODE_FUZZ_EXAMPLES=20000 pytest tests/test_fuzz_cpp.py).
The same inputs under AddressSanitizer and UBSan: csrc/tests/test_fuzz.cpp (`make test-cpp`).
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from torch_diode import _C
from torch_diode.features import NUM_FEATURES

SHIPPED_MODEL = Path(__file__).resolve().parents[1] / "src" / "torch_diode" / "models" / "NVIDIA-H100-matmul.diode"
EXAMPLES = int(os.environ.get("DIODE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    derandomize=True,
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

GOOD_PROBLEM = np.array([0, 1, 1000, 700, 1024, 1, 1, 1, 0, 0, 0, 1024, 700, 700], np.int64)
GOOD_CONFIG = np.array([[3, 128, 64, 32, 8, 3, 4, 1, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], np.int64)
GOOD_HARDWARE = np.array([132, 232448], np.int64)
INT64 = np.iinfo(np.int64)
EDGE_INTS = [INT64.min, -1, 0, 1, 2**31, 2**40, 2**40 + 1, 2**62, INT64.max]
EDGE_FLOATS = [0.0, -0.0, -1.0, 1e-300, 1e300, -1e300, np.inf, -np.inf, np.nan, 5e-324]

ENGINE = _C.Model.load(str(SHIPPED_MODEL))
SHIPPED_BYTES = SHIPPED_MODEL.read_bytes()


class _BadDType:
    """Not an array, with a dtype attribute that raises."""

    @property
    def dtype(self):
        raise RuntimeError("no dtype")


class _UnprintableDType:
    """Not an array, with a dtype that cannot be printed."""

    class _DType:
        def __str__(self):
            raise RuntimeError("no str")

    dtype = _DType()


def _not_contiguous(a: np.ndarray) -> np.ndarray:
    """The same values in a strided view (every other element of a doubled array)."""
    doubled = np.repeat(a, 2, axis=-1) if a.ndim else a
    return doubled[..., ::2] if a.ndim else doubled


@st.composite
def arrays(draw, valid: np.ndarray):
    """An argument meant to be like `valid`: `valid` itself with some entries replaced by edge or
    random values, cast to another dtype, reshaped, made non-contiguous; or any random array; or
    an object that is not an array."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.sampled_from([None, 3, "abc", [1, 2], object(), b"\x00", _BadDType(), _UnprintableDType()]))
    if kind == 1:
        dtype = draw(hnp.scalar_dtypes() | st.sampled_from([np.dtype("U3"), np.dtype("O")]))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=16))
        return draw(hnp.arrays(dtype, shape))
    a = valid.copy()
    if a.size and draw(st.booleans()):
        values = EDGE_INTS if a.dtype.kind == "i" else EDGE_FLOATS
        for _ in range(draw(st.integers(1, 3))):
            index = tuple(draw(st.integers(0, n - 1)) for n in a.shape)
            a[index] = draw(
                st.sampled_from(values) | (st.integers(INT64.min, INT64.max) if a.dtype.kind == "i" else st.floats())
            )
    if draw(st.integers(0, 3)) == 0:
        dtype = draw(
            st.sampled_from(
                ["int32", "int8", "uint64", "uint16", "bool", "float64", "float32", "float16", "complex64", ">i8"]
            )
        )
        with np.errstate(all="ignore"):
            a = a.astype(dtype)
    if draw(st.integers(0, 5)) == 0:
        a = a.reshape(draw(st.sampled_from([(-1,), (1, -1), (-1, 1), (1, 1, -1)])))
    if draw(st.integers(0, 5)) == 0:
        a = a[: draw(st.integers(0, max(0, a.shape[0] - 1)))] if a.ndim else a
    if draw(st.integers(0, 3)) == 0:
        a = _not_contiguous(a)
    if draw(st.integers(0, 9)) == 0:
        a = a.copy()
        a.flags.writeable = False
    return a


def _as_int64(a):
    """What the binding should compute on: a C-contiguous int64 copy of an integer array."""
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "iub":
        return None
    with np.errstate(all="ignore"):
        return np.ascontiguousarray(a, dtype=np.int64)


def _check_features(out: np.ndarray, rows: int) -> None:
    assert out.dtype == np.float32 and out.shape == (rows, NUM_FEATURES)
    assert np.isfinite(out).all()


@FUZZ
@given(problem=arrays(GOOD_PROBLEM), configs=arrays(GOOD_CONFIG), hardware=arrays(GOOD_HARDWARE))
def test_compute_features_and_predict(problem, configs, hardware):
    try:
        out = _C.compute_features(problem, configs, hardware)
    except ValueError:
        # The engine's one-call path validates the same way.
        with pytest.raises(ValueError):
            ENGINE.predict(problem, configs, hardware)
        return
    # Accepted inputs are integer arrays, read as their int64 values whatever their layout.
    args = [_as_int64(a) for a in (problem, configs, hardware)]
    assert all(a is not None for a in args)
    _check_features(out, args[1].shape[0])
    np.testing.assert_array_equal(out, _C.compute_features(*args))
    predicted = ENGINE.predict(problem, configs, hardware)
    assert predicted.dtype == np.float32 and predicted.shape == (args[1].shape[0],)
    assert np.isfinite(predicted).all()
    np.testing.assert_array_equal(predicted, ENGINE.predict(*args))


@FUZZ
@given(
    problems=arrays(np.stack([GOOD_PROBLEM, GOOD_PROBLEM])),
    problem_index=arrays(np.array([0, 1], np.int64)),
    configs=arrays(GOOD_CONFIG),
    hardware=arrays(GOOD_HARDWARE),
)
def test_compute_features_batch(problems, problem_index, configs, hardware):
    try:
        out = _C.compute_features_batch(problems, problem_index, configs, hardware)
    except ValueError:
        return
    _check_features(out, _as_int64(configs).shape[0])


@FUZZ
@given(features=arrays(np.linspace(-3, 40, 2 * NUM_FEATURES, dtype=np.float32).reshape(2, NUM_FEATURES)))
def test_predict_features(features):
    try:
        out = ENGINE.predict_features(features)
    except ValueError:
        return
    # Any float row is predicted (NaN in, NaN out); the result is that of the float32 copy.
    assert out.dtype == np.float32 and out.shape == (features.shape[0],)
    with np.errstate(all="ignore"):
        same = ENGINE.predict_features(np.ascontiguousarray(features, dtype=np.float32))
    np.testing.assert_array_equal(out, same)


@FUZZ
@given(
    measured=arrays(np.array([3.0, 1.0, 2.0, np.inf, 5.0])),
    predicted=arrays(np.array([0.1, 0.3, 0.2, 0.0, -1.0])),
    offsets=arrays(np.array([0, 3, 5], np.int64)),
    ks=st.lists(st.sampled_from(EDGE_INTS) | st.integers(-2, 8), max_size=4),
)
def test_ranking_metrics(measured, predicted, offsets, ks):
    try:
        out = _C.ranking_metrics(measured, predicted, offsets, ks)
    except ValueError:
        return
    P = _as_int64(offsets).shape[0] - 1
    assert set(out) == {"best_us", "top1_slowdown", "kendall_tau", "num_candidates"} | {f"top{k}_perf" for k in ks}
    for values in out.values():
        assert values.shape == (P,)
    ok = out["num_candidates"] > 0
    assert (out["top1_slowdown"][ok] >= 1).all()
    for k in ks:
        perf = out[f"top{k}_perf"][ok]
        assert ((perf >= 0) & (perf <= 1)).all()


@FUZZ
@given(
    leading_dim=st.sampled_from(EDGE_INTS) | st.integers(INT64.min, INT64.max),
    elem_bytes=st.integers(-(2**31), 2**31 - 1),
    dtype_code=st.sampled_from(EDGE_INTS) | st.integers(-2, 9),
    template_id=st.text(max_size=30),
)
def test_scalar_entry_points(leading_dim, elem_bytes, dtype_code, template_id):
    try:
        log2 = _C.row_alignment_log2(leading_dim, elem_bytes)
    except ValueError:
        assert leading_dim < 1 or elem_bytes < 1
    else:
        product = leading_dim * elem_bytes  # exact: Python ints
        assert log2 == min(4, (product & -product).bit_length() - 1)
    try:
        assert _C.dtype_bytes(dtype_code) in (1, 2, 4, 8)
    except ValueError:
        assert not 0 <= dtype_code < len(_C.dtype_names())
    assert 0 <= _C.template_kind(template_id) < len(_C.template_kind_names())


def _reseal(data: bytes) -> bytes:
    """The checksum recomputed, so that the checks behind it see the mutation."""
    if len(data) < 8:
        return data
    return data[:-8] + struct.pack("<Q", _C.fnv1a64(data[:-8]))


@st.composite
def model_bytes(draw):
    if draw(st.integers(0, 4)) == 0:
        return draw(st.binary(max_size=200) | st.binary(max_size=64).map(lambda b: b"DIODEMDL" + b))
    data = bytearray(SHIPPED_BYTES)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 4))
        if kind == 0 and data:  # one byte
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif kind == 1 and len(data) >= 52:  # a header word or a dim set to an edge
            at = draw(st.integers(8, 48))
            value = draw(st.sampled_from([0, 1, 2, 61, 62, 63, 64, 65536, 65537, 2**31 - 1, 2**32 - 1]))
            data[at : at + 4] = struct.pack("<I", value)
        elif kind == 2:  # truncated
            del data[draw(st.integers(0, len(data))) :]
        elif kind == 3:  # bytes appended or inserted
            at = draw(st.integers(0, len(data)))
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif len(data) >= 4:  # a float set to an edge value
            at = draw(st.integers(0, len(data) - 4)) & ~3
            data[at : at + 4] = struct.pack("<f", draw(st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -1.0, 3e38])))
    data = bytes(data)
    return _reseal(data) if draw(st.booleans()) else data


@FUZZ
@given(data=model_bytes())
def test_model_loader(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.diode"
        path.write_bytes(data)
        try:
            from_file = _C.Model.load(str(path))
        except _C.ModelFormatError as e:
            assert str(path) in str(e)
            from_file = None
    try:
        model = _C.Model.from_bytes(data, "fuzz.diode")
    except _C.ModelFormatError as e:
        assert from_file is None and "fuzz.diode" in str(e)
        return
    assert from_file is not None and model.dims == from_file.dims
    layers = len(model.dims) - 1
    for layer in (-1, 0, layers - 1, layers, 2**62):
        try:
            assert model.weight(layer).shape == (model.dims[layer + 1], model.dims[layer])
            assert model.bias(layer).shape == (model.dims[layer + 1],)
        except ValueError:
            assert not 0 <= layer < layers
    x = np.zeros((2, len(_C.FEATURE_NAMES)), np.float32)  # a row of every feature; the model reads its first
    assert model.predict_features(x).shape == (2,)
    assert model.feature_mean().shape == model.feature_std().shape == (model.num_features,)


@pytest.mark.parametrize("path", ["", "/nonexistent/m.diode", "/", "/dev/null"])
def test_model_loader_on_paths_that_are_not_model_files(path):
    with pytest.raises(_C.ModelFormatError):
        _C.Model.load(path)

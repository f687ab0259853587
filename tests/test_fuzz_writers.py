"""Writers refuse what readers refuse: for every writer and its reader (datasets in each format,
model files, reports), whatever the writer accepts reads back as the same object, and whatever a
reader would refuse the writer refuses, naming the field, and leaves no file.

Derandomized and short in ``make test``; a longer run:
``DIODE_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest tests/test_fuzz_writers.py``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torch_diode.cli.common import strict_json, write_report
from torch_diode.dataset_io import dataset_to_dict, load_dataset, save_dataset
from torch_diode.formats import DatasetFormatError
from torch_diode.model_file import ModelFormatError, read_model, write_model
from torch_diode.registry import shipped_models
from torch_diode.types import DTYPES, Dataset, Hardware, KernelConfig, Problem, TimedConfig

MODEL = next(iter(shipped_models().values()))
EXAMPLES = int(os.environ.get("DIODE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
SUFFIXES = [".json", ".json.gz", ".msgpack", ".msgpack.gz"]

# JSON-like values, with what no reader takes: NaN, infinities, bytes, integers beyond 64 bits,
# non-string keys, tuples
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=4),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=20,
)


def _readable(value) -> bool:
    """Whether a reader takes ``value`` as it is (the loaders' rules, check_document's)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _readable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_readable(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return -(1 << 63) <= value < (1 << 63)
    return value is None or isinstance(value, (str, bool))


def _as_json(value):
    """``value`` as the readers give it back (tuples as lists)."""
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    return value


# ----- datasets ----------------------------------------------------------------------------------
HARDWARE = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 << 30, 232448, "2.11.0", "3.5.0", "12.8")
configs = st.one_of(
    st.sampled_from([KernelConfig("aten::mm"), KernelConfig("aten::bmm")]),
    st.builds(
        KernelConfig,
        st.just("triton::mm"),
        *(st.sampled_from([16, 32, 64, 128]) for _ in range(3)),
        st.just(8),
        st.integers(1, 5),
        st.sampled_from([4, 8]),
        extras=st.dictionaries(
            st.sampled_from(["EVEN_K", "ACC_TYPE", "x"]), st.one_of(st.booleans(), st.integers(0, 9))
        ),
    ),
)
times = st.floats(min_value=1e-3, max_value=1e7, allow_nan=False)


@st.composite
def datasets(draw) -> Dataset:
    ds = Dataset(metadata={"created": "2026-01-01T00:00:00+00:00", "sources": []})
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["mm", "bmm"]))
        dtype = draw(st.sampled_from(DTYPES[:3]))
        size = st.integers(1, 1 << 14)
        problem = Problem(
            op,
            draw(st.integers(1, 64)) if op == "bmm" else 1,
            draw(size),
            draw(size),
            draw(size),
            dtype,
            dtype,
            dtype,
            draw(st.booleans()),
            draw(st.booleans()),
        )
        timings = []
        for config in draw(st.lists(configs, min_size=1, max_size=4)):
            if draw(st.booleans()):
                timings.append(TimedConfig.failure(config))
            else:
                samples = tuple(draw(st.lists(times, min_size=1, max_size=3)))
                timings.append(TimedConfig(config, sorted(samples)[len(samples) // 2], False, samples))
        ds.add(HARDWARE, problem, timings)
    ds.metadata.update(draw(st.dictionaries(st.text(max_size=6), values, max_size=3)))
    return ds


@FUZZ
@given(ds=datasets(), suffix=st.sampled_from(SUFFIXES))
def test_a_saved_dataset_loads_as_the_same_or_is_refused(tmp_path_factory, ds, suffix):
    path = tmp_path_factory.mktemp("ds") / f"d{suffix}"
    try:
        save_dataset(ds, path)
    except DatasetFormatError as e:
        assert not _readable(_as_json(ds.metadata)) or not _lists_only(ds.metadata), e
        assert str(path) in str(e) and "field '" in str(e) and not path.exists()
        return
    assert _readable(ds.metadata) and _lists_only(ds.metadata)
    assert dataset_to_dict(load_dataset(path)) == dataset_to_dict(ds)


def _lists_only(value) -> bool:
    """Whether ``value`` holds no tuple (a dataset's writer takes lists; a tuple would come back a list)."""
    if isinstance(value, tuple):
        return False
    if isinstance(value, dict):
        return all(_lists_only(v) for v in value.values())
    if isinstance(value, list):
        return all(_lists_only(v) for v in value)
    return True


# ----- model files -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    return read_model(MODEL)


@FUZZ
@given(extra=st.dictionaries(st.one_of(st.text(max_size=6), st.integers(0, 3)), values, max_size=3))
def test_a_written_model_reads_back_the_same_or_is_refused(tmp_path_factory, shipped, extra):
    path = tmp_path_factory.mktemp("model") / "m.diode"
    shipped.metadata = {**read_model(MODEL).metadata, **{k: v for k, v in extra.items() if k != "hardware"}}
    try:
        write_model(path, shipped)
    except (ModelFormatError, ValueError, TypeError) as e:
        assert not _readable(_as_json(shipped.metadata)) or _known_field_of_wrong_type(extra), e
        assert not path.exists()
        return
    assert _readable(_as_json(shipped.metadata))
    back = read_model(path)
    assert back.metadata == _as_json(shipped.metadata)
    np.testing.assert_array_equal(back.layers[0][0], shipped.layers[0][0])


def _known_field_of_wrong_type(extra: dict) -> bool:
    """Whether ``extra`` sets a metadata field that torch-diode reads (model_file._FIELDS)."""
    from torch_diode.model_file import _FIELDS

    return any(k in _FIELDS for k in extra)


# ----- reports -----------------------------------------------------------------------------------
reports = st.dictionaries(
    st.one_of(st.text(max_size=6), st.integers(0, 3)),
    st.recursive(
        st.one_of(
            scalars.filter(lambda v: not isinstance(v, bytes)),
            st.floats(width=32).map(np.float32),
            st.integers(0, 9).map(np.int64),
        ),
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
        max_leaves=12,
    ),
    max_size=4,
)


@FUZZ
@given(report=reports)
def test_a_report_is_strict_json_of_its_values(tmp_path_factory, report):
    path = tmp_path_factory.mktemp("report") / "r.json"
    try:
        expected = strict_json(report)
    except TypeError:  # keys equal as strings
        with pytest.raises(TypeError):
            write_report(str(path), report)
        assert not path.exists()
        return
    write_report(str(path), report)
    back = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in a report"))
    assert back == {k: v for k, v in expected.items() if not k.startswith("_")}


def test_strict_json_keeps_finite_numbers_and_nulls_the_rest():
    assert strict_json({"a": [1.5, math.nan, np.float64(2.0), (1, np.int32(2))], 1: Path("x")}) == {
        "a": [1.5, None, 2.0, [1, 2]],
        "1": "x",
    }

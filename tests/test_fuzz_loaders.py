"""Fuzzing the loaders: datasets (JSON, msgpack, gzip), model files, shapesets and max-autotune
solution files. Whatever the bytes or the structure, a loader either returns something usable
(a dataset that saves again in both formats and whose every problem featurises; a model that
predicts) or raises its documented error naming the file and field: DatasetFormatError for data
files, ModelFormatError for model files. Nothing else escapes.

The runs are derandomized (a fixed seed per test) and short in ``make test``; a longer run:
``DIODE_FUZZ_EXAMPLES=20000 .venv/bin/python -m pytest tests/test_fuzz_loaders.py``.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torch_diode import _C
from torch_diode.collection.shapes import load_shapeset
from torch_diode.dataset_io import dataset_from_dict, dataset_to_dict, load_dataset, save_dataset
from torch_diode.evaluation import load_solution
from torch_diode.features import featurize
from torch_diode.formats import DatasetFormatError, decode_bytes, encode
from torch_diode.model_file import ModelFormatError, read_model
from torch_diode.registry import shipped_models
from torch_diode.types import MAX_SIZE, Dataset

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "h100_sample.json.gz"
H100 = ROOT / "data" / "h100" / "odd" / "h100_odd.msgpack.gz"
SHAPESET = ROOT / "src" / "torch_diode" / "shapesets" / "vision_transformers.json"
MODEL = next(iter(shipped_models().values()))

EXAMPLES = int(os.environ.get("DIODE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

SUFFIXES = [("json", False), ("json", True), ("msgpack", False), ("msgpack", True)]
# names the schema uses, so that random structures hit real fields often
KEYS = [
    "format",
    "schema_version",
    "metadata",
    "configs",
    "hardware",
    "ops",
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "problem",
    "config",
    "time_us",
    "failed",
    "samples_us",
    "op",
    "B",
    "M",
    "N",
    "K",
    "dtype_a",
    "dtype_b",
    "dtype_out",
    "transpose_a",
    "transpose_b",
    "strides_a",
    "strides_b",
    "bias_shape",
    "template_id",
    "block_m",
    "block_n",
    "block_k",
    "group_m",
    "num_stages",
    "num_warps",
    "even_k",
    "allow_tf32",
    "use_fast_accum",
    "extras",
    "device_name",
    "compute_capability",
    "sm_count",
    "memory_bytes",
    "smem_per_block_bytes",
    "torch_version",
    "completed",
    "skipped",
    "in_flight",
    "problem_key",
    "attempts",
    "sources",
    "entries",
    "dtype",
    "count",
    "model",
    "layer",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70000),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63, 2**63 - 1, 2**40, 2**40 + 1, -(2**63), 0, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["torch-diode-dataset", "mm", "bmm", "float16", "bfloat16", "float32", "triton::mm", "aten::mm"]),
)
values = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), kids, max_size=4)
    ),
    max_leaves=16,
)


def _raw(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _small(path: Path, problems: int = 4, timings: int = 12) -> dict:
    """A few problems of a real file with a few of their timings each (fast to mutate and check)."""
    dataset, small = load_dataset(path), Dataset(metadata=load_dataset(path).metadata)
    for hardware, problem, timed in list(dataset.problems())[:problems]:
        small.add(hardware, problem, timed[:timings])
    return dataset_to_dict(small)


SAMPLE_DOC = json.loads(_raw(SAMPLE))
H100_DOC = _small(H100)


def check_usable(dataset: Dataset) -> None:
    """What loads must be usable: saved again in both formats (the same dataset comes back) and
    featurised by the C++ core, problem by problem."""
    for suffix in ("x.json", "x.msgpack.gz"):
        fmt, compressed = ("json", False) if suffix == "x.json" else ("msgpack", True)
        raw = encode(dataset_to_dict(dataset), suffix)
        again = dataset_from_dict(decode_bytes(raw, fmt, compressed, suffix), suffix)
        assert dataset_to_dict(again) == dataset_to_dict(dataset)
    for hardware, problem, timings in dataset.problems():
        if timings:
            features = featurize(problem, [t.config for t in timings], hardware)
            assert features.shape[0] == len(timings)


def load_bytes(raw: bytes, fmt: str, compressed: bool) -> Dataset | None:
    """The dataset in ``raw``, or None where the loader refused it with DatasetFormatError."""
    try:
        dataset = dataset_from_dict(decode_bytes(raw, fmt, compressed, "fuzz"), "fuzz")
    except DatasetFormatError as e:
        assert e.source == "fuzz" and e.field_path
        return None
    check_usable(dataset)
    return dataset


def load_doc(doc) -> Dataset | None:
    try:
        dataset = dataset_from_dict(doc, "fuzz")
    except DatasetFormatError:
        return None
    check_usable(dataset)
    return dataset


def _mutate_bytes(data, raw: bytes) -> bytes:
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        kind = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate", "set"]))
        at = data.draw(st.integers(0, max(0, len(raw) - 1)))
        if kind == "flip" and raw:
            raw[at] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "set" and raw:
            raw[at] = data.draw(st.integers(0, 255))
        elif kind == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del raw[at : at + data.draw(st.integers(1, 16))]
        else:
            del raw[at:]
    return bytes(raw)


def _paths(doc, prefix=()):
    """Every (container, key) of a document."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield doc, key
        yield from _paths(value, prefix + (key,))


def _mutate_doc(data, doc):
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        paths = list(_paths(doc))
        if not paths:
            break
        container, key = paths[data.draw(st.integers(0, len(paths) - 1), label="where")]
        kind = data.draw(st.sampled_from(["replace", "delete", "duplicate"]))
        if kind == "replace":
            container[key] = data.draw(values, label="value")
        elif kind == "delete":
            del container[key]
        elif isinstance(container, list):
            container.append(copy.deepcopy(container[key]))
    return doc


# ----- datasets -----------------------------------------------------------------------------------
@FUZZ
@given(st.binary(max_size=256), st.sampled_from(SUFFIXES))
def test_random_bytes(raw, suffix):
    load_bytes(raw, *suffix)


@FUZZ
@given(st.data(), st.sampled_from([SAMPLE, H100]), st.sampled_from(SUFFIXES))
def test_mutated_real_files(data, path, suffix):
    fmt, compressed = suffix
    doc = SAMPLE_DOC if path == SAMPLE else H100_DOC
    raw = json.dumps(doc).encode() if fmt == "json" else msgpack.packb(doc, use_bin_type=True)
    raw = _mutate_bytes(data, raw)
    if compressed and data.draw(st.booleans(), label="mutate the gzip stream"):
        raw = _mutate_bytes(data, gzip.compress(raw, mtime=0))
    elif compressed:
        raw = gzip.compress(raw, mtime=0)
    load_bytes(raw, fmt, compressed)


@FUZZ
@given(st.data(), st.sampled_from([SAMPLE_DOC, H100_DOC]))
def test_mutated_structures(data, doc):
    mutated = _mutate_doc(data, doc)
    load_doc(mutated)
    # the same through both codecs: msgpack keeps what JSON cannot say (bytes, non-str keys...)
    try:
        raw = msgpack.packb(mutated, use_bin_type=True)
    except (OverflowError, ValueError, TypeError):
        return  # msgpack cannot write it either (an int beyond 64 bits)
    load_bytes(raw, "msgpack", False)


@FUZZ
@given(values)
def test_random_structures(doc):
    load_doc(doc)
    load_doc({"format": "torch-diode-dataset", "schema_version": 1, "metadata": {}, "configs": [], "hardware": [doc]})


def test_deep_nesting_is_a_format_error():
    for raw, fmt in (
        (b"[" * 100_000 + b"]" * 100_000, "json"),
        (b"\x91" * 100_000 + b"\xc0", "msgpack"),
        (
            json.dumps({"format": "torch-diode-dataset", "metadata": {"a": [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}})
            .encode()
            .replace(b"[]", b"[" * 200 + b"]" * 200),
            "json",
        ),
    ):
        with pytest.raises(DatasetFormatError, match="fuzz"):
            dataset_from_dict(decode_bytes(raw, fmt, False, "fuzz"), "fuzz")


def test_msgpack_with_unhashable_keys_is_a_format_error():
    with pytest.raises(DatasetFormatError, match="not valid msgpack"):
        decode_bytes(b"\x81\x91\x00\x00", "msgpack", False, "fuzz")  # a map keyed by a list


@pytest.mark.parametrize(
    "field,value", [("M", 2**63), ("K", 2**40 + 1), ("B", 0), ("strides_a", [2**63, 1]), ("bias_shape", [0])]
)
def test_sizes_out_of_range_fail_at_load(tmp_path, field, value):
    doc = copy.deepcopy(SAMPLE_DOC)
    row = doc["hardware"][0]["ops"]["addmm"][0]
    row["problem"][field] = value
    path = tmp_path / "big.msgpack"
    path.write_bytes(msgpack.packb(doc, use_bin_type=True))
    with pytest.raises(DatasetFormatError) as info:
        load_dataset(path)
    assert str(path) in str(info.value) and field in info.value.field_path
    assert MAX_SIZE == 1 << 40


def test_a_problem_listed_twice_keeps_both_rows_samples(tmp_path):
    doc = copy.deepcopy(SAMPLE_DOC)
    rows = doc["hardware"][0]["ops"]["mm"]
    first = copy.deepcopy(rows[0])
    first["time_us"] = [None if t is None else t * 2 for t in first["time_us"]]
    rows.append(first)
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(doc))
    dataset = load_dataset(path)
    original = {p: ts for _, p, ts in load_dataset(SAMPLE).problems()}
    assert dataset.num_problems == len(original)
    problem = next(p for p in original if p.op == "mm")
    merged = {t.config: t for _, p, ts in dataset.problems() if p == problem for t in ts}
    for t in original[problem]:
        if not t.failed:
            assert len(merged[t.config].samples_us) == 2 * len(t.samples_us)
    # merging the file with itself keeps every sample too, and saving keeps them
    save_dataset(dataset, tmp_path / "again.msgpack")
    assert dataset_to_dict(load_dataset(tmp_path / "again.msgpack")) == dataset_to_dict(dataset)


# ----- model files --------------------------------------------------------------------------------
MODEL_BYTES = MODEL.read_bytes()
_PROBLEM = next(iter(load_dataset(SAMPLE).problems()))


def _load_model(raw: bytes, tmp_path: Path) -> None:
    try:
        engine = _C.Model.from_bytes(raw, "fuzz.diode")
    except ModelFormatError as e:
        assert "fuzz.diode" in str(e) and "field" in str(e)
        return
    from torch_diode.predict import predict_log_time_us

    hardware, problem, timings = _PROBLEM
    predicted = predict_log_time_us(engine, problem, [t.config for t in timings], hardware)
    assert predicted.shape == (len(timings),)
    path = tmp_path / "fuzz.diode"
    path.write_bytes(raw)
    try:
        model = read_model(path)
    except ModelFormatError as e:
        assert str(path) in str(e)
        return
    assert isinstance(model.metadata, dict)


@FUZZ
@given(st.sampled_from([b"", b"DIODEMDL"]), st.binary(max_size=512))
def test_model_random_bytes(tmp_path_factory, magic, raw):
    _load_model(magic + raw, tmp_path_factory.mktemp("m"))


@FUZZ
@given(st.data())
def test_model_mutated_with_a_valid_checksum(tmp_path_factory, data):
    """Byte edits of the shipped model, its checksum recomputed: the C++ parser itself is fuzzed."""
    body = _mutate_bytes(data, MODEL_BYTES[:-8])
    raw = body + int(_C.fnv1a64(body)).to_bytes(8, "little")
    _load_model(raw, tmp_path_factory.mktemp("m"))


@FUZZ
@given(values)
def test_model_metadata_of_any_shape(tmp_path_factory, metadata):
    """Any JSON in the metadata field: a model with metadata that is not an object fails to read
    with ModelFormatError (the engine's own header stays valid)."""
    model = read_model(MODEL)
    model.metadata = metadata
    try:
        raw = model.to_bytes()
    except ValueError:  # json.dumps cannot write it (NaN is written; only circularity fails)
        return
    _load_model(raw, tmp_path_factory.mktemp("m"))


# ----- shapesets and solution files ---------------------------------------------------------------
SHAPESET_DOC = json.loads(SHAPESET.read_text())


@FUZZ
@given(st.data())
def test_shapesets(tmp_path_factory, data):
    doc = _mutate_doc(data, SHAPESET_DOC) if data.draw(st.booleans()) else data.draw(values)
    path = tmp_path_factory.mktemp("s") / "fuzz.json"
    raw = json.dumps(doc).encode()
    path.write_bytes(_mutate_bytes(data, raw) if data.draw(st.booleans()) else raw)
    try:
        entries = load_shapeset(path)
    except DatasetFormatError as e:
        assert e.source == str(path)
        return
    assert entries and all(1 <= e.count and e.problem.M <= MAX_SIZE for e in entries)


@FUZZ
@given(values)
def test_solution_files(tmp_path_factory, doc):
    path = tmp_path_factory.mktemp("v") / "solution.json"
    path.write_text(json.dumps({"configs": [doc]} if isinstance(doc, dict) else doc))
    try:
        configs = load_solution(path)
    except DatasetFormatError as e:
        assert e.source == str(path)
        return
    assert all(isinstance(c["M"], int) for c in configs)


def test_shipped_files_load():
    """The real files the fuzzers start from load and are usable."""
    check_usable(load_dataset(SAMPLE))
    check_usable(load_dataset(H100))
    assert load_shapeset(SHAPESET)
    assert np.isfinite(read_model(MODEL).feature_mean).all()


def test_the_loaders_bounds_are_the_cores():
    """MAX_SIZE and MAX_CONFIG_VALUE are the C++ features' bounds: at the bound a problem and a
    config featurise, one past it the core refuses them (so a loaded dataset always featurises)."""
    from torch_diode.features import config_rows, hardware_row, problem_row
    from torch_diode.types import MAX_CONFIG_VALUE, Hardware, KernelConfig, Problem

    hardware = Hardware("test", None, 4, 0, 1 << 16, "2.13")
    problem = Problem("mm", 1, MAX_SIZE, 16, 16, "float16", "float16", "float16")
    config = KernelConfig("triton::mm", MAX_CONFIG_VALUE, 16, 16, 8, 3, 4)
    assert featurize(problem, [config], hardware).shape[0] == 1
    row, configs = problem_row(problem), config_rows([config])
    row[2] += 1  # M
    with pytest.raises(ValueError, match="column 'm' is 1099511627777"):
        _C.compute_features(row, configs, hardware_row(hardware))
    configs[0, 1] += 1  # block_m
    with pytest.raises(ValueError, match="block_m"):
        _C.compute_features(problem_row(problem), configs, hardware_row(hardware))

"""Nothing the user types silently spoils work: options that cannot be right are refused before any
work, naming the option; a collection whose every problem was skipped marks none done; model files
are whole or refused, field by field, and an unloadable model changes no Inductor setting; writers
refuse what readers refuse; environment values parse strictly."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torch_diode.dataset_io import load_dataset, save_dataset
from torch_diode.formats import DatasetFormatError
from torch_diode.model_file import ModelFormatError, model_metadata, read_model
from torch_diode.registry import shipped_models
from torch_diode.types import Dataset, KernelConfig, TimedConfig

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "h100_sample.json.gz"
MODEL = next(iter(shipped_models().values()))
DIODE = [sys.executable, "-m", "torch_diode.cli"]
_spec = importlib.util.spec_from_file_location("guide_examples", ROOT / "tests" / "guide_examples.py")
guide = importlib.util.module_from_spec(_spec)  # the tests are not a package: loaded by path
_spec.loader.exec_module(guide)


def assert_user_error(code: int, err: str, *names: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in lines[0], (name, err)


# ----- options -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, option",
    [
        (["--backends", "CCP,ATEM"], "--backends"),
        (["--backends", ","], "--backends"),
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**32)], "--seed"),
        (["--min-batch", "3", "--max-batch", "3", "--ops", "bmm"], "--min-batch"),
        (["--power-of-two", "--min-size", "3", "--max-size", "3"], "--power-of-two"),
        (["--power-of-two", "--log-normal"], "--log-normal"),
        (["--sizes", "64", "--log-normal"], "--log-normal"),
        (["--layouts", "NN", "--transpose-probability", "0.5"], "--transpose-probability"),
        (["--sizes", "64", "--ops", "mm", "--dtypes", "float16", "--num-shapes", "2"], "--num-shapes"),
        (["--devices", "cuda:0", "cuda"], "--devices"),
        (["--devices", "cpu", "--device", "cpu"], "--devices"),
    ],
)
def test_collect_refuses_an_option_that_cannot_be_right_before_any_work(tmp_path, diode_cli, argv, option):
    code, _, err = diode_cli("collect", "--device", "cpu", *argv, "-o", tmp_path / "c.json")
    assert_user_error(code, err, option)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv, option",
    [
        (["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--seed", "-1"], "--seed"),
        (
            ["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--seed", str(2**32 - 1), "--ensemble", "2"],
            "--seed",
        ),
        (["dataset", "split", "{s}", "--train", "{d}/t.json", "--validation", "{d}/v.json", "--seed", "-5"], "--seed"),
        (["validate-model", "--model", "{m}", "--dataset", "{s}", "--seed", str(2**40)], "--seed"),
    ],
)
def test_a_seed_outside_numpys_range_is_refused(tmp_path, diode_cli, argv, option):
    code, _, err = diode_cli(*[w.format(s=SAMPLE, d=tmp_path, m=MODEL) for w in argv])
    assert_user_error(code, err, option)
    assert list(tmp_path.iterdir()) == []


def test_the_shape_options_allow_what_they_can_draw():
    from torch_diode.collection.shapes import ShapeSpec, random_problems

    spec = ShapeSpec(num_shapes=8, ops=("mm",), dtypes=("float16",), sizes=(64, 128), layouts=("NN",))
    assert spec.distinct_problems() == 8
    assert len(random_problems(spec, 0)) == 8
    bmm = ShapeSpec(num_shapes=1, ops=("bmm",), dtypes=("float16",), min_batch=3, max_batch=8, sizes=(64,))
    assert bmm.distinct_problems() == 2  # batches 4 and 8
    assert {p.B for p in random_problems(ShapeSpec(num_shapes=20, ops=("bmm",), min_batch=3, max_batch=8), 1)} <= {4, 8}


@pytest.mark.slow
def test_a_collection_whose_every_problem_is_skipped_marks_none_done(tmp_path, diode_cli):
    """The issue's spoiler: every problem skipped (a backend list offering nothing on this CPU), the
    file marked them done, and the corrected command measured nothing. Now the run exits 2 naming
    the reason, and the corrected command measures them."""
    out = tmp_path / "c.json"
    base = ["collect", "--device", "cpu", "--ops", "bmm", "--dtypes", "float32", "--num-shapes", "2"]
    base += ["--min-size", "16", "--max-size", "40", "--max-batch", "4", "--seed", "9", "-o", out]
    code, _, stderr = diode_cli(*base, "--backends", "TRITON")
    err = [line for line in stderr.splitlines() if line.startswith("diode")]
    assert code == 2 and "every problem tried was skipped (2), none marked done" in err[-1], stderr
    metadata = load_dataset(out).metadata
    assert not metadata.get("completed") and not metadata.get("skipped") and metadata["sources"] == []
    code, stdout, stderr = diode_cli(*base, "--backends", "CPP,ATEN")
    assert code == 0 and "0 already done" in stdout, stdout + stderr[-2000:]
    assert len(load_dataset(out).metadata["completed"]) + len(load_dataset(out).metadata.get("skipped", [])) == 2


# ----- model files -------------------------------------------------------------------------------
def _pack(metadata: bytes) -> bytes:
    """The shipped model's weights with ``metadata`` as its metadata bytes, under a valid checksum."""
    return read_model(MODEL).encode(metadata)


def _with(field: str, value) -> bytes:
    metadata = dict(model_metadata(MODEL))
    target = metadata
    *parents, last = field.split(".")
    for p in parents:
        target[p] = dict(target[p])
        target = target[p]
    target[last] = value
    return json.dumps(metadata).encode()


BAD_METADATA = [
    (b"not json{", "metadata"),
    (b"[1, 2]", "metadata"),
    (b'"a string"', "metadata"),
    (_with("hardware", "x"), "metadata.hardware"),
    (_with("hardware.sm_count", "132"), "metadata.hardware.sm_count"),
    (_with("hardware.compute_capability", [9]), "metadata.hardware.compute_capability"),
    (_with("feature_names", [1, 2]), "metadata.feature_names"),
    (_with("op", 5), "metadata.op"),
    (_with("training_data", []), "metadata.training_data"),
    (_with("training_data.ops", "mm"), "metadata.training_data.ops"),
    (_with("training_data.template_kinds", "x"), "metadata.training_data.template_kinds"),
    (_with("training_data.loss_calibration", {"spread_scale": -1}), "metadata.training_data.loss_calibration"),
]


@pytest.mark.parametrize("metadata, field", BAD_METADATA, ids=[field for _, field in BAD_METADATA])
def test_model_metadata_is_checked_field_by_field(tmp_path, diode_cli, metadata, field):
    path = tmp_path / "bad.diode"
    path.write_bytes(_pack(metadata))
    with pytest.raises(ModelFormatError, match=rf"bad\.diode: field '{field}"):
        model_metadata(path)
    code, _, err = diode_cli("validate-model", "--model", path, "--dataset", SAMPLE)
    assert_user_error(code, err, "bad.diode", field)


def test_an_unloadable_model_falls_back_counted_and_changes_no_inductor_setting(tmp_path):
    bad = tmp_path / "bad.diode"
    bad.write_bytes(_pack(b"[1]"))
    code = f"""
import warnings, torch, torch_diode
from torch._inductor import config as ic
before = (ic.max_autotune_gemm, __import__("os").environ.get("TRITON_PTXAS_PATH"))
for model in ({str(bad)!r}, "NVIDIA-H100-matmull", {str(tmp_path)!r}):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with torch_diode.diode_choices(model) as c:
            f = torch.compile(lambda a, b: a @ b, mode="max-autotune-no-cudagraphs")
            x = torch.randn(16, 16)
            torch.testing.assert_close(f(x, x), x @ x)
            ours = [str(x.message) for x in w if "torch-diode" in str(x.message)]
            print(c.get_stats()["fallbacks"], len(ours), ours[0].count(chr(10)))
    c = torch_diode.register_model(model)
    print((ic.max_autotune_gemm, __import__("os").environ.get("TRITON_PTXAS_PATH")) == before)
    torch_diode.disable()
    torch._dynamo.reset()
"""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", **guide.FRESH_GRAPHS_ENV}  # each compile asks the handler
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.split("\n")
    for i in range(3):
        assert lines[2 * i] == "{'model_load_error': 1} 1 0", proc.stdout
        assert lines[2 * i + 1] == "True", proc.stdout


def test_a_model_whose_metadata_a_reader_would_refuse_is_not_written(tmp_path):
    from torch_diode.model_file import write_model

    model = read_model(MODEL)
    for bad in ({**model.metadata, "hardware": "x"}, {**model.metadata, "nan": math.nan}):
        model.metadata = bad
        with pytest.raises((ModelFormatError, ValueError)):
            write_model(tmp_path / "m.diode", model)
    assert list(tmp_path.iterdir()) == []


# ----- writers refuse what readers refuse --------------------------------------------------------
@pytest.mark.parametrize(
    "metadata, field",
    [
        ({"x": math.nan}, "metadata.x"),
        ({"x": b"bytes"}, "metadata.x"),
        ({1: 2}, "metadata"),
        ({"completed": [1]}, "metadata.completed[0]"),
        ({"skipped": [{"reason": "no key"}]}, "metadata.skipped[0].problem_key"),
    ],
)
def test_save_dataset_refuses_what_load_dataset_refuses(tmp_path, metadata, field):
    dataset = load_dataset(SAMPLE)
    dataset.metadata = metadata
    for name in ("d.json", "d.msgpack.gz"):
        with pytest.raises(DatasetFormatError, match=rf"{name}: field '{re.escape(field)}'.*not written"):
            save_dataset(dataset, tmp_path / name)
    assert [p.name for p in tmp_path.iterdir()] == []


def test_save_dataset_refuses_nesting_deeper_than_a_reader_reads(tmp_path):
    deep: dict = {}
    cur = deep
    for _ in range(80):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(DatasetFormatError, match="nested deeper than 64"):
        save_dataset(Dataset(metadata={"deep": deep}), tmp_path / "d.json")


def test_a_sample_that_is_no_positive_finite_time_is_refused():
    for bad in (math.nan, -1.0, math.inf, 0.0):
        with pytest.raises(ValueError, match="samples_us"):
            TimedConfig(KernelConfig("aten::mm"), 5.0, False, (5.0, bad))


def test_reports_are_strict_json(tmp_path):
    import numpy as np

    from torch_diode.cli.common import strict_json, write_report

    report = {"nan": math.nan, "inf": -math.inf, "np": np.float32(0.5), "arr": np.arange(2), "t": (1, 2), 3: "k"}
    write_report(str(tmp_path / "r.json"), report)
    text = (tmp_path / "r.json").read_text()
    back = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in a report"))
    assert back == {"nan": None, "inf": None, "np": 0.5, "arr": [0, 1], "t": [1, 2], "3": "k"}
    with pytest.raises(TypeError, match="report field 'a.b'"):
        strict_json({"a": {"b": object()}})


def test_an_error_line_is_one_line_cut_and_escaped(tmp_path, diode_cli):
    name = tmp_path / ("evil\x1b[31m\nname" + "x" * 600 + ".json")
    code, _, err = diode_cli("dataset", "stats", name)
    assert_user_error(code, err, "\\x1b[31m")
    assert len(err.strip()) <= 520 and err.strip().endswith("...")


# ----- environment -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, value, setting, expected",
    [
        ("TORCH_DIODE_ENABLE_FALLBACK", "maybe", "enable_fallback", True),
        ("TORCH_DIODE_CACHE_PREDICTIONS", "Off", "cache_predictions", False),
        ("TORCH_DIODE_UNSURE_LOSS_PROBABILITY", "1.5", "unsure_loss_probability", 0.2),
        ("TORCH_DIODE_UNSURE_LOSS_PROBABILITY", "-0.1", "unsure_loss_probability", 0.2),
        ("TORCH_DIODE_UNSURE_LOSS_PROBABILITY", "0.5", "unsure_loss_probability", 0.5),
        ("TORCH_DIODE_MAX_FILE_BYTES", "0", "max_file_bytes", 1 << 30),
    ],
)
def test_environment_values_parse_strictly(name, value, setting, expected):
    code = f"import warnings; warnings.simplefilter('always'); from torch_diode import config; print(config.{setting})"
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, name: value}, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == str(expected), proc.stderr
    warned = name in proc.stderr
    assert warned == (str(expected) != value and value.lower() not in ("off",)), proc.stderr


def test_torch_diode_debug_parses_as_a_boolean(tmp_path):
    env = {**os.environ, "TORCH_DIODE_DEBUG": "maybe"}
    proc = subprocess.run(
        [*DIODE, "dataset", "stats", str(tmp_path / "none.json")], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2 and "TORCH_DIODE_DEBUG" in proc.stderr and "Traceback" not in proc.stderr

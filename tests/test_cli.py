"""The `diode` command line, run as a user runs it (a subprocess of the installed script)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torch_diode.types import load_dataset, save_dataset

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "h100_sample.json.gz"
DIODE = [sys.executable, "-m", "torch_diode.cli"]


def diode(*args, check=True):
    proc = subprocess.run([*DIODE, *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"diode {args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "diode"
    assert script.exists()
    out = subprocess.run([script, "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("dataset", "collect", "collect-shapeset", "create-validation"):
        assert command in out


@pytest.mark.parametrize(
    "command",
    [
        ["dataset"],
        ["dataset", "stats"],
        ["dataset", "coverage"],
        ["dataset", "merge"],
        ["dataset", "convert"],
        ["dataset", "split"],
        ["collect"],
        ["collect-shapeset"],
        ["create-validation"],
    ],
)
def test_every_command_has_help(command):
    out = diode(*command, "--help").stdout
    assert "usage: diode" in out and len(out.splitlines()) > 3


def test_stats_report_json(tmp_path):
    report = tmp_path / "r.json"
    out = diode("dataset", "stats", SAMPLE, "--report-json", report, "--problems").stdout
    data = json.loads(report.read_text())
    for key in ("num_problems", "num_timed_configs", "num_failures", "ops", "dtypes", "hardware"):
        assert key in data
    ds = load_dataset(SAMPLE)
    assert data["num_problems"] == ds.num_problems == 12
    assert data["num_timed_configs"] == ds.num_timed_configs
    assert data["num_failures"] == sum(t.failed for _, _, ts in ds.problems() for t in ts)
    assert set(data["ops"]) == {"mm", "addmm", "bmm", "baddbmm"}
    assert data["hardware"][0]["sm_count"] == 132
    assert "NVIDIA H100" in out and "fastest measured config" in out


def test_convert_merge_split(tmp_path):
    mp = tmp_path / "s.msgpack"
    diode("dataset", "convert", SAMPLE, mp)
    assert load_dataset(mp).to_dict() == load_dataset(SAMPLE).to_dict()

    train, val = tmp_path / "train.json", tmp_path / "val.msgpack.gz"
    diode(
        "dataset",
        "split",
        SAMPLE,
        "--train",
        train,
        "--validation",
        val,
        "--validation-fraction",
        "0.25",
        "--seed",
        "3",
    )
    t, v = load_dataset(train), load_dataset(val)
    tp = {p for _, p, _ in t.problems()}
    vp = {p for _, p, _ in v.problems()}
    assert not tp & vp and len(tp) + len(vp) == 12 and len(vp) == 3
    # every problem keeps all of its timed configs (split by problem, never by row)
    src = {p: ts for _, p, ts in load_dataset(SAMPLE).problems()}
    for ds in (t, v):
        for _, p, ts in ds.problems():
            assert ts == src[p]
    # deterministic for a seed, different for another
    diode(
        "dataset",
        "split",
        SAMPLE,
        "--train",
        tmp_path / "t2.json",
        "--validation",
        tmp_path / "v2.json",
        "--validation-fraction",
        "0.25",
        "--seed",
        "3",
    )
    assert {p for _, p, _ in load_dataset(tmp_path / "v2.json").problems()} == vp

    # merging the two halves (a folder) gives back every problem
    folder = tmp_path / "parts"
    folder.mkdir()
    save_dataset(t, folder / "a.json")
    save_dataset(v, folder / "b.msgpack")
    merged = tmp_path / "merged.json"
    diode("dataset", "merge", folder, "-o", merged)
    assert {p for _, p, _ in load_dataset(merged).problems()} == tp | vp


def test_bad_file_gives_a_clear_error_and_nonzero_exit(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"format": "torch-diode-dataset", "schema_version": 1, "metadata": {}, "configs": [], "hardware": [{}]}'
    )
    proc = diode("dataset", "stats", bad, check=False)
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "hardware[0].hardware" in proc.stderr


def test_fast_mode_without_a_gpu_is_a_clear_error(tmp_path):
    import torch

    if torch.cuda.is_available():
        return
    proc = diode(
        "collect",
        "--search-mode",
        "fast",
        "--device",
        "cpu",
        "--num-shapes",
        "1",
        "--output",
        tmp_path / "x.json",
        check=False,
    )
    assert proc.returncode == 2 and "CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr

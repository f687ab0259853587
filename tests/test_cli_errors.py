"""The command line's error discipline and its no-data-loss rules, driven as a careless user would:
every bad input gets one line naming the file, field or option and exit code 2, never a
traceback, and no output replaces an input."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torch_diode.cli import build_parser, hoist_global_options, main
from torch_diode.dataset_io import load_dataset, save_dataset
from torch_diode.registry import shipped_models
from torch_diode.types import Dataset

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "h100_sample.json.gz"
ODD = ROOT / "data" / "h100" / "odd" / "h100_odd.msgpack.gz"
MODEL = next(iter(shipped_models().values()))
DIODE = [sys.executable, "-m", "torch_diode.cli"]


def assert_user_error(code: int, err: str, *names: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("diode"), err
    for name in names:
        assert name in lines[0], (name, err)


@pytest.fixture
def data(tmp_path):
    """A copy of the sample dataset, an empty folder, an empty file, a file of another kind."""
    sample = tmp_path / "in.json.gz"
    shutil.copy(SAMPLE, sample)
    (tmp_path / "empty").mkdir()
    (tmp_path / "folder.json").mkdir()
    (tmp_path / "zero.json").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("hello")
    save_dataset(Dataset(), tmp_path / "empty.json")
    return tmp_path, sample


def _all_failed(tmp_path: Path) -> Path:
    """The sample with every timing failed: nothing to evaluate."""
    doc = json.loads(__import__("gzip").decompress(SAMPLE.read_bytes()))
    for hw in doc["hardware"]:
        for rows in hw["ops"].values():
            for row in rows:
                row["time_us"] = [None] * len(row["config"])
                row["failed"] = [True] * len(row["config"])
                row.pop("samples_us", None)
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "case",
    [
        # (arguments, words the error line names); {d}: the test folder, {s}: a copy of the sample
        (["dataset", "stats", "{d}/nope.json"], ["nope.json"]),
        (["dataset", "stats", "{d}/empty"], ["no dataset files"]),
        (["dataset", "stats", "{d}/zero.json"], ["zero.json", "not valid json"]),
        (["dataset", "stats", "{d}/notes.txt"], ["notes.txt", "suffix"]),
        (["dataset", "convert", "{d}/empty", "{d}/out.json"], ["empty", "folder"]),
        (["dataset", "convert", "{s}", "{d}/empty"], ["output", "expected a dataset file name"]),
        (["dataset", "convert", "{s}", "{d}/folder.json"], ["output", "folder"]),
        (["dataset", "convert", "{s}", "{s}"], ["output", "input"]),
        (["dataset", "convert", "{s}", "{d}/out.txt"], ["output", "out.txt"]),
        (["dataset", "merge", "{s}", "-o", "{d}/out.csv"], ["--output", "out.csv"]),
        (["dataset", "merge", "{s}", "-o", "{s}"], ["--output", "input"]),
        (["dataset", "merge", "{d}", "-o", "{d}/all.json"], ["--output", "inside the input folder"]),
        (["dataset", "merge", "{s}", "-o", "{s}/x.json"], ["--output", "is a file, not a folder"]),
        (
            ["dataset", "split", "{d}/empty.json", "--train", "{d}/t.json", "--validation", "{d}/v.json"],
            ["no problem to split"],
        ),
        (
            ["dataset", "split", "{s}", "--train", "{d}/x.json", "--validation", "{d}/x.json"],
            ["--validation", "--train"],
        ),
        (["dataset", "split", "{s}", "--train", "{s}", "--validation", "{d}/v.json"], ["--train", "input"]),
        (
            [
                "dataset",
                "split",
                "{s}",
                "--train",
                "{d}/t.json",
                "--validation",
                "{d}/v.json",
                "--validation-fraction",
                "1",
            ],
            ["--validation-fraction"],
        ),
        (["dataset", "stats", "{s}", "--report-json", "{s}"], ["--report-json", "input"]),
        (["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--batch-size", "0"], ["--batch-size"]),
        (["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--num-epochs", "0"], ["--num-epochs"]),
        (["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--learning-rate", "nan"], ["--learning-rate"]),
        (
            ["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--validation-fraction", "1.5"],
            ["--validation-fraction"],
        ),
        (["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--hidden-dim", "-4"], ["--hidden-dim"]),
        (["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--clip-slowdown", "1"], ["--clip-slowdown"]),
        (["train", "--dataset", "{s}", "--model", "{s}"], ["--model", "input"]),
        (["train", "--model", "{d}/m.diode"], ["--dataset"]),
        (["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--bootstrap"], ["--bootstrap", "--ensemble 2"]),
        (["train", "--dataset", "{s}", "--model", "{d}/m.diode", "--hardware-name", "TPU"], ["no usable problems"]),
        (["validate-model", "--model", "NVIDIA-A999-matmul", "--dataset", "{s}"], ["NVIDIA-A999-matmul"]),
        (["validate-model", "--model", "{d}/notes.txt", "--dataset", "{s}"], ["notes.txt"]),
        (["validate-model", "--model", str(MODEL), "--dataset", "{failed}"], ["no successful timing"]),
        (["validate-model", "--model", str(MODEL), "--dataset", "{s}", "--report-json", "{s}"], ["--report-json"]),
        (["validate-model", "--model", str(MODEL), "--dataset", "{s}", "--report-json", str(MODEL)], ["--report-json"]),
        (["validate-model", "--model", str(MODEL), "--dataset", "{s}", "--top-n-worst", "-1"], ["--top-n-worst"]),
        (
            ["validate-model", "--model", str(MODEL), "--dataset", "{s}", "--plot", "{d}/notes.txt"],
            ["--plot", "is a file"],
        ),
        (
            ["validate-max-autotune", "--model", str(MODEL), "--dataset", "{s}", "--extern-preference", "0.5"],
            ["--extern-preference"],
        ),
        (
            [
                "validate-max-autotune",
                "--model",
                str(MODEL),
                "--dataset",
                "{s}",
                "--max-autotune-solution",
                "{d}/zero.json",
            ],
            ["zero.json"],
        ),
        (["predict", "--model", str(MODEL), "--dataset", "{s}", "-o", "{s}"], ["--output", "input"]),
        (["collect", "--device", "cuda:99", "--num-shapes", "1", "-o", "{d}/c.json"], ["--device", "cuda:99"]),
        (["collect", "--device", "banana", "--num-shapes", "1", "-o", "{d}/c.json"], ["--device", "banana"]),
        (["collect", "--device", "cpu", "--min-size", "100", "--max-size", "10", "-o", "{d}/c.json"], ["--max-size"]),
        (["collect", "--device", "cpu", "--max-size", str(2**62), "-o", "{d}/c.json"], ["--max-size"]),
        (["collect", "--device", "cpu", "--num-shapes", "0", "-o", "{d}/c.json"], ["--num-shapes"]),
        (
            ["collect", "--device", "cpu", "--transpose-probability", "2", "-o", "{d}/c.json"],
            ["--transpose-probability"],
        ),
        (["collect", "--device", "cpu", "--max-gflop", "inf", "-o", "{d}/c.json"], ["--max-gflop"]),
        (["collect", "--device", "cpu", "--dtypes", "float12", "-o", "{d}/c.json"], ["--dtypes"]),
        (
            [
                "collect",
                "--device",
                "cpu",
                "--sizes",
                "64",
                "--num-shapes",
                "5",
                "--max-gflop",
                "1e-12",
                "-o",
                "{d}/c.json",
            ],
            ["--max-gflop"],
        ),
        (["collect", "--device", "cpu", "-o", "{d}/c.txt"], ["--output", "c.txt"]),
        (["collect", "--device", "cpu", "--exclude", "{s}", "-o", "{s}"], ["--output", "input"]),
        (["collect", "--device", "cpu", "--shard", "3/2", "-o", "{d}/c.json"], ["--shard"]),
        (
            ["create-validation", "--device", "cpu", "--train-dataset", "{d}", "-o", "{d}/v.json"],
            ["--output", "folder"],
        ),
        (
            ["collect-shapeset", "--device", "cpu", "--shapeset", "no-such-shapeset", "-o", "{d}/c.json"],
            ["no-such-shapeset"],
        ),
        (["collect-shapeset", "--device", "cpu", "--shapeset", "{d}/zero.json", "-o", "{d}/c.json"], ["zero.json"]),
        (["--format", "msgpack", "train", "--dataset", "{s}", "--model", "{d}/m.diode"], ["--format", "train"]),
        (["--seed", "1", "collect", "--seed", "2", "-o", "{d}/c.json"], ["--seed", "before and after"]),
        (["dataset", "stats", "{d}/bad.json"], ["bad.json", "hardware[0]"]),
    ],
    ids=lambda case: " ".join(case[0][:3]),
)
def test_user_errors_are_one_line_naming_the_culprit(diode_cli, data, case):
    tmp_path, sample = data
    (tmp_path / "bad.json").write_text(
        '{"format": "torch-diode-dataset", "schema_version": 1, "metadata": {}, "configs": [], "hardware": [{}]}'
    )
    args, names = case
    fill = {"d": tmp_path, "s": sample, "failed": _all_failed(tmp_path) if "{failed}" in args else ""}
    before = sample.read_bytes()
    code, _, err = diode_cli(*[a.format(**fill) for a in args])
    assert_user_error(code, err, *[n.format(**fill) for n in names])
    assert sample.read_bytes() == before  # no input was touched
    assert not (tmp_path / "c.json").exists()  # no collection started


def test_a_whole_file_or_folder_is_named_as_it_is(diode_cli, data):
    """A file that is not a dataset has no field to name; an empty folder is named by its path."""
    tmp_path, _ = data
    for name in ("zero.json", "notes.txt"):
        code, _, err = diode_cli("dataset", "stats", str(tmp_path / name))
        assert_user_error(code, err, name)
        assert "field" not in err, err
    code, _, err = diode_cli("dataset", "stats", str(tmp_path / "empty"))
    assert_user_error(code, err, f"no dataset files in {tmp_path / 'empty'}")


def test_split_refusals_lose_nothing(diode_cli, data):
    """`split --train X --validation X` used to keep only the validation part in X; `--train IN`
    replaced the input."""
    tmp_path, sample = data
    before = sample.read_bytes()
    out = tmp_path / "x.json"
    code, _, err = diode_cli("dataset", "split", sample, "--train", out, "--validation", out)
    assert_user_error(code, err, "--validation")
    assert not out.exists()
    # the same file by another name (a symlink) is the same file
    (tmp_path / "link.json.gz").symlink_to(sample)
    code, _, err = diode_cli("dataset", "split", sample, "--train", tmp_path / "link.json.gz", "--validation", out)
    assert_user_error(code, err, "--train")
    assert sample.read_bytes() == before


def test_debug_shows_the_traceback_of_a_user_error(tmp_path):
    bad = tmp_path / "nope.json"
    for env, extra in (({}, ["--debug"]), ({"TORCH_DIODE_DEBUG": "1"}, [])):
        proc = subprocess.run(
            [*DIODE, *extra, "dataset", "stats", str(bad)], capture_output=True, text=True, env={**os.environ, **env}
        )
        assert proc.returncode == 2
        assert "Traceback" in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith("diode: error:")
    proc = subprocess.run([*DIODE, "dataset", "stats", str(bad), "--debug"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" in proc.stderr  # --debug after the command too


def test_a_bug_keeps_its_traceback(capsys, monkeypatch):
    """An exception that is not about the input (here a KeyError from inside a command) is a bug:
    it propagates with its traceback instead of becoming an error line."""
    import torch_diode.dataset_tools as tools

    def broken(dataset):
        raise KeyError("a bug")

    monkeypatch.setattr(tools, "dataset_stats", broken)
    with pytest.raises(KeyError, match="a bug"):
        main(["dataset", "stats", str(SAMPLE)])


def test_global_options_go_to_the_subcommand(diode_cli, tmp_path):
    parser = build_parser()
    for argv, command, expected in (
        (["--format", "msgpack", "--seed", "42", "collect", "-o", "x"], "collect", {"format": "msgpack", "seed": 42}),
        (
            ["--format=json", "--seed=43", "create-validation", "-o", "x"],
            "create-validation",
            {"format": "json", "seed": 43},
        ),
        (["--seed", "42", "train", "--dataset", "d", "--model", "m"], "train", {"seed": 42}),
        (["--seed", "42", "validate-model", "--model", "m", "--dataset", "d"], "validate-model", {"seed": 42}),
        (
            ["--seed", "42", "validate-max-autotune", "--model", "m", "--dataset", "d"],
            "validate-max-autotune",
            {"seed": 42},
        ),
        (
            ["-v", "--seed", "5", "dataset", "split", "d", "--train", "t.json", "--validation", "v.json"],
            "dataset",
            {"seed": 5, "verbose": True},
        ),
    ):
        args = parser.parse_args(hoist_global_options(parser, argv))
        assert args.command == command
        assert {k: getattr(args, k) for k in expected} == expected
    # and a real run, as the seeds wrote it
    code, out, err = diode_cli(
        "--seed",
        "42",
        "validate-model",
        "--model",
        MODEL,
        "--dataset",
        SAMPLE,
        "--batch-size",
        "32",
        "--top-n-worst",
        "5",
    )
    assert code == 0, err
    assert "Validation Loss (MSE)" in out and "Top 5 worst predictions" in out


def test_ctrl_c_during_training_leaves_no_partial_file(tmp_path):
    model = tmp_path / "m.diode"
    proc = subprocess.Popen(
        [
            *DIODE,
            "train",
            "--dataset",
            str(ODD),
            "--model",
            str(model),
            "--num-epochs",
            "100000",
            "--patience",
            "100000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a shell's background job (a CI runner's, say) starts with SIGINT
        # ignored, which the child would inherit, and Python then leaves Ctrl-C ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 120
    line = ""
    while time.time() < deadline and "train:" not in line:  # tqdm's bar: the epochs have started
        line = proc.stderr.read(64) if proc.poll() is None else "exited"
    assert proc.poll() is None, line
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("diode: interrupted")
    assert not model.exists() and not list(tmp_path.iterdir())


def test_merge_keeps_both_rows_of_a_problem_listed_twice(diode_cli, tmp_path):
    dataset = load_dataset(SAMPLE)
    save_dataset(dataset, tmp_path / "a.json")
    save_dataset(dataset, tmp_path / "b.msgpack")
    code, _, err = diode_cli("dataset", "merge", tmp_path / "a.json", tmp_path / "b.msgpack", "-o", tmp_path / "m.json")
    assert code == 0, err
    merged = {p: ts for _, p, ts in load_dataset(tmp_path / "m.json").problems()}
    for _, problem, timings in dataset.problems():
        for mine, both in zip(timings, merged[problem]):
            assert len(both.samples_us) == 2 * len(mine.samples_us)

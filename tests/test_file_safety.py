"""The user's files: nothing written through a link we did not create, only our own temporary files
removed, a rewritten output keeps its mode and group, an existing file of another kind is not
replaced without --force; readers read regular files only, bounded in size and nesting, in time
linear in the file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
import time
from pathlib import Path

import msgpack
import pytest

from torch_diode import config
from torch_diode.dataset_io import DatasetWriter, dataset_to_dict, load_dataset, load_datasets, save_dataset
from torch_diode.fileio import FileError, atomic_write_bytes, existing_kind, read_regular
from torch_diode.formats import DatasetFormatError
from torch_diode.registry import shipped_models
from torch_diode.types import Dataset

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "h100_sample.json.gz"
MODEL = next(iter(shipped_models().values()))


def assert_user_error(code: int, err: str, *names: str) -> None:
    lines = [line for line in err.splitlines() if line.strip() and "Warning" not in line]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in lines[0], (name, err)


# ----- links and our own files -------------------------------------------------------------------
@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_link_planted_at_the_lock_file_is_refused_and_its_target_untouched(tmp_path, link):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    lock = tmp_path / ".out.json.lock"
    if link == "symbolic":
        lock.symlink_to(victim)
    else:
        os.link(victim, lock)
    with pytest.raises(FileError, match=r"out\.json: its lock file .* (symbolic link|hard link)"):
        save_dataset(Dataset(), tmp_path / "out.json")
    assert victim.read_text() == "precious\n" and not (tmp_path / "out.json").exists()


def test_a_fifo_at_the_lock_file_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / ".out.json.lock")
    with pytest.raises(FileError, match="FIFO"):
        save_dataset(Dataset(), tmp_path / "out.json")


def test_a_users_file_named_like_a_temporary_file_is_kept(tmp_path):
    theirs = [tmp_path / n for n in (".notes.json.backup.tmp", ".notes.json.abc.tmp", ".notes.json.12345678.tmp")]
    for f in theirs:
        f.write_text("mine")
    save_dataset(Dataset(), tmp_path / "notes.json")
    assert all(f.read_text() == "mine" for f in theirs)


def test_an_orphan_of_ours_is_removed_but_not_a_link_or_folder_of_that_name(tmp_path):
    orphan = tmp_path / ".d.json.abcd1234.diode-tmp"
    orphan.write_text("half")
    link = tmp_path / ".d.json.efgh5678.diode-tmp"
    link.symlink_to(tmp_path / "target")
    (tmp_path / "target").write_text("kept")
    folder = tmp_path / ".d.json.ijkl9012.diode-tmp"
    folder.mkdir()
    with DatasetWriter(tmp_path / "d.json"):
        pass
    assert not orphan.exists() and link.is_symlink() and folder.is_dir()
    assert (tmp_path / "target").read_text() == "kept"


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_a_rewritten_output_keeps_its_mode(tmp_path, mode):
    out = tmp_path / "out.json"
    save_dataset(Dataset(), out)
    out.chmod(mode)
    save_dataset(load_dataset(SAMPLE), out)
    assert stat.S_IMODE(out.stat().st_mode) == mode
    atomic_write_bytes(out, b"{}")
    assert stat.S_IMODE(out.stat().st_mode) == mode


def test_a_rewritten_output_keeps_its_group(tmp_path):
    out = tmp_path / "out.json"
    save_dataset(Dataset(), out)
    groups = [g for g in os.getgroups() if g != out.stat().st_gid]
    if not groups:
        pytest.skip("this user belongs to one group only")
    os.chown(out, -1, groups[0])
    save_dataset(load_dataset(SAMPLE), out)
    assert out.stat().st_gid == groups[0]


def test_a_new_output_gets_the_umask_mode(tmp_path):
    umask = os.umask(0o027)
    try:
        save_dataset(Dataset(), tmp_path / "new.json")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640


def test_a_write_error_names_the_output_not_the_temporary_file(tmp_path, monkeypatch):
    def fail(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError) as e:
        atomic_write_bytes(tmp_path / "out.json", b"{}")
    assert e.value.filename == str(tmp_path / "out.json") and "No space left" in str(e.value)
    assert list(tmp_path.iterdir()) == []


# ----- an existing output of another kind --------------------------------------------------------
def test_existing_kind(tmp_path):
    shutil.copy(SAMPLE, tmp_path / "d.json.gz")
    save_dataset(load_dataset(SAMPLE), tmp_path / "d.msgpack")
    (tmp_path / "r.json").write_text('{"a": 1}')
    (tmp_path / "e.json").write_text("")
    (tmp_path / "t.txt").write_text("notes")
    os.mkfifo(tmp_path / "fifo")
    kinds = {n: existing_kind(tmp_path / n) for n in ("d.json.gz", "d.msgpack", "r.json", "e.json", "t.txt", "fifo")}
    assert kinds == {
        "d.json.gz": "dataset",
        "d.msgpack": "dataset",
        "r.json": "json",
        "e.json": "empty",
        "t.txt": "other",
        "fifo": "special",
    }
    assert existing_kind(MODEL) == "model" and existing_kind(tmp_path / "none") is None


@pytest.mark.parametrize(
    "argv, option",
    [
        (["train", "--dataset", "{s}", "--model", "{d}/victim.json.gz", "--num-epochs", "1"], "--model"),
        (["dataset", "merge", "{s}", "-o", "{d}/notes.json"], "--output"),
        (["dataset", "convert", "{s}", "{d}/model.json"], "output"),
        (["dataset", "stats", "{s}", "--report-json", "{d}/victim.json.gz"], "--report-json"),
        (["validate-model", "--model", "{m}", "--dataset", "{s}", "--report-json", "{d}/model.json"], "--report-json"),
        (["predict", "--model", "{m}", "--dataset", "{s}", "-o", "{d}/notes.json"], "--output"),
    ],
)
def test_an_existing_file_of_another_kind_is_kept_unless_force(tmp_path, diode_cli, argv, option):
    shutil.copy(SAMPLE, tmp_path / "victim.json.gz")
    shutil.copy(MODEL, tmp_path / "model.json")
    (tmp_path / "notes.json").write_text('{"mine": true}')
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    words = [w.format(s=SAMPLE, d=tmp_path, m=MODEL) for w in argv]
    code, _, err = diode_cli(*words)
    assert_user_error(code, err, option, "--force")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    code, _, err = diode_cli(*words, "--force")
    assert code == 0, err


def test_an_output_of_the_same_kind_is_replaced_without_force(tmp_path, diode_cli):
    save_dataset(Dataset(), tmp_path / "out.json")
    (tmp_path / "r.json").write_text('{"old": 1}')
    assert diode_cli("dataset", "merge", SAMPLE, "-o", tmp_path / "out.json")[0] == 0
    assert diode_cli("dataset", "stats", SAMPLE, "--report-json", tmp_path / "r.json")[0] == 0
    assert load_dataset(tmp_path / "out.json").num_problems == load_dataset(SAMPLE).num_problems


# ----- readers: regular files only, bounded ------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_file_that_is_not_regular_gets_one_line_naming_it(tmp_path, diode_cli, kind):
    if kind == "fifo":
        path = tmp_path / "d.json"
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        path = tmp_path / "d.json"
        path.mkdir()
        (path / "x.txt").write_text("")
    started = time.monotonic()
    with pytest.raises((DatasetFormatError, FileError, FileNotFoundError)):
        read_regular(path) if kind != "folder" else load_dataset(path)
    for argv in (
        ["dataset", "stats", path],
        ["dataset", "convert", path, tmp_path / "o.json"],
        ["validate-model", "--model", path, "--dataset", SAMPLE],
        ["collect-shapeset", "--shapeset", path, "--device", "cpu", "-o", tmp_path / "o.json"],
        ["collect", "--fill-cells", path, "--device", "cpu", "-o", tmp_path / "o.json"],
    ):
        code, _, err = diode_cli(*argv)
        assert_user_error(code, err, str(path))
    assert time.monotonic() - started < 60


def test_a_fifo_given_as_a_solution_file_does_not_hang(tmp_path, diode_cli):
    os.mkfifo(tmp_path / "solution.json")
    code, _, err = diode_cli(
        "validate-max-autotune",
        "--model",
        MODEL,
        "--dataset",
        SAMPLE,
        "--max-autotune-solution",
        tmp_path / "solution.json",
    )
    assert_user_error(code, err, "solution.json")


def test_a_gzip_bomb_is_refused_by_the_size_limit(tmp_path, diode_cli):
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (1 << 22), 9))
    with config.patch(max_file_bytes=1 << 20):
        code, _, err = diode_cli("dataset", "stats", bomb)
    assert_user_error(code, err, "bomb.json.gz", "inflates", "TORCH_DIODE_MAX_FILE_BYTES")
    with config.patch(max_file_bytes=1 << 10):
        code, _, err = diode_cli("dataset", "stats", SAMPLE)
    assert_user_error(code, err, "h100_sample.json.gz", "over the limit of 1,024")


def test_the_limits_are_settable_by_the_environment(tmp_path):
    import subprocess
    import sys

    code = "from torch_diode import config; print(config.max_file_bytes, config.max_nesting)"
    env = {**os.environ, "TORCH_DIODE_MAX_FILE_BYTES": "4096", "TORCH_DIODE_MAX_NESTING": "9"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["4096", "9"]


def test_nesting_deeper_than_the_limit_is_refused_naming_the_setting(tmp_path):
    doc = json.loads(gzip.decompress(SAMPLE.read_bytes()))
    deep: dict = {}
    cur = deep
    for _ in range(20):
        cur["a"] = {}
        cur = cur["a"]
    doc["metadata"]["deep"] = deep
    (tmp_path / "d.json").write_text(json.dumps(doc))
    assert load_dataset(tmp_path / "d.json").num_problems > 0
    with config.patch(max_nesting=10), pytest.raises(DatasetFormatError, match="TORCH_DIODE_MAX_NESTING"):
        load_dataset(tmp_path / "d.json")


def _repeated(tmp_path: Path, n: int, rows: bool) -> Path:
    doc = json.loads(gzip.decompress(SAMPLE.read_bytes()))
    row = doc["hardware"][0]["ops"]["mm"][0]
    row.pop("samples_us", None)
    if rows:  # one problem's row n times
        doc["hardware"][0]["ops"]["mm"] = [{**row, "config": [0], "time_us": [2.0], "failed": [False]}] * n
    else:  # one row repeating one config n times
        row.update(config=[row["config"][0]] * n, time_us=[12.5] * n, failed=[False] * n)
    path = tmp_path / f"rep{n}{rows}.msgpack.gz"
    path.write_bytes(gzip.compress(msgpack.packb(doc)))
    return path


@pytest.mark.parametrize("rows", [False, True])
def test_loading_is_linear_in_repeated_configs_and_rows(tmp_path, rows):
    """A 9 KB file repeating one config 256k times must not take minutes (the square of the
    repeats): 16 times the repeats take about 16 times as long, far from 256 (the bound, 64, sits
    between the two on a log scale, so that a loaded machine's noise does not decide)."""
    small, large = (_repeated(tmp_path, n, rows) for n in (2000, 32000))

    def seconds(path: Path) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            ds = load_dataset(path)
            best = min(best, time.perf_counter() - start)
        timings = next(iter(ds.entries[0].ops["mm"].values()))
        assert len(timings[0].samples_us) in (2000, 32000)
        return best

    assert seconds(large) < 64 * seconds(small)


def test_a_file_given_twice_or_inside_a_given_folder_is_read_once(tmp_path, diode_cli):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "a.json.gz")
    (folder / "link.json.gz").symlink_to(folder / "a.json.gz")
    once = load_dataset(SAMPLE)
    merged = load_datasets([folder / "a.json.gz", folder, folder / "a.json.gz", folder / "link.json.gz"])
    assert dataset_to_dict(merged)["hardware"] == dataset_to_dict(once)["hardware"]
    code, out, err = diode_cli(
        "dataset", "merge", folder / "a.json.gz", folder / "a.json.gz", "-o", tmp_path / "m.json"
    )
    assert code == 0, err
    assert dataset_to_dict(load_dataset(tmp_path / "m.json"))["hardware"] == dataset_to_dict(once)["hardware"]

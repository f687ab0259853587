"""Writers of one dataset file exclude each other (DatasetWriter's lock), collectors included: a
second writer is refused with an error naming the holder instead of erasing the first one's data."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torch_diode.collection import Collector
from torch_diode.dataset_io import DatasetLockedError, DatasetWriter, load_dataset, save_dataset
from torch_diode.types import Dataset, Hardware, KernelConfig, Problem, TimedConfig

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "h100_sample.json.gz"
HW = Hardware("test device", None, 4, 0, 1 << 16, "2.13")
DIODE = [sys.executable, "-m", "torch_diode.cli"]


def _problem(m: int) -> Problem:
    return Problem("mm", 1, m, 32, 16, "float32", "float32", "float32")


def _measure(collector: Collector, m: int) -> None:
    collector.dataset.add(HW, _problem(m), [TimedConfig(KernelConfig("aten::mm"), 10.0 + m)])
    collector.flush()


def test_the_next_writer_removes_what_a_killed_writer_left(tmp_path):
    """A writer killed between writing its temporary file and renaming it leaves the file behind;
    the next writer of that dataset removes it, and only its own: a user's file named almost like
    one (``.d.msgpack.backup.tmp``) stays."""
    path = tmp_path / "d.msgpack"
    orphan = tmp_path / ".d.msgpack.k3x9q1ab.diode-tmp"
    kept = [tmp_path / n for n in (".e.msgpack.k3x9q1ab.diode-tmp", ".d.msgpack.backup.tmp", ".d.msgpack.k3x9q1.tmp")]
    for f in (orphan, *kept):
        f.write_bytes(b"half a dataset")
    with DatasetWriter(path):
        assert not orphan.exists() and all(f.exists() for f in kept)


def test_a_second_writer_is_refused_until_the_first_closes(tmp_path):
    path = tmp_path / "d.msgpack"
    with DatasetWriter(path) as first:
        assert first.lock_path.exists()
        with pytest.raises(DatasetLockedError, match=r"d\.msgpack: being written by another writer \(pid \d+"):
            DatasetWriter(path)
        with pytest.raises(DatasetLockedError):
            save_dataset(Dataset(), path)
        first.save(load_dataset(SAMPLE))
    save_dataset(Dataset(), path)  # free again
    assert [p.name for p in tmp_path.iterdir()] == ["d.msgpack"]  # the lock file goes with its writer


def test_two_collectors_on_one_file_keep_the_first_ones_problems(tmp_path):
    """The second collector used to load the file, then erase the first one's problems at its flush."""
    path = tmp_path / "run.json"
    first = Collector(path)
    _measure(first, 64)
    with pytest.raises(DatasetLockedError):
        Collector(path)
    _measure(first, 128)
    first.close()
    second = Collector(path)  # after the first: it extends the file
    _measure(second, 256)
    second.close()
    assert {p.M for _, p, _ in load_dataset(path).problems()} == {64, 128, 256}


def test_a_collector_in_another_process_holds_the_file(tmp_path):
    path = tmp_path / "run.json"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import sys
        from torch_diode.collection import Collector
        c = Collector({str(path)!r})
        print("ready", flush=True)
        sys.stdin.read()
        c.close()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        proc = subprocess.run(
            [*DIODE, "dataset", "merge", str(SAMPLE), "-o", str(path)], capture_output=True, text=True
        )
        assert proc.returncode == 2 and "being written by another writer" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and str(holder.pid) in proc.stderr
        with pytest.raises(DatasetLockedError):
            Collector(path)
    finally:
        holder.communicate("", timeout=60)
    assert holder.returncode == 0
    proc = subprocess.run([*DIODE, "dataset", "merge", str(SAMPLE), "-o", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_restarted_collector_keeps_what_another_writer_added_meanwhile(tmp_path):
    path = tmp_path / "run.json"
    collector = Collector(path)
    _measure(collector, 64)
    collector.close()
    other = load_dataset(path)
    other.add(HW, _problem(512), [TimedConfig(KernelConfig("aten::mm"), 3.0)])
    save_dataset(other, path)
    with pytest.raises(RuntimeError, match="closed"):
        collector.flush()
    collector.reopen()  # takes the file back as it is now
    _measure(collector, 128)
    collector.close()
    assert {p.M for _, p, _ in load_dataset(path).problems()} == {64, 128, 512}


def test_a_released_collector_writes_nothing_until_it_records(tmp_path):
    """A collector let go before it recorded anything leaves no file (a chunk that a stopped
    collection never reached stays absent); taken back, it writes its settings with the first
    problem, and a resumed run with the same settings adds no second record of them."""
    path = tmp_path / "chunk.msgpack"
    collector = Collector(path, settings={"sizes": (64, 128)})
    collector.release()
    assert not path.exists()
    collector.reopen()
    _measure(collector, 64)
    collector.close()
    resumed = Collector(path, settings={"sizes": (64, 128)})
    resumed.reopen()
    _measure(resumed, 128)
    resumed.close()
    changed = Collector(path, settings={"sizes": (256,)})
    changed.close()
    sources = load_dataset(path).metadata["sources"]
    assert [s["settings"] for s in sources] == [{"sizes": [64, 128]}, {"sizes": [256]}]
    assert {p.M for _, p, _ in load_dataset(path).problems()} == {64, 128}

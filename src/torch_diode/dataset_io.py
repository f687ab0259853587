"""Dataset files: the layout of a :class:`~torch_diode.types.Dataset` in a file, loading, and
saving under a writer's lock. The file is JSON or msgpack, optionally gzip-compressed
(:mod:`torch_diode.formats`), and both round trips are exact.

File layout (schema version 1)::

    {"format": "torch-diode-dataset", "schema_version": 1,
     "metadata": {"created": ISO-8601, "sources": [{"tool": ..., "settings": {...}, ...}]},
     "configs": [KernelConfig, ...],            # table shared by every problem
     "hardware": [{"hardware": Hardware,
                   "ops": {"mm": [{"problem": Problem,
                                   "config": [i, ...],        # index into "configs"
                                   "time_us": [t or null, ...],  # null where failed
                                   "failed": [bool, ...],
                                   "samples_us": [[t, ...], ...]  # only if a pair has >1 sample
                                   }, ...]}}]}

Loading a file that is truncated, corrupt, of a wrong type, missing a field, out of range, nested
absurdly deep, or written by a newer schema raises :class:`DatasetFormatError` naming the file and
the field; whatever loads can be written back in either format. A problem listed twice under one
hardware record (rows of one file, or two files) is one problem: its rows' samples are merged
(:meth:`Dataset.merge`).

Writers of a dataset file (:func:`save_dataset`, the collectors) hold :class:`DatasetWriter`'s lock
on it, so a second writer is refused (:class:`DatasetLockedError`) instead of overwriting the
first one's data.
"""

from __future__ import annotations

import fcntl
import math
import os
import socket
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import UserError
from .fileio import FileError, atomic_write_bytes, kind_of_mode, open_lock, remove_orphans
from .formats import (
    DATASET_SUFFIXES,
    DatasetFormatError,
    Reader,
    check_document,
    check_type,
    dataset_format,
    decode,
    encode,
)
from .types import OPS, Dataset, Hardware, HardwareEntry, KernelConfig, Problem, TimedConfig

SCHEMA_VERSION = 1
FORMAT_NAME = "torch-diode-dataset"


def dataset_to_dict(dataset: Dataset) -> dict[str, Any]:
    """``dataset`` as the file's document (the layout in the module docstring)."""
    config_index: dict[KernelConfig, int] = {}
    configs: list[dict[str, Any]] = []
    hardware_list = []
    for entry in dataset.entries:
        ops_out: dict[str, list[dict[str, Any]]] = {}
        for op in sorted(entry.ops):
            rows = []
            for problem, timings in entry.ops[op].items():
                idx = []
                for t in timings:
                    i = config_index.get(t.config)
                    if i is None:
                        i = config_index[t.config] = len(configs)
                        configs.append(t.config.to_dict())
                    idx.append(i)
                row: dict[str, Any] = {
                    "problem": problem.to_dict(),
                    "config": idx,
                    "time_us": [None if t.failed else t.time_us for t in timings],
                    "failed": [t.failed for t in timings],
                }
                if any(len(t.samples_us) > 1 for t in timings):
                    row["samples_us"] = [list(t.samples_us) for t in timings]
                rows.append(row)
            ops_out[op] = rows
        hardware_list.append({"hardware": entry.hardware.to_dict(), "ops": ops_out})
    return {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "metadata": dataset.metadata,
        "configs": configs,
        "hardware": hardware_list,
    }


def dataset_from_dict(data: Any, source: str | None = None) -> Dataset:
    """The dataset of a file's document; DatasetFormatError naming ``source`` and the field where it
    does not follow the layout."""
    r = Reader(data, "", source)
    fmt = r.get("format", str)
    if fmt != FORMAT_NAME:
        raise r.error("format", f"expected {FORMAT_NAME!r}, got {fmt!r}")
    version = r.get("schema_version", int)
    if version > SCHEMA_VERSION:
        raise r.error(
            "schema_version",
            f"file has schema version {version}, this torch-diode reads up to {SCHEMA_VERSION}: upgrade torch-diode",
        )
    if version < 1:
        raise r.error("schema_version", f"invalid schema version {version}")
    metadata = r.get("metadata", dict)
    check_document(metadata, source, "metadata")  # free-form: it must save again in both formats
    check_metadata(r.sub("metadata"))
    config_rows = r.get("configs", list)
    configs = [KernelConfig.from_dict(c, f"configs[{i}]", source) for i, c in enumerate(config_rows)]
    ds = Dataset(metadata=metadata)
    entries: dict[Hardware, HardwareEntry] = {}
    # a problem's rows (repeated rows, repeated configs) are gathered and merged once: linear
    pending: dict[tuple[Hardware, Problem], list[TimedConfig]] = {}
    for h, hw_data in enumerate(r.get("hardware", list)):
        hr = Reader(hw_data, f"hardware[{h}]", source)
        hardware = Hardware.from_dict(hr.get("hardware", dict), hr.path("hardware"), source)
        if hardware not in entries:
            entries[hardware] = HardwareEntry(hardware)
            ds.entries.append(entries[hardware])
        ops = hr.sub("ops")
        for op, rows in ops.data.items():
            if op not in OPS:
                raise ops.error(op, f"unknown op {op!r}, expected one of {OPS}")
            check_type(rows, list, source, ops.path(op))
            entries[hardware].ops.setdefault(op, {})
            for p, row_data in enumerate(rows):
                pr = Reader(row_data, f"{ops.path(op)}[{p}]", source)
                problem = Problem.from_dict(pr.get("problem", dict), pr.path("problem"), source)
                if problem.op != op:
                    raise pr.error("problem.op", f"{problem.op!r} listed under op {op!r}")
                pending.setdefault((hardware, problem), []).extend(_read_timings(pr, configs))
    for (hardware, problem), timings in pending.items():
        entries[hardware].add(problem, timings)
    return ds


def check_metadata(r: Reader) -> None:
    """The metadata keys that torch-diode itself reads back (a resumed collection's progress)."""
    r.get("sources", list, optional=True)
    completed = r.get("completed", list, optional=True) or []
    for i, key in enumerate(completed):
        check_type(key, str, r.source, f"{r.path('completed')}[{i}]")
    for i, item in enumerate(r.get("skipped", list, optional=True) or []):
        Reader(item, f"{r.path('skipped')}[{i}]", r.source).get("problem_key", str)
    in_flight = r.get("in_flight", dict, optional=True)
    if in_flight is not None:
        fr = r.sub("in_flight")
        fr.get("problem_key", str)
        fr.bounded("attempts", 0, 1 << 31, optional=True)


def _read_timings(pr: Reader, configs: list[KernelConfig]) -> list[TimedConfig]:
    idx = pr.get("config", list)
    times = pr.get("time_us", list)
    failed = pr.get("failed", list)
    samples = pr.get("samples_us", list, optional=True)
    for name, column in (("time_us", times), ("failed", failed), ("samples_us", samples)):
        if column is not None and len(column) != len(idx):
            raise pr.error(name, f"has {len(column)} entries, 'config' has {len(idx)}")
    out = []
    # the exact types pass on their own; check_type converts (an int time) or names the bad value
    for i, ci in enumerate(idx):
        if type(ci) is not int:
            check_type(ci, int, pr.source, f"{pr.path('config')}[{i}]")
        if not 0 <= ci < len(configs):
            raise pr.error(f"config[{i}]", f"index {ci} outside the configs table (size {len(configs)})")
        is_failed = failed[i]
        if type(is_failed) is not bool:
            check_type(is_failed, bool, pr.source, f"{pr.path('failed')}[{i}]")
        if is_failed:
            out.append(TimedConfig.failure(configs[ci]))
            continue
        t = times[i]
        if type(t) is not float:
            t = check_type(t, float, pr.source, f"{pr.path('time_us')}[{i}]")
        if not (t > 0 and math.isfinite(t)):
            raise pr.error(f"time_us[{i}]", f"expected a positive finite time, got {t!r}")
        s: tuple[float, ...] = ()
        if samples is not None:
            column = samples[i]
            if type(column) is not list:
                column = check_type(column, list, pr.source, f"{pr.path('samples_us')}[{i}]")
            s = tuple(column)
            if not all(type(v) is float for v in s):
                s = tuple(check_type(v, float, pr.source, f"{pr.path('samples_us')}[{i}]") for v in column)
            if not all(v > 0 and math.isfinite(v) for v in s):
                raise pr.error(f"samples_us[{i}]", f"expected positive finite times, got {list(s)!r:.80}")
        out.append(TimedConfig(configs[ci], t, False, s))
    return out


class DatasetLockedError(UserError):
    """Another writer holds the dataset file's lock."""

    def __init__(self, path: str | os.PathLike, holder: str):
        self.path = str(path)
        super().__init__(
            f"{path}: being written by another writer ({holder or 'holder unknown'}); "
            "wait for it to finish or write to another file"
        )


class DatasetWriter:
    """Exclusive write access to a dataset file: an ``fcntl.flock`` on the sidecar file
    ``.<name>.lock`` beside it (removed again by :meth:`close`), held from :meth:`acquire` (on
    creation) to :meth:`close`; acquiring it removes the temporary files a killed writer left
    beside the file. A second
    writer of the same file, in this process or another, gets :class:`DatasetLockedError` naming
    the holder instead of overwriting what the first one writes. Readers take no lock: writes are
    atomic renames."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        dataset_format(self.path)  # an unknown suffix fails before anything is written
        self._lock: Any = None
        self.acquire()

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.lock")

    @property
    def locked(self) -> bool:
        return self._lock is not None

    def acquire(self) -> None:
        if self._lock is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # named by the dataset file
            raise OSError(e.errno, f"cannot write there ({e.strerror})", str(self.path)) from None
        lock = open_lock(self.lock_path, self.path)  # never through a link
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.seek(0)
                holder = lock.read(200).strip()
                lock.close()
                raise DatasetLockedError(self.path, holder) from None
            # the holder before us may have removed the lock file as it let go: lock the file
            # that is there now, not the removed one
            try:
                current = os.lstat(self.lock_path)
            except FileNotFoundError:
                current = None
            mine = os.fstat(lock.fileno())
            if current is not None and (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev):
                break
            lock.close()
            lock = open_lock(self.lock_path, self.path)
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        lock.flush()
        self._lock = lock
        # temporary files of a writer killed between writing and renaming (atomic_write_bytes): only
        # the lock's holder writes them, so any there now are orphans (ours by name and owner)
        remove_orphans(self.path)

    def load(self) -> Dataset | None:
        """The dataset now in the file (None where there is no file yet)."""
        return load_dataset(self.path) if self.path.exists() else None

    def save(self, dataset: Dataset) -> Path:
        """Writes atomically; the format follows the suffix (.json, .msgpack, each optionally .gz)."""
        if self._lock is None:
            raise RuntimeError(f"{self.path}: DatasetWriter.save after close")
        atomic_write_bytes(self.path, encode(checked_for_writing(dataset, self.path), self.path))
        return self.path

    def close(self) -> None:
        """Gives up the lock and removes the lock file (while still holding it)."""
        if self._lock is not None:
            Path(self.lock_path).unlink(missing_ok=True)
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def checked_for_writing(dataset: Dataset, path: str | os.PathLike) -> dict[str, Any]:
    """``dataset_to_dict(dataset)`` where :func:`load_dataset` would read it back: DatasetFormatError
    naming ``path`` and the field otherwise (NaN, bytes, non-string keys or nesting too deep in the
    metadata, progress records of the wrong type), and nothing is written."""
    data = dataset_to_dict(dataset)
    try:
        check_document(data, path)
        check_metadata(Reader(data["metadata"], "metadata", str(path)))
    except DatasetFormatError as e:
        raise DatasetFormatError(path, e.field_path, f"{e.detail}: not written (a reader would refuse it)") from None
    return data


def save_dataset(dataset: Dataset, path: str | os.PathLike) -> Path:
    """Saves atomically under the file's writer lock; the format follows the suffix (.json,
    .msgpack, each optionally .gz)."""
    with DatasetWriter(path) as writer:
        return writer.save(dataset)


def load_dataset(path: str | os.PathLike) -> Dataset:
    return dataset_from_dict(decode(path), source=str(path))


def dataset_files(path: str | os.PathLike, extensions: Iterable[str] | None = None) -> list[Path]:
    """The dataset files at ``path``: the file itself, or a folder's files (recursively, sorted)."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError:
        raise FileNotFoundError(f"{path}: no such file or folder") from None
    if stat.S_ISREG(st.st_mode):
        return [path]
    if not stat.S_ISDIR(st.st_mode):
        raise FileError(path, f"cannot read: {kind_of_mode(st.st_mode)}, not a regular file")
    suffixes = tuple("." + e.lstrip(".") for e in extensions) if extensions else DATASET_SUFFIXES
    return sorted(
        p for p in path.rglob("*") if p.is_file() and p.name.endswith(suffixes) and not p.name.startswith(".")
    )


def unique_files(files: Iterable[Path]) -> list[Path]:
    """``files`` with each file once (the first of the names it is given by: a file named twice,
    through a link, or found again in a folder that is also given)."""
    seen: set[tuple[int, int]] = set()
    out = []
    for f in files:
        try:
            st = os.stat(f)
            key = (st.st_dev, st.st_ino)
        except OSError:
            out.append(f)  # reading it names the error
            continue
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def load_each(paths: Iterable[str | os.PathLike], extensions: Iterable[str] | None = None) -> Iterator[Dataset]:
    """The dataset of each file of files and folders of files, in :func:`dataset_files` order,
    read as it is iterated; a file given twice (by name, through a link, or inside a folder also
    given) is read once. For rules that read a file's own metadata (whether its collection ran
    with TF32: :func:`torch_diode.coverage.settings_say_tf32`)."""
    paths = list(paths)
    files = unique_files(f for p in paths for f in dataset_files(p, extensions))
    if not files:
        raise FileNotFoundError(f"no dataset files in {' '.join(str(p) for p in paths)}")
    return (load_dataset(f) for f in files)


def merge_all(datasets: Iterable[Dataset]) -> Dataset:
    """The datasets merged in order into a new one (see :meth:`Dataset.merge`)."""
    merged = Dataset()
    for dataset in datasets:
        merged.merge(dataset)
    return merged


def load_datasets(paths: Iterable[str | os.PathLike], extensions: Iterable[str] | None = None) -> Dataset:
    """Loads and merges files and folders of files (:func:`load_each`, then :meth:`Dataset.merge`)."""
    return merge_all(load_each(paths, extensions))


__all__ = [
    "SCHEMA_VERSION",
    "DatasetLockedError",
    "DatasetWriter",
    "dataset_files",
    "dataset_from_dict",
    "dataset_to_dict",
    "load_dataset",
    "load_datasets",
    "load_each",
    "merge_all",
    "save_dataset",
]

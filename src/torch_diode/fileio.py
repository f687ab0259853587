"""The user's files, read and written safely.

Reading (:func:`read_regular`): only a regular file is read (a FIFO, a device such as
``/dev/zero``, a socket or a folder gets one line naming the file instead of a hang), and no file
larger than ``torch_diode.config.max_file_bytes`` (``TORCH_DIODE_MAX_FILE_BYTES``, 1 GiB); a gzip
stream is inflated to at most the same size (:func:`gunzip`).

Writing (:func:`atomic_write_bytes`): a temporary file beside the output, created exclusively
(``O_EXCL``, never through a link) under a name no user picks (``.<name>.XXXXXXXX.diode-tmp``),
fsynced, then renamed over the output. A rewritten output keeps the mode and group of the file it
replaces; a new one gets 0666 less the umask. Only temporary files of that pattern that this user
owns are ever removed (:func:`remove_orphans`). Lock files (:func:`open_lock`) are opened without
following a link and only where they are a regular file with one name (no hard link to a
user's file).

Before an output is replaced, :func:`existing_kind` says what it holds (a dataset, a model, a
JSON document, ...): the commands refuse to replace a file of another kind than the one they
write unless ``--force`` (``cli.common.check_outputs``).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import tempfile
import zlib
from pathlib import Path

from .errors import UserError

TMP_SUFFIX = ".diode-tmp"
_HEAD_BYTES = 1 << 16  # what existing_kind reads of a file


class FileError(UserError):
    """A file that cannot be read or written as asked; the message names it (one line)."""

    def __init__(self, path: str | os.PathLike, message: str):
        self.path = str(path)
        super().__init__(f"{path}: {message}")


class SizeLimitError(ValueError):
    """A gzip stream that inflates past the limit (:func:`gunzip`)."""


def max_file_bytes() -> int:
    from . import config

    return int(config.max_file_bytes)


def kind_of_mode(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _open_regular(path: str | os.PathLike) -> tuple[io.BufferedReader, os.stat_result]:
    """``path`` opened for reading without blocking on a FIFO, with its stat; FileError naming it
    where it cannot be opened or is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise FileError(path, f"cannot read: {e.strerror or e}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileError(path, f"cannot read: {kind_of_mode(st.st_mode)}, not a regular file")
    return os.fdopen(fd, "rb"), st


def read_regular(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``; FileError naming it where it is missing, not a
    regular file (opened without blocking, so a FIFO cannot hang the reader) or larger than
    ``limit`` (default :func:`max_file_bytes`)."""
    limit = max_file_bytes() if limit is None else limit
    f, st = _open_regular(path)
    with f:
        if st.st_size > limit:
            raise FileError(path, _too_big(f"is {st.st_size:,} bytes", limit))
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise FileError(path, f"cannot read: {e.strerror or e}") from None
    if len(data) > limit:  # grew while read
        raise FileError(path, _too_big("is larger", limit))
    return data


def _too_big(what: str, limit: int) -> str:
    return f"{what}, over the limit of {limit:,} (TORCH_DIODE_MAX_FILE_BYTES, torch_diode.config.max_file_bytes)"


def gunzip(raw: bytes, limit: int | None = None) -> bytes:
    """``raw`` inflated (every gzip member), at most ``limit`` bytes (default
    :func:`max_file_bytes`): SizeLimitError past it, OSError/EOFError/zlib.error where corrupt."""
    limit = max_file_bytes() if limit is None else limit
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise SizeLimitError(_too_big("inflates to more bytes", limit))
    return data


# ----- writing -----------------------------------------------------------------------------------
def _tmp_pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(f".{name}.") + r"[A-Za-z0-9_]{8}" + re.escape(TMP_SUFFIX))


def remove_orphans(path: str | os.PathLike) -> list[Path]:
    """Removes the temporary files a killed writer of ``path`` left beside it: regular files named
    as :func:`atomic_write_bytes` names them and owned by this user, nothing else. Returns them."""
    path = Path(path)
    pattern = _tmp_pattern(path.name)
    removed = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        if not pattern.fullmatch(name):
            continue
        orphan = path.parent / name
        try:
            st = os.lstat(orphan)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
                orphan.unlink()
                removed.append(orphan)
        except OSError:
            continue
    return removed


def atomic_write_bytes(path: str | os.PathLike, payload: bytes) -> None:
    """Writes ``payload`` to a new temporary file beside ``path``, fsyncs it, then renames it over
    ``path``. The file keeps the mode and group of the one it replaces (a new one: 0666 less the
    umask). An error names ``path``, never the temporary file."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            _take_mode(f.fileno(), path)
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise OSError(e.errno, f"cannot write there ({e.strerror or e})", str(path)) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _take_mode(fd: int, path: Path) -> None:
    """The mode (permission bits) and group of the file at ``path`` onto ``fd``; where there is
    none, 0666 less the umask (mkstemp's own is a private 0600)."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o777)
        if st.st_gid != os.fstat(fd).st_gid:
            try:
                os.fchown(fd, -1, st.st_gid)
            except OSError:  # not a member of that group: the file keeps ours
                pass
        return
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)


def open_lock(lock_path: str | os.PathLike, owner: str | os.PathLike):
    """The lock file ``lock_path`` of ``owner`` (the file it guards), opened read-write and
    created if missing, never through a link: FileError naming ``owner`` where it is a link, not a
    regular file, or a regular file with more than one name (a hard link to someone's file)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(lock_path, flags, 0o644)
    except OSError as e:
        if os.path.islink(lock_path):
            raise FileError(owner, f"its lock file {lock_path} is a symbolic link: not ours, left alone") from None
        raise OSError(e.errno, f"cannot write there ({e.strerror})", str(owner)) from None
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = kind_of_mode(st.st_mode)
    elif st.st_nlink != 1:
        problem = f"a file with {st.st_nlink} names (a hard link)"
    if problem is not None:
        os.close(fd)
        raise FileError(owner, f"its lock file {lock_path} is {problem}: not ours, left alone")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "r+")


# ----- what an existing output holds -------------------------------------------------------------
KIND_NAMES = {
    "dataset": "a torch-diode dataset",
    "model": "a torch-diode model file",
    "json": "a JSON document",
    "other": "a file of another kind",
    "special": "not a regular file",
}


def existing_kind(path: str | os.PathLike) -> str | None:
    """What the file at ``path`` holds, from its first bytes: None (no file), ``"empty"``,
    ``"dataset"``, ``"model"``, ``"json"`` (another JSON document), ``"special"`` (a FIFO, a
    device...) or ``"other"``."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return "special"
    if st.st_size == 0:
        return "empty"
    try:
        f, _ = _open_regular(path)
        with f:
            head = f.read(_HEAD_BYTES)
    except (FileError, OSError):
        return "other"
    if head.startswith(b"DIODEMDL"):
        return "model"
    if head.startswith(b"\x1f\x8b"):
        head = _inflate_head(head)
    dataset = b"torch-diode-dataset" in head
    text = head.lstrip()
    if text[:1] in (b"{", b"["):
        return "dataset" if dataset else "json"
    if head[:1] and (0x80 <= head[0] <= 0x8F or head[0] in (0xDE, 0xDF)) and dataset:
        return "dataset"
    return "other"


def _inflate_head(raw: bytes) -> bytes:
    """The start of a gzip stream's content from the start of the stream."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, _HEAD_BYTES)
    except zlib.error:
        return b""


__all__ = [
    "FileError",
    "KIND_NAMES",
    "SizeLimitError",
    "TMP_SUFFIX",
    "atomic_write_bytes",
    "existing_kind",
    "gunzip",
    "open_lock",
    "read_regular",
    "remove_orphans",
]

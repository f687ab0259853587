"""The file formats of torch-diode's data files (datasets, shapesets, reports, model metadata):
JSON or msgpack, each optionally gzip-compressed (``.json``, ``.json.gz``, ``.msgpack``,
``.msgpack.gz``), decoded into plain documents, and typed reading of those documents.

A file that is truncated, corrupt, not such a document (NaN, bytes, non-string keys, integers
beyond 64 bits) or nested absurdly deep raises :class:`DatasetFormatError` naming the file; a field
of the wrong type or missing, read through :class:`Reader`, names the field too. Whatever decodes
can be encoded again in either format.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Iterable
from typing import Any

import msgpack

from .errors import UserError
from .fileio import FileError, SizeLimitError, gunzip, read_regular

DATASET_SUFFIXES = (".json", ".json.gz", ".msgpack", ".msgpack.gz")


class DatasetFormatError(UserError):
    """A dataset file (or dict) does not follow the schema. Names the file and the field."""

    def __init__(self, source: str | os.PathLike | None, field_path: str, message: str):
        self.source = str(source) if source is not None else "<dict>"
        self.field_path = field_path or "<root>"
        self.detail = message
        # "<file>", "<suffix>", "<root>": the file as a whole, its name or its top level, no field
        where = "" if self.field_path.startswith("<") else f"field '{self.field_path}': "
        super().__init__(f"{self.source}: {where}{message}")


class Reader:
    """Typed access to a decoded dict, raising DatasetFormatError with the field's path."""

    def __init__(self, data: Any, where: str, source: str | None):
        if not isinstance(data, dict):
            raise DatasetFormatError(source, where, f"expected an object, got {type(data).__name__}")
        self.data, self.where, self.source = data, where, source

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, message: str) -> DatasetFormatError:
        return DatasetFormatError(self.source, self.path(key), message)

    def get(self, key: str, kind: type | tuple[type, ...], optional: bool = False) -> Any:
        if key not in self.data:
            if optional:
                return None
            raise self.error(key, "missing")
        value = self.data[key]
        if value is None and optional:
            return None
        return check_type(value, kind, self.source, self.path(key))

    def sub(self, key: str) -> Reader:
        return Reader(self.get(key, dict), self.path(key), self.source)

    def int_tuple(self, key: str, optional: bool = False) -> tuple[int, ...] | None:
        value = self.get(key, (list, tuple), optional=optional)
        if value is None:
            return None
        return tuple(check_type(v, int, self.source, f"{self.path(key)}[{i}]") for i, v in enumerate(value))

    def bounded(self, key: str, lo: int, hi: int, optional: bool = False) -> int | None:
        value = self.get(key, int, optional=optional)
        if value is not None and not lo <= value <= hi:
            raise self.error(key, f"{value} is outside [{lo}, {hi}]")
        return value

    def choice(self, key: str, allowed: Iterable[str]) -> str:
        value = self.get(key, str)
        if value not in allowed:
            raise self.error(key, f"{value!r} is not one of {sorted(allowed)}")
        return value


def check_type(value: Any, kind: type | tuple[type, ...], source: str | None, where: str) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int in Python; an int field must not accept True, a float field accepts ints.
    if isinstance(value, bool) and bool not in kinds:
        ok = False
    elif float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    else:
        ok = isinstance(value, kinds)
    if not ok:
        names = " or ".join(k.__name__ for k in kinds)
        raise DatasetFormatError(source, where, f"expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


def dataset_format(path: str | os.PathLike) -> tuple[str, bool]:
    """(``"json"`` or ``"msgpack"``, gzip?) from a file name; DatasetFormatError for other suffixes."""
    name = str(path)
    compressed = name.endswith(".gz")
    base = name[:-3] if compressed else name
    if base.endswith(".json"):
        return "json", compressed
    if base.endswith(".msgpack"):
        return "msgpack", compressed
    raise DatasetFormatError(name, "<suffix>", f"unknown dataset suffix, expected one of {', '.join(DATASET_SUFFIXES)}")


def encode(data: Any, path: str | os.PathLike) -> bytes:
    fmt, compressed = dataset_format(path)
    if fmt == "json":
        raw = json.dumps(data, allow_nan=False, separators=(",", ":")).encode()
    else:
        raw = msgpack.packb(data, use_bin_type=True)
    return gzip.compress(raw, compresslevel=6, mtime=0) if compressed else raw


_INT64 = (-(1 << 63), (1 << 63) - 1)


def decode_bytes(raw: bytes, fmt: str, compressed: bool, source: str | os.PathLike) -> Any:
    """Decodes JSON/msgpack(.gz) bytes into plain values (see :func:`check_document`);
    DatasetFormatError naming ``source`` for any byte string that is not such a document."""
    try:
        if compressed:
            raw = gunzip(raw)
    except SizeLimitError as e:
        raise DatasetFormatError(source, "<file>", str(e)) from None
    except (OSError, EOFError, zlib.error) as e:
        raise DatasetFormatError(source, "<file>", f"not valid gzip (truncated or corrupt?): {str(e):.200}") from None
    try:
        if fmt == "json":
            data = json.loads(raw)
        else:
            data = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as e:
        kind = fmt
        detail = "nested too deep" if isinstance(e, RecursionError) else str(e)
        raise DatasetFormatError(source, "<file>", f"not valid {kind} (truncated or corrupt?): {detail:.200}") from None
    check_document(data, source)
    return data


def check_document(data: Any, source: str | os.PathLike | None, where: str = "") -> None:
    """Raises DatasetFormatError unless ``data`` holds only what both formats write: objects with
    string keys, arrays, strings, booleans, null, finite floats and 64-bit integers, nested at most
    ``torch_diode.config.max_nesting`` deep (TORCH_DIODE_MAX_NESTING; torch-diode's own files reach
    about 8). So whatever loads can be saved again, as JSON or as msgpack. ``where``: the field path
    of ``data`` inside its file."""
    if not isinstance(data, (dict, list)):
        raise DatasetFormatError(source, where or "<root>", f"expected an object, got {type(data).__name__}")
    from . import config

    max_nesting = config.max_nesting
    stack: list[tuple[Any, str, int]] = [(data, where, 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > max_nesting:
            raise DatasetFormatError(
                source,
                where.lstrip(".") or "<root>",
                f"nested deeper than {max_nesting} levels (TORCH_DIODE_MAX_NESTING, torch_diode.config.max_nesting, "
                "raises the limit)",
            )
        if _plain_scalars(value):
            continue  # a dataset's columns and configs: checked whole, item by item below only to name a bad one
        if isinstance(value, dict):
            items: Iterable[tuple[Any, Any]] = value.items()
        else:
            items = enumerate(value)
        for key, item in items:
            if isinstance(value, dict) and not isinstance(key, str):
                raise DatasetFormatError(source, where.lstrip(".") or "<root>", f"key {key!r:.40} is not a string")
            if isinstance(item, (dict, list)):
                stack.append((item, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]", depth + 1))
            elif item is None or isinstance(item, (str, bool)):
                continue
            elif isinstance(item, int):
                if not _INT64[0] <= item <= _INT64[1]:
                    path = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
                    raise DatasetFormatError(source, path.lstrip("."), f"integer {item:.3g} does not fit 64 bits")
            elif isinstance(item, float):
                if not math.isfinite(item):
                    path = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
                    raise DatasetFormatError(source, path.lstrip("."), f"{item} is not a finite number")
            else:
                path = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
                raise DatasetFormatError(source, path.lstrip("."), f"unsupported value of type {type(item).__name__}")


_SCALAR_TYPES = frozenset({str, bool, type(None), int, float})


def _plain_scalars(value: Any) -> bool:
    """Whether ``value`` is a list, or an object with string keys, of only strings, booleans,
    nulls, 64-bit integers and finite floats."""
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            return False
        values = list(value.values())
    elif type(value) is list:
        values = value
    else:
        return False
    kinds = set(map(type, values))
    if not kinds <= _SCALAR_TYPES:
        return False
    if int in kinds:
        ints = [v for v in values if type(v) is int]
        if min(ints) < _INT64[0] or max(ints) > _INT64[1]:
            return False
    return float not in kinds or all(map(math.isfinite, (v for v in values if type(v) is float)))


def decode(path: str | os.PathLike) -> Any:
    """Reads a JSON/msgpack(.gz) file; DatasetFormatError on truncation or corruption."""
    fmt, compressed = dataset_format(path)
    return decode_bytes(read_input_bytes(path), fmt, compressed, path)


def read_input_bytes(path: str | os.PathLike) -> bytes:
    """A file's bytes; DatasetFormatError naming it where it cannot be read (missing, a folder, a
    FIFO or device, larger than torch_diode.config.max_file_bytes: :func:`fileio.read_regular`)."""
    try:
        return read_regular(path)
    except FileError as e:
        raise DatasetFormatError(path, "<file>", str(e).removeprefix(f"{path}: ")) from None


__all__ = [
    "DATASET_SUFFIXES",
    "DatasetFormatError",
    "Reader",
    "check_document",
    "check_type",
    "dataset_format",
    "decode",
    "decode_bytes",
    "encode",
    "read_input_bytes",
]

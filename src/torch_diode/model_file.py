"""torch-diode model files: written here, read by the C++ engine (``torch_diode._C.Model``).

The byte layout is documented in ``csrc/include/diode/model.h``: a fixed binary header, JSON
metadata, little-endian float32 tensors and an FNV-1a checksum. Nothing in it is executable, so
loading a model never runs code (no pickle). There is one reader, the C++ one: Python gets
the weights back from it (:func:`read_model`).

The metadata records the model family and layer sizes, the feature spec (names and version),
the hardware the training data came from (with its ``hardware_id``), the torch/triton versions of
that data and a summary of the training run.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._C import FEATURE_VERSION, MODEL_FORMAT_VERSION, Model, ModelFormatError, fnv1a64
from .fileio import atomic_write_bytes

MAGIC = b"DIODEMDL"
FORMAT_VERSION: int = MODEL_FORMAT_VERSION
MODEL_SUFFIX = ".diode"


Layers = list[tuple[np.ndarray, np.ndarray]]  # (weight[out, in], bias[out]) per Linear layer


@dataclass
class ModelFile:
    """The contents of a model file: MLPs of the same dims on normalised features predicting
    ln(time_us) (``layers``: the first; ``members``: every one, an ensemble whose mean is the
    prediction)."""

    layers: Layers
    feature_mean: np.ndarray
    feature_std: np.ndarray
    target_mean: float
    target_std: float
    metadata: dict[str, Any] = field(default_factory=dict)
    more_members: list[Layers] = field(default_factory=list)  # members after the first
    # the features it reads: the first _C.features_of_version(feature_version) of each row
    feature_version: int = FEATURE_VERSION

    @property
    def members(self) -> list[Layers]:
        return [self.layers, *self.more_members]

    @property
    def dims(self) -> list[int]:
        return [self.layers[0][0].shape[1]] + [w.shape[0] for w, _ in self.layers]

    def to_bytes(self) -> bytes:
        dims = self.dims
        if dims[-1] != 1:
            raise ValueError(f"the last layer must have 1 output, got {dims[-1]}")
        for k, layers in enumerate(self.members):
            if len(layers) != len(self.layers):
                raise ValueError(f"members[{k}]: {len(layers)} layers, the first member has {len(self.layers)}")
            for i, (w, b) in enumerate(layers):
                if w.shape != (dims[i + 1], dims[i]) or b.shape != (dims[i + 1],):
                    raise ValueError(
                        f"members[{k}].layers[{i}]: weight {w.shape} / bias {b.shape} do not chain with dims {dims}"
                    )
        return self.encode(json.dumps(self.metadata, sort_keys=True, allow_nan=False).encode())

    def encode(self, meta: bytes) -> bytes:
        """The file's bytes with ``meta`` as its metadata bytes, as they are (``to_bytes`` checks the
        weights and serialises the metadata first), under the checksum of the whole."""
        dims = self.dims
        parts = [
            MAGIC,
            struct.pack("<4I", FORMAT_VERSION, self.feature_version, len(self.members), len(self.layers)),
            struct.pack(f"<{len(dims)}I", *dims),
            struct.pack("<I", 0),  # activation: ReLU
            struct.pack("<Q", len(meta)),
            meta,
            _f32(self.feature_mean),
            _f32(self.feature_std),
            _f32([self.target_mean, self.target_std]),
        ]
        for layers in self.members:
            for w, b in layers:
                parts += [_f32(w), _f32(b)]
        body = b"".join(parts)
        return body + struct.pack("<Q", fnv1a64(body))


def _f32(x: Any) -> bytes:
    return np.ascontiguousarray(x, dtype="<f4").tobytes()


def write_model(path: str | os.PathLike, model: ModelFile) -> Path:
    """Writes atomically; the file is read back by the C++ loader before it replaces ``path``."""
    from .formats import DatasetFormatError, check_document

    try:  # what JSON would change (non-string keys) or refuse (NaN), before encoding; tuples are lists
        check_document(_lists(model.metadata), path, "metadata")
    except DatasetFormatError as e:
        raise ModelFormatError(f"{path}: field '{e.field_path}': {e.detail}: not written") from None
    payload = model.to_bytes()
    engine_from_bytes(payload, path)  # never write a file a reader would refuse
    atomic_write_bytes(path, payload)
    return Path(path)


def read_model_bytes(path: str | os.PathLike) -> bytes:
    """A model file's bytes (a regular file, at most config.max_file_bytes: fileio.read_regular)."""
    from .fileio import read_regular

    return read_regular(path)


def _lists(value: Any) -> Any:
    """``value`` with its tuples as lists (as JSON writes them)."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


def load_engine(path: str | os.PathLike) -> Model:
    """The C++ engine for a model file whose metadata :func:`check_metadata` accepts
    (ModelFormatError naming the file and field if unusable)."""
    return engine_from_bytes(read_model_bytes(path), path)


def engine_from_bytes(payload: bytes, path: str | os.PathLike) -> Model:
    """The C++ engine of a model file's bytes (read from ``path``, which errors name): refused,
    naming the field, where its metadata is malformed."""
    engine = Model.from_bytes(payload, str(path))
    _metadata(engine, path)
    return engine


def read_model(path: str | os.PathLike) -> ModelFile:
    """Everything in a model file, through the C++ reader."""
    engine = load_engine(path)
    members = [
        [(np.asarray(engine.weight(i, k)), np.asarray(engine.bias(i, k))) for i in range(len(engine.dims) - 1)]
        for k in range(engine.num_members)
    ]
    return ModelFile(
        members[0],
        np.asarray(engine.feature_mean()),
        np.asarray(engine.feature_std()),
        float(engine.target_mean),
        float(engine.target_std),
        _metadata(engine, path),
        members[1:],
        int(engine.feature_version),
    )


def model_metadata(path: str | os.PathLike) -> dict[str, Any]:
    return _metadata(load_engine(path), path)


def _metadata(engine: Model, path: str | os.PathLike) -> dict[str, Any]:
    """The engine's metadata as a dict; ModelFormatError naming the file if it is not a JSON object."""
    from .formats import DatasetFormatError, decode_bytes

    try:
        metadata = decode_bytes(engine.metadata_json.encode(), "json", False, path)
    except DatasetFormatError as e:
        where = "metadata" if e.field_path in ("<file>", "<root>") else f"metadata.{e.field_path}"
        raise ModelFormatError(f"{path}: field '{where}': {e.detail}") from None
    check_metadata(metadata, path)
    return metadata


# the metadata fields torch-diode reads back, and their types (None: the field may be null)
_FIELDS: dict[str, tuple[type, ...]] = {
    "created": (str,),
    "feature_names": (list,),
    "feature_version": (int,),
    "hardware": (dict,),
    "hidden_dim": (int,),
    "model_family": (str,),
    "num_layers": (int,),
    "op": (str, type(None)),
    "target": (str,),
    "torch_diode_version": (str,),
    "training": (dict,),
    "training_data": (dict, type(None)),
}
_HARDWARE_FIELDS: dict[str, tuple[type, ...]] = {
    "device_name": (str,),
    "compute_capability": (list, type(None)),
    "sm_count": (int,),
    "memory_bytes": (int,),
    "smem_per_block_bytes": (int,),
    "torch_version": (str, type(None)),
    "triton_version": (str, type(None)),
    "cuda_version": (str, type(None)),
}
_TRAINING_DATA_FIELDS: dict[str, tuple[type, ...]] = {"problems": (int, type(None)), "ops": (list, type(None))}


def check_metadata(metadata: Any, path: str | os.PathLike) -> None:
    """ModelFormatError naming the file and the field unless ``metadata`` is a JSON object whose
    fields that torch-diode reads have their types (each optional), the hardware record's and the
    confidence contract's (``training_data``, :class:`selection.contract.Confidence`) included."""
    from .selection.contract import Confidence

    def fail(where: str, message: str) -> ModelFormatError:
        return ModelFormatError(f"{path}: field '{where}': {message}")

    if not isinstance(metadata, dict):
        raise fail("metadata", f"expected a JSON object, got {_json_type(metadata)}")
    _check_fields(metadata, _FIELDS, "metadata", fail)
    if "feature_names" in metadata and not all(isinstance(n, str) for n in metadata["feature_names"]):
        raise fail("metadata.feature_names", "expected a list of strings")
    _check_fields(metadata.get("hardware") or {}, _HARDWARE_FIELDS, "metadata.hardware", fail)
    capability = (metadata.get("hardware") or {}).get("compute_capability")
    if capability is not None and (len(capability) != 2 or not all(_is_int(v) for v in capability)):
        raise fail("metadata.hardware.compute_capability", f"expected [major, minor], got {capability!r:.60}")
    data = metadata.get("training_data") or {}
    _check_fields(data, _TRAINING_DATA_FIELDS, "metadata.training_data", fail)
    if not all(isinstance(op, str) for op in data.get("ops") or []):
        raise fail("metadata.training_data.ops", "expected a list of op names")
    try:
        Confidence.from_dict(data)
    except (ValueError, TypeError) as e:
        where, _, message = str(e).partition(": ")
        raise fail(f"metadata.{where}", message or str(e)) from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _check_fields(record: dict, fields: dict[str, tuple[type, ...]], where: str, fail: Any) -> None:
    for name, kinds in fields.items():
        if name not in record:
            continue
        value = record[name]
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if not ok:
            expected = " or ".join(_json_type(k()) if k is not type(None) else "null" for k in kinds)
            raise fail(f"{where}.{name}", f"expected {expected}, got {_json_type(value)} {value!r:.40}")


def read_validation_summary(path: str | os.PathLike) -> dict[str, Any] | None:
    """The ``<model>.validation.json`` written beside a shipped model (None where there is none)."""
    from .formats import DatasetFormatError, decode_bytes, read_input_bytes

    validation = Path(path).with_suffix(".validation.json")
    if not validation.is_file():
        return None
    summary = decode_bytes(read_input_bytes(validation), "json", False, validation)
    for key in ("top1_perf_geomean", "top5_perf_geomean", "exp_rmse", "worst_top1_slowdown"):
        if not isinstance(summary, dict) or not isinstance(summary.get(key), (int, float)):
            raise DatasetFormatError(validation, key, "missing or not a number")
    return summary

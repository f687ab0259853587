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

from . import _C
from .types import atomic_write_bytes

MAGIC = b"DIODEMDL"
FORMAT_VERSION: int = _C.MODEL_FORMAT_VERSION
ModelFormatError = _C.ModelFormatError
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
    feature_version: int = _C.FEATURE_VERSION

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
        meta = json.dumps(self.metadata, sort_keys=True).encode()
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
        return body + struct.pack("<Q", _C.fnv1a64(body))


def _f32(x: Any) -> bytes:
    return np.ascontiguousarray(x, dtype="<f4").tobytes()


def write_model(path: str | os.PathLike, model: ModelFile) -> Path:
    """Writes atomically; the file is read back by the C++ loader before it replaces ``path``."""
    payload = model.to_bytes()
    _C.Model.from_bytes(payload, str(path))  # never write a file the engine would refuse
    atomic_write_bytes(path, payload)
    return Path(path)


def load_engine(path: str | os.PathLike) -> _C.Model:
    """The C++ engine for a model file (ModelFormatError naming the file and field if unusable)."""
    return _C.Model.load(str(path))


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


def _metadata(engine: _C.Model, path: str | os.PathLike) -> dict[str, Any]:
    """The engine's metadata as a dict; ModelFormatError naming the file if it is not a JSON object."""
    from .types import DatasetFormatError, decode_bytes

    try:
        metadata = decode_bytes(engine.metadata_json.encode(), "json", False, path)
    except DatasetFormatError as e:
        where = "metadata" if e.field_path in ("<file>", "<root>") else f"metadata.{e.field_path}"
        raise ModelFormatError(f"{path}: field '{where}': {e.detail}") from None
    if not isinstance(metadata, dict):
        raise ModelFormatError(f"{path}: field 'metadata': expected a JSON object, got {type(metadata).__name__}")
    return metadata


def read_validation_summary(path: str | os.PathLike) -> dict[str, Any] | None:
    """The ``<model>.validation.json`` written beside a shipped model (None where there is none)."""
    from .types import DatasetFormatError, decode_bytes, read_input_bytes

    validation = Path(path).with_suffix(".validation.json")
    if not validation.is_file():
        return None
    summary = decode_bytes(read_input_bytes(validation), "json", False, validation)
    for key in ("top1_perf_geomean", "top5_perf_geomean", "exp_rmse", "worst_top1_slowdown"):
        if not isinstance(summary, dict) or not isinstance(summary.get(key), (int, float)):
            raise DatasetFormatError(validation, key, "missing or not a number")
    return summary

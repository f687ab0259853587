"""Predictions for tools and users: predicted times for (problem, config) pairs, by the engine."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from . import _C
from .features import config_rows, hardware_row, problem_row
from .types import Dataset, Hardware, KernelConfig, Problem, TimedConfig

_ENGINES: OrderedDict[str, _C.Model] = OrderedDict()  # checksum -> engine, the latest used last
_ENGINES_SIZE = 16
_ENGINES_LOCK = threading.Lock()


def load_model_and_checksum(name_or_path: str | os.PathLike) -> tuple[_C.Model, str]:
    """The C++ engine of a model name or path and the SHA-256 of the file's bytes it was built
    from. Engines are cached by that checksum: a file replaced in a running process gives the new
    weights, and the checksum (the FX-graph cache key's model identity) is always the engine's."""
    from .model_file import _metadata, read_model_bytes
    from .registry import resolve_model

    path = resolve_model(name_or_path)
    payload = read_model_bytes(path)
    checksum = hashlib.sha256(payload).hexdigest()
    with _ENGINES_LOCK:
        engine = _ENGINES.get(checksum)
        if engine is not None:
            _ENGINES.move_to_end(checksum)
            return engine, checksum
    engine = _C.Model.from_bytes(payload, str(path))
    _metadata(engine, path)  # a model whose metadata is malformed is refused here, naming the field
    with _ENGINES_LOCK:
        _ENGINES[checksum] = engine
        while len(_ENGINES) > _ENGINES_SIZE:
            _ENGINES.popitem(last=False)
    return engine, checksum


def load_model(name_or_path: str | os.PathLike) -> _C.Model:
    """The C++ engine of a model name or path (cached by the file's content)."""
    return load_model_and_checksum(name_or_path)[0]


def predict_log_time_us(
    model: _C.Model, problem: Problem, configs: Sequence[KernelConfig], hardware: Hardware
) -> np.ndarray:
    """float32[len(configs)]: predicted ln(time_us), features and MLP in one C++ call."""
    if not configs:
        return np.zeros(0, dtype=np.float32)
    return model.predict(problem_row(problem), config_rows(configs), hardware_row(hardware))


def predict_dataset(name_or_path: str | os.PathLike, dataset: Dataset) -> Dataset:
    """A dataset with the same (hardware, problem, config) entries and predicted ``time_us``."""
    model = load_model(name_or_path)
    out = Dataset(metadata={**dataset.metadata, "sources": [{"tool": "diode predict", "model": str(name_or_path)}]})
    for hardware, problem, timings in dataset.problems():
        configs = [t.config for t in timings]
        times = np.exp(predict_log_time_us(model, problem, configs, hardware).astype(np.float64))
        out.entry_for(hardware).ops.setdefault(problem.op, {})[problem] = [
            TimedConfig(c, float(t)) for c, t in zip(configs, times)
        ]
    return out

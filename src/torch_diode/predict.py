"""Predictions for tools and users: predicted times for (problem, config) pairs, by the engine."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ._C import Model
from .features import config_rows, hardware_row, problem_row
from .registry import load_model_and_checksum
from .types import Dataset, Hardware, KernelConfig, Problem, TimedConfig


def load_model(name_or_path: str | os.PathLike) -> Model:
    """The C++ engine of a model name or path (cached by the file's content)."""
    return load_model_and_checksum(name_or_path)[0]


def predict_log_time_us(
    model: Model, problem: Problem, configs: Sequence[KernelConfig], hardware: Hardware
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

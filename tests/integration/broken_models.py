"""Broken models for the fault-injection tests (tests/integration/test_fault_injection.py,
tests/gpu/test_fault_injection_gpu.py): engines whose predictions are NaN, +inf, -inf or huge, or
which raise, and the reason diode's fallback counts each under."""

import math

import numpy as np

from torch_diode.integration.choices import DiodeInductorChoices

RAISES = object()
# a broken model's predictions -> the reason its fallback is counted under
FAULTS = {
    "nan": (math.nan, "bad_prediction"),
    "+inf": (math.inf, "bad_prediction"),
    "-inf": (-math.inf, "bad_prediction"),
    "huge": (1e30, "bad_prediction"),
    "raises": (RAISES, "inference_error"),
}


class BrokenEngine:
    """A model engine predicting ``value`` for every candidate, or raising (``RAISES``)."""

    def __init__(self, engine, value):
        self.metadata_json = engine.metadata_json
        self.value = value

    def predict_features(self, features):
        if self.value is RAISES:
            raise RuntimeError("engine failure")
        return np.full(len(features), self.value, dtype=np.float32)

    def predict_members(self, features):
        return self.predict_features(features)[None, :]


def broken(model_path, fault: str, **kwargs) -> DiodeInductorChoices:
    choices = DiodeInductorChoices(model_path, **kwargs)
    choices.engine = BrokenEngine(choices.engine, FAULTS[fault][0])
    return choices

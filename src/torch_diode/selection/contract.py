"""The confidence contract: what training records about its data and held-out picks, and the
handler reads to judge whether the model's ranking of a problem can be trusted alone.

``diode train`` writes :meth:`Confidence.to_dict` into the model file's ``training_data``
metadata (beside other, descriptive fields); the handler reads it back with
:meth:`Confidence.from_dict`. A field a model file does not record (older files) is None and
the rule that needs it does not apply. ``misaligned_loss_calibration`` came within version 2: a
torch-diode before it reads a file that records it as if it did not (the misaligned problems'
risk through the calibration of all problems).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CONFIDENCE_VERSION = 2
# the problem features the training range is recorded for (features.FEATURE_NAMES)
RANGE_FEATURES = ("log2_batch", "log2_m", "log2_n", "log2_k")
KINDS = ("aligned", "misaligned")
# the template kinds (``_C.template_kind_names()``) a contract before version 2 is taken to know:
# the collectors of those models timed ATen choices and Triton's mm/bmm template only
KNOWN_BEFORE_V2 = ("aten_mm", "aten_addmm", "aten_bias_addmm", "triton_mm")

Ranges = Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class HeldoutSlowdown:
    """The model's first picks on held-out problems of one kind: geometric mean over problems of
    (measured time of the pick / best measured time), how many problems, at what extern preference."""

    geomean: float
    problems: int
    extern_preference: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"geomean": self.geomean, "problems": self.problems}
        if self.extern_preference is not None:
            out["extern_preference"] = self.extern_preference
        return out


@dataclass(frozen=True)
class LossCalibration:
    """How the model's uncertainty about (ln time of the pick - ln time of the best ATen choice)
    is read: a normal distribution around the members' mean difference with standard deviation
    sqrt((spread_scale * members' standard deviation)^2 + residual^2), fitted by ``diode train``
    on its held-out problems (``problems``)."""

    spread_scale: float
    residual: float
    problems: int

    def to_dict(self) -> dict[str, Any]:
        return {"spread_scale": self.spread_scale, "residual": self.residual, "problems": self.problems}


@dataclass(frozen=True)
class Confidence:
    """What the model's training data held (feature ranges, counts) and how its first picks did on
    held-out problems, by kind (``aligned`` / ``misaligned`` operand rows)."""

    feature_ranges: Ranges = field(default_factory=dict)  # RANGE_FEATURES over all dtypes
    feature_ranges_by_dtype: Mapping[str, Ranges] | None = None
    problems_by_dtype: Mapping[str, int] | None = None
    misaligned_problems: int | None = None  # problems with an operand whose rows are not 16-byte aligned
    tf32_problems: int | None = None  # fp32 problems timed with TF32 allowed
    heldout_top1_slowdown: Mapping[str, HeldoutSlowdown] = field(default_factory=dict)
    # template kinds (``_C.template_kind_names()``) with at least one successful timing in the
    # training data: a candidate of another kind is never chosen unbenchmarked (selection.decide)
    template_kinds: tuple[str, ...] = KNOWN_BEFORE_V2
    loss_calibration: LossCalibration | None = None
    # the same fitted on the held-out problems with a misaligned operand alone (None with fewer than
    # 20 of them whose first pick is not the ATen choice): where it exists a misaligned problem's
    # risk is read through it (selection.decide)
    misaligned_loss_calibration: LossCalibration | None = None
    version: int = CONFIDENCE_VERSION

    @classmethod
    def never_trusted(cls) -> Confidence:
        """A contract under which every problem is unsure (no element type was seen): replays of
        the handler judge what its widening hands Inductor with it."""
        return cls(feature_ranges_by_dtype={"": {}})

    def ranges_for(self, dtype: str) -> Ranges | None:
        """The training range of problems of ``dtype``; None where the model never saw the dtype."""
        by_dtype = self.feature_ranges_by_dtype
        if by_dtype and dtype not in by_dtype:
            return None
        return (by_dtype or {}).get(dtype) or self.feature_ranges

    def calibration_for(self, misaligned: bool) -> LossCalibration | None:
        """The loss calibration a problem's risk is read through: the misaligned problems' own
        where the problem is misaligned and the model records one, else the one of all problems."""
        if misaligned and self.misaligned_loss_calibration is not None:
            return self.misaligned_loss_calibration
        return self.loss_calibration

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence_version": CONFIDENCE_VERSION,  # every field of this version is written
            "problem_feature_ranges": {k: list(v) for k, v in self.feature_ranges.items()},
            "problem_feature_ranges_by_dtype": {
                d: {k: list(v) for k, v in r.items()} for d, r in (self.feature_ranges_by_dtype or {}).items()
            },
            "problems_by_dtype": dict(self.problems_by_dtype or {}),
            "misaligned_problems": self.misaligned_problems,
            "tf32_problems": self.tf32_problems,
            "heldout_top1_slowdown": {k: v.to_dict() for k, v in self.heldout_top1_slowdown.items()},
            "template_kinds": list(self.template_kinds),
            "loss_calibration": None if self.loss_calibration is None else self.loss_calibration.to_dict(),
            "misaligned_loss_calibration": None
            if self.misaligned_loss_calibration is None
            else self.misaligned_loss_calibration.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Confidence:
        """The contract in a model file's ``training_data`` (None or {}: nothing recorded).
        Raises ValueError naming the field that is malformed."""
        data = data or {}
        version = data.get("confidence_version", 1)  # files written before the version field: 1
        if not isinstance(version, int) or version > CONFIDENCE_VERSION:
            raise ValueError(
                f"training_data.confidence_version: {version!r}, this torch-diode reads up to {CONFIDENCE_VERSION}"
            )
        by_dtype = data.get("problem_feature_ranges_by_dtype")
        return cls(
            feature_ranges=_ranges(data.get("problem_feature_ranges"), "problem_feature_ranges"),
            feature_ranges_by_dtype=None
            if by_dtype is None
            else {
                str(d): _ranges(r, f"problem_feature_ranges_by_dtype.{d}")
                for d, r in _mapping(by_dtype, "problem_feature_ranges_by_dtype").items()
            },
            problems_by_dtype=None
            if data.get("problems_by_dtype") is None
            else {
                str(d): _int(n, f"problems_by_dtype.{d}")
                for d, n in _mapping(data["problems_by_dtype"], "problems_by_dtype").items()
            },
            misaligned_problems=_optional_int(data.get("misaligned_problems"), "misaligned_problems"),
            tf32_problems=_optional_int(data.get("tf32_problems"), "tf32_problems"),
            heldout_top1_slowdown={
                str(k): _heldout(v, f"heldout_top1_slowdown.{k}")
                for k, v in _mapping(data.get("heldout_top1_slowdown") or {}, "heldout_top1_slowdown").items()
            },
            template_kinds=_kinds(data.get("template_kinds"), version),
            loss_calibration=_calibration(data.get("loss_calibration"), "loss_calibration"),
            misaligned_loss_calibration=_calibration(
                data.get("misaligned_loss_calibration"), "misaligned_loss_calibration"
            ),
            version=version,
        )


def _kinds(value: Any, version: int) -> tuple[str, ...]:
    if value is None:
        if version >= 2:
            raise ValueError("training_data.template_kinds: missing (confidence_version 2 records it)")
        return KNOWN_BEFORE_V2
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"training_data.template_kinds: expected a list of template kind names, got {value!r}")
    return tuple(value)


def _mapping(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"training_data.{name}: expected an object, got {type(value).__name__}")
    return value


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"training_data.{name}: expected an integer, got {value!r}")
    return int(value)


def _optional_int(value: Any, name: str) -> int | None:
    return None if value is None else _int(value, name)


def _ranges(value: Any, name: str) -> dict[str, tuple[float, float]]:
    out = {}
    for key, pair in _mapping(value or {}, name).items():
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(v, (int, float)) for v in pair):
            raise ValueError(f"training_data.{name}.{key}: expected [low, high], got {pair!r}")
        out[str(key)] = (float(pair[0]), float(pair[1]))
    return out


def _heldout(value: Any, name: str) -> HeldoutSlowdown:
    value = _mapping(value, name)
    geomean = value.get("geomean")
    if not isinstance(geomean, (int, float)) or not math.isfinite(geomean):
        raise ValueError(f"training_data.{name}.geomean: expected a number, got {geomean!r}")
    preference = value.get("extern_preference")
    return HeldoutSlowdown(
        float(geomean),
        _int(value.get("problems"), f"{name}.problems"),
        None if preference is None else float(preference),
    )


def _calibration(value: Any, key: str) -> LossCalibration | None:
    if value is None:
        return None
    value = _mapping(value, key)
    numbers = {}
    for name in ("spread_scale", "residual"):
        v = value.get(name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"training_data.{key}.{name}: expected a number >= 0, got {v!r}")
        numbers[name] = float(v)
    return LossCalibration(numbers["spread_scale"], numbers["residual"], _int(value.get("problems"), f"{key}.problems"))

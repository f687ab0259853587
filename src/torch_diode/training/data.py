"""Datasets -> model inputs, through the one feature path (torch_diode.features, C++)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..errors import UserError
from ..features import NUM_FEATURES, featurize
from ..types import Dataset, Hardware, KernelConfig, Problem


@dataclass
class TrainingArrays:
    """Feature rows of every successful (problem, config) pair, ln(time_us) targets and the index
    of each row's problem (``group``) into ``problems``."""

    features: np.ndarray  # float32[N, F]
    log_time_us: np.ndarray  # float32[N]
    group: np.ndarray  # int64[N]
    problems: list[tuple[Hardware, Problem]]
    configs: list[KernelConfig]

    @property
    def num_problems(self) -> int:
        return len(self.problems)


def matches_hardware(hardware: Hardware, name: str | None) -> bool:
    if not name:
        return True
    name = name.lower()
    return name in hardware.device_name.lower() or name in hardware.hardware_id.lower()


def one_device(hardware: Iterable[Hardware], what: str, hint: str = "") -> str:
    """The device name of the one GPU that ``hardware`` (that of ``what``'s problems) names: a
    model, a sample and a relabelling read one GPU's measurements. UserError naming ``what`` and
    the GPUs it holds otherwise (``hint``: how to choose one of several)."""
    devices = sorted({hw.device_name for hw in hardware})
    if not devices:
        raise UserError(f"{what} holds no GPU's measurements")
    if len(devices) > 1:
        raise UserError(
            f"{what} holds the measurements of {len(devices)} GPUs ({', '.join(devices)}), not one"
            + (f": {hint}" if hint else "")
        )
    return devices[0]


def build_arrays(dataset: Dataset, hardware_name: str | None = None, op_name: str | None = None) -> TrainingArrays:
    """Rows for the problems of ``dataset`` on matching hardware and op; failed choices are left
    out (their time is unknown; the engine's features flag configs that exceed shared memory)."""
    blocks, targets, groups, problems, configs = [], [], [], [], []
    for hardware, problem, timings in dataset.problems():
        if not matches_hardware(hardware, hardware_name) or (op_name and problem.op != op_name):
            continue
        ok = [t for t in timings if not t.failed and math.isfinite(t.time_us)]
        if not ok:
            continue
        blocks.append(featurize(problem, [t.config for t in ok], hardware))
        targets.append(np.log(np.array([t.time_us for t in ok], dtype=np.float64)))
        groups.append(np.full(len(ok), len(problems), dtype=np.int64))
        problems.append((hardware, problem))
        configs.extend(t.config for t in ok)
    if not problems:
        raise UserError(f"no usable problems in the dataset (hardware={hardware_name!r}, op={op_name!r})")
    return TrainingArrays(
        np.concatenate(blocks).astype(np.float32).reshape(-1, NUM_FEATURES),
        np.concatenate(targets).astype(np.float32),
        np.concatenate(groups),
        problems,
        configs,
    )


def split_groups(num_problems: int, validation_fraction: float, seed: int) -> np.ndarray:
    """A boolean mask over problems: True = validation. By problem, deterministic for a seed."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(num_problems)
    n_val = int(round(num_problems * validation_fraction)) if num_problems > 1 else 0
    if validation_fraction > 0 and num_problems > 1:
        n_val = min(max(n_val, 1), num_problems - 1)
    mask = np.zeros(num_problems, dtype=bool)
    mask[order[:n_val]] = True
    return mask

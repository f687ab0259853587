"""torch-diode: learned GEMM kernel selection for torch.compile.

Importing this package is cheap and has no side effects: it does not import torch's compiler,
initialise CUDA, or change any Inductor setting.
"""

from __future__ import annotations

import logging

from .collection import Collector, collect
from .types import (
    Dataset,
    DatasetFormatError,
    Hardware,
    KernelConfig,
    Problem,
    TimedConfig,
    load_dataset,
    load_datasets,
    save_dataset,
)

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "Collector",
    "Dataset",
    "DatasetFormatError",
    "Hardware",
    "KernelConfig",
    "Problem",
    "TimedConfig",
    "collect",
    "load_dataset",
    "load_datasets",
    "save_dataset",
]

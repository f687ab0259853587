"""Models by name: those shipped with the package (``torch_diode/models/<name>.diode``) and any
registered by path at run time. Every ``--model`` option accepts a name or a path. A model's C++
engine is built once per file content (:func:`load_model_and_checksum`).

A GPU gets the model trained on it (the same device name) or, where none is, the nearest model of
its family: the same compute capability and family name (an H100 PCIe or NVL gets the H100 SXM's
model), nearest by SM count, then memory. Every decision such a model makes is unsure (the
handler lets Inductor benchmark ``unsure_top_k`` candidates) until a model for that GPU ships;
the choice is logged at WARNING, once per GPU and model.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from .hardware import hardware_match
from .types import Hardware

if TYPE_CHECKING:
    from ._C import Model

logger = logging.getLogger(__name__)

SHIPPED_DIR = Path(__file__).resolve().parent / "models"
_registered: dict[str, Path] = {}
_warned_family: set[tuple[str, str]] = set()
_ENGINES: OrderedDict[str, Model] = OrderedDict()  # checksum -> engine, the latest used last
_ENGINES_SIZE = 16
_ENGINES_LOCK = threading.Lock()


def shipped_models() -> dict[str, Path]:
    return {p.stem: p for p in sorted(SHIPPED_DIR.glob("*.diode"))}


def available_models() -> dict[str, Path]:
    return {**shipped_models(), **_registered}


def register_model_path(name: str, path: str | os.PathLike) -> None:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such model file")
    _registered[name] = path


def resolve_model(name_or_path: str | os.PathLike) -> Path:
    """The file of a model name or path; FileNotFoundError listing what exists otherwise."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.exists():  # a folder, a FIFO, a device: named, not taken for a model's name
        from .fileio import FileError, kind_of_mode

        raise FileError(path, f"cannot read: {kind_of_mode(path.stat().st_mode)}, not a model file")
    models = available_models()
    if str(name_or_path) in models:
        return models[str(name_or_path)]
    raise FileNotFoundError(
        f"{name_or_path}: neither a model file nor a known model name (known: {', '.join(models) or 'none'})"
    )


def load_model_and_checksum(name_or_path: str | os.PathLike) -> tuple[Model, str]:
    """The C++ engine of a model name or path and the SHA-256 of the file's bytes it was built
    from. Engines are cached by that checksum: a file replaced in a running process gives the new
    weights, and the checksum (the FX-graph cache key's model identity) is always the engine's."""
    from .model_file import engine_from_bytes, read_model_bytes

    path = resolve_model(name_or_path)
    payload = read_model_bytes(path)
    checksum = hashlib.sha256(payload).hexdigest()
    with _ENGINES_LOCK:
        engine = _ENGINES.get(checksum)
        if engine is not None:
            _ENGINES.move_to_end(checksum)
            return engine, checksum
    engine = engine_from_bytes(payload, path)  # a model whose metadata is malformed is refused, naming the field
    with _ENGINES_LOCK:
        _ENGINES[checksum] = engine
        while len(_ENGINES) > _ENGINES_SIZE:
            _ENGINES.popitem(last=False)
    return engine, checksum


def warn_family_match(model: str, trained_on: str, hardware: Hardware) -> None:
    """The WARNING that a model of another SKU of the family decides on ``hardware`` (once per GPU and model)."""
    key = (hardware.device_name, model)
    if key not in _warned_family:
        _warned_family.add(key)
        logger.warning(
            "torch-diode: no model for %s; using %s (trained on %s, the same compute capability %s and "
            "family): every decision is unsure and Inductor benchmarks its top candidates until a model "
            "for this GPU ships",
            hardware.device_name,
            model,
            trained_on,
            ".".join(map(str, hardware.compute_capability or ())),
        )


def model_for_hardware(hardware: Hardware) -> tuple[str, Path, str] | None:
    """(name, file, "exact" or "family") of the model for ``hardware`` among the shipped and
    registered ones, or None. An exact model first, else the family's nearest (module docstring)."""
    from .model_file import model_metadata

    exact, family = [], []
    for name, path in available_models().items():
        try:
            trained = model_metadata(path).get("hardware") or {}
        except (OSError, ValueError) as e:  # an unreadable registered file: not a candidate
            logger.warning("torch-diode: model %s (%s) cannot be read: %s", name, path, e)
            continue
        kind = hardware_match(trained, hardware)
        if kind == "exact":
            exact.append((name, path))
        elif kind == "family":
            distance = (
                abs(int(trained.get("sm_count") or 0) - hardware.sm_count),
                abs(int(trained.get("memory_bytes") or 0) - hardware.memory_bytes),
            )
            family.append((distance, name, path, trained.get("device_name", "?")))
    if exact:
        return exact[0][0], exact[0][1], "exact"
    if family:
        _, name, path, trained_on = min(family, key=lambda f: (f[0], f[1]))
        warn_family_match(name, trained_on, hardware)
        return name, path, "family"
    return None


def detect_model() -> Path | None:
    """The model file for the current CUDA device (see :func:`model_for_hardware`), or None (no
    CUDA device, or no model for it)."""
    import torch

    if not torch.cuda.is_available():
        return None
    from .hardware import detect_hardware

    found = model_for_hardware(detect_hardware("cuda"))
    return found[1] if found else None

"""Models by name: those shipped with the package (``torch_diode/models/<name>.diode``) and any
registered by path at run time. Every ``--model`` option accepts a name or a path."""

from __future__ import annotations

import os
from pathlib import Path

SHIPPED_DIR = Path(__file__).resolve().parent / "models"
_registered: dict[str, Path] = {}


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
    models = available_models()
    if str(name_or_path) in models:
        return models[str(name_or_path)]
    raise FileNotFoundError(
        f"{name_or_path}: neither a model file nor a known model name (known: {', '.join(models) or 'none'})"
    )

"""What every ``diode`` subcommand shares: the parser with one-line errors, option types that
check ranges, the rule that no output overwrites an input, and ``--report-json``."""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import OptionError


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line naming the option (exit code 2)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ----- option types: argparse names the option in front of their message -------------------------
def _number(
    kind: type, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, hi_open: bool = False
) -> Callable[[str], float]:
    """An argparse type: ``kind`` (int or float, finite) within the bounds."""
    fmt = "d" if kind is int else "g"
    if lo is not None and hi is not None:
        span = f"in {'(' if lo_open else '['}{lo:{fmt}}, {hi:{fmt}}{')' if hi_open else ']'}"
    elif lo is not None:
        span = f"{'>' if lo_open else '>='} {lo:{fmt}}"
    else:
        span = "finite"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None
        ok = (
            math.isfinite(value)
            and (lo is None or (value > lo if lo_open else value >= lo))
            and (hi is None or (value < hi if hi_open else value <= hi))
        )
        if not ok:
            raise argparse.ArgumentTypeError(f"must be {span}, got {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse


positive_int = _number(int, 1)
nonnegative_int = _number(int, 0)
finite_float = _number(float)
nonnegative_float = _number(float, 0.0)
positive_float = _number(float, 0.0, lo_open=True)
probability = _number(float, 0.0, 1.0)
factor = _number(float, 1.0)  # a "this many times faster" factor: 1.0 means off


MAX_SEED = 2**32 - 1  # numpy's seeds: 0 .. 2^32 - 1
seed = _number(int, 0, MAX_SEED)


def int_at_least(lo: int) -> Callable[[str], int]:
    return _number(int, lo)


def open_fraction(lo_open: bool = True) -> Callable[[str], float]:
    """A share of problems: in (0, 1), or [0, 1) where ``lo_open`` is false."""
    return _number(float, 0.0, 1.0, lo_open=lo_open, hi_open=True)


# ----- no output over an input -------------------------------------------------------------------
def _real(path: str | os.PathLike) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _same_file(a: Path, b: Path) -> bool:
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(
    inputs: Mapping[str, Iterable[str | os.PathLike] | str | os.PathLike | None],
    outputs: Mapping[str, str | os.PathLike | None],
    *,
    dataset_outputs: Sequence[str] = (),
    json_outputs: Sequence[str] = (),
    extensions: Iterable[str] | None = None,
    force: bool | None = None,
) -> None:
    """OptionError unless every output (option -> path) is a new place: not an input (option ->
    paths), not another output, not an existing folder. A dataset output (an option in
    ``dataset_outputs``) may not lie inside an input folder either, where reading the folder again
    would read it too and count its rows twice. An option in ``json_outputs`` writes a JSON document
    (a shapeset) as a --...-json option writes a report. Unless ``force`` (--force; None: a command
    without it), an existing output must hold what the option writes (:func:`output_kind`)."""
    from ..formats import DATASET_SUFFIXES

    ins: list[tuple[str, Path]] = []
    for option, value in inputs.items():
        if value is None:
            continue
        values = [value] if isinstance(value, (str, os.PathLike)) else list(value)
        ins.extend((option, _real(v)) for v in values)
    outs = [(option, _real(value), str(value)) for option, value in outputs.items() if value is not None]
    suffixes = tuple("." + e.lstrip(".") for e in extensions) if extensions else DATASET_SUFFIXES
    for i, (option, out, given) in enumerate(outs):
        if out.is_dir():
            raise OptionError(option, f"{given} is a folder; give a file name")
        not_folder = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
        if not_folder is not None:
            raise OptionError(option, f"{given}: {not_folder} is a file, not a folder")
        for other_option, other, _ in outs[:i]:
            if _same_file(out, other):
                raise OptionError(option, f"{given} is also the {other_option} output: each output needs its own file")
        for in_option, source in ins:
            if _same_file(out, source):
                raise OptionError(
                    option,
                    f"{given} is also an input ({in_option}): writing it would replace that "
                    "input; give another output file",
                )
            if option in dataset_outputs and source.is_dir() and source in out.parents and out.name.endswith(suffixes):
                raise OptionError(
                    option,
                    f"{given} lies inside the input folder {source} ({in_option}): reading "
                    "that folder again would read this output too and count its rows twice",
                )
        if force is False:
            _check_kind(option, given, "report" if option in json_outputs else output_kind(option, dataset_outputs))


# what each kind of output may replace: a file of its own kind, or an empty one
_REPLACES = {"dataset": ("dataset", "empty"), "model": ("model", "empty"), "report": ("json", "empty")}
_WRITES = {"dataset": "a dataset", "model": "a model file", "report": "a JSON report"}


def output_kind(option: str, dataset_outputs: Sequence[str] = ()) -> str:
    """What an output option writes: "model" (--model), "report" (a --...-json), else "dataset"."""
    if option == "--model":
        return "model"
    if option.endswith("-json") and option not in dataset_outputs:
        return "report"
    return "dataset"


def _check_kind(option: str, given: str, wanted: str) -> None:
    from ..fileio import KIND_NAMES, existing_kind

    kind = existing_kind(given)
    if kind is not None and kind not in _REPLACES[wanted]:
        raise OptionError(
            option,
            f"{given} exists and is {KIND_NAMES[kind]}, not {_WRITES[wanted]}: it is left as it is "
            "(give another file, or --force to replace it)",
        )


def add_force(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing output that holds something else than what this command writes "
        "(a dataset named as --model, say); an input is never replaced",
    )


def dataset_output(text: str) -> str:
    """A dataset file to write: its suffix must name a format."""
    from ..formats import DATASET_SUFFIXES

    if not text.endswith(DATASET_SUFFIXES):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a dataset file name ending in {', '.join(DATASET_SUFFIXES)}"
        )
    return text


def add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", help="dataset files or folders of them")
    p.add_argument(
        "--file-extensions",
        nargs="+",
        default=None,
        metavar="EXT",
        help="in folders, read only files with these suffixes (e.g. msgpack json.gz)",
    )


def write_report(path: str | None, report: dict, argv: Sequence[str] | None = None) -> None:
    """Writes a command's --report-json atomically (keys starting with '_' stay in memory). With
    ``argv`` (the command's words, ``args.argv``) it records the command line and the UTC date it
    ran at (``command``, ``date``) where the report has none."""
    if path:
        from ..fileio import atomic_write_bytes

        clean = {k: v for k, v in report.items() if not (isinstance(k, str) and k.startswith("_"))}
        if argv is not None:
            clean.setdefault("command", " ".join(["diode", *argv]))
            clean.setdefault("date", datetime.now(timezone.utc).isoformat(timespec="seconds"))
        text = json.dumps(strict_json(clean), indent=2, sort_keys=True, allow_nan=False)
        atomic_write_bytes(path, (text + "\n").encode())
        print(f"report written to {path}")


def strict_json(value: Any, where: str = "") -> Any:
    """``value`` as strict JSON values: a NaN or infinite number (a figure with nothing to compute
    it from) as null, numpy scalars and arrays as numbers and lists, tuples as lists, paths as
    strings, keys as strings; TypeError naming the field for anything else."""
    import numpy as np

    if isinstance(value, dict):
        out = {str(k): strict_json(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
        if len(out) != len(value):
            raise TypeError(f"report field '{where}': keys that are equal as strings")
        return out
    if isinstance(value, (list, tuple)):
        return [strict_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (np.generic, np.ndarray)):
        return strict_json(value.tolist(), where)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"report field '{where}': {type(value).__name__} is not a JSON value")

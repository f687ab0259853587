"""Operations on dataset files behind ``diode dataset ...``: statistics and splitting."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import UserError
from .types import Dataset, Hardware, Problem


def dataset_stats(dataset: Dataset) -> dict[str, Any]:
    """Counts per hardware, op, dtype and template. Keys are the `stats --report-json` contract."""
    ops: dict[str, dict[str, int]] = defaultdict(lambda: {"problems": 0, "timed_configs": 0, "failures": 0})
    dtypes: Counter[str] = Counter()
    templates: Counter[str] = Counter()
    hardware = []
    num_failures = 0
    for entry in dataset.entries:
        hw_problems = 0
        for op, table in entry.ops.items():
            for problem, timings in table.items():
                failures = sum(t.failed for t in timings)
                ops[op]["problems"] += 1
                ops[op]["timed_configs"] += len(timings)
                ops[op]["failures"] += failures
                num_failures += failures
                dtypes[problem.dtype_a] += 1
                templates.update(t.config.template_id for t in timings)
                hw_problems += 1
        hardware.append(
            {**entry.hardware.to_dict(), "hardware_id": entry.hardware.hardware_id, "problems": hw_problems}
        )
    return {
        "num_problems": dataset.num_problems,
        "num_timed_configs": dataset.num_timed_configs,
        "num_failures": num_failures,
        "ops": dict(sorted(ops.items())),
        "dtypes": dict(sorted(dtypes.items())),
        "templates": dict(sorted(templates.items())),
        "hardware": hardware,
        "skipped_problems": len(dataset.metadata.get("skipped", [])),
    }


def best_configs(dataset: Dataset) -> list[tuple[Hardware, Problem, Any, int, Any]]:
    """(hardware, problem, fastest TimedConfig, number of timed configs, fastest ATen
    TimedConfig or None) per problem."""
    out = []
    for hardware, problem, timings in dataset.problems():
        ok = [t for t in timings if not t.failed]
        aten = [t for t in ok if t.config.template_id.startswith("aten::")]
        if ok:
            best_aten = min(aten, key=lambda t: t.time_us) if aten else None
            out.append((hardware, problem, min(ok, key=lambda t: t.time_us), len(timings), best_aten))
    return out


def split_dataset(dataset: Dataset, validation_fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    """Splits by problem (never by row): every problem's timings go to exactly one side.

    Deterministic for a given seed: problems are ordered by a canonical key, then shuffled.
    """
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation fraction must be in (0, 1), got {validation_fraction}")
    keys = sorted({(hw.hardware_id, repr(p)) for hw, p, _ in dataset.problems()})
    if not keys:
        raise UserError("the dataset holds no problem to split")
    random.Random(seed).shuffle(keys)
    n_val = max(1, round(len(keys) * validation_fraction)) if len(keys) > 1 else 0
    validation = set(keys[:n_val])
    val = dataset.subset(lambda hw, p: (hw.hardware_id, repr(p)) in validation)
    train = dataset.subset(lambda hw, p: (hw.hardware_id, repr(p)) not in validation)
    for part, name in ((train, "train"), (val, "validation")):
        part.metadata["split"] = {"part": name, "validation_fraction": validation_fraction, "seed": seed}
    return train, val


def copy_problems(
    paths: Iterable[Path],
    select: Callable[[Path, Dataset], Callable[[Problem], bool] | None],
    source: dict[str, Any],
    output: Path | None = None,
) -> Dataset:
    """A dataset of copies of the problems (with their timings) of the dataset files ``paths`` that
    ``select(path, dataset)`` picks (a predicate over the file's problems; None: none of it), for
    ``diode train --exclude``, written to ``output`` where given. Its one source record is
    ``source`` with the names of the files it took problems from added to its settings
    (``files``): it is no collection."""
    from .dataset_io import load_dataset, save_dataset

    out, files = Dataset(), []
    for path in paths:
        dataset = load_dataset(path)
        keep = select(path, dataset)
        if keep is None:
            continue
        before = out.num_problems
        for hardware, problem, timings in dataset.problems():
            if keep(problem):
                out.add(hardware, problem, timings)
        if out.num_problems > before:
            files.append(path.name)
    out.metadata["sources"] = [{**source, "settings": {**source.get("settings", {}), "files": files}}]
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        save_dataset(out, output)
    return out

"""A shipped model's recipe: the `diode train` options and the data commit that made it.

``torch_diode/models/<name>.recipe.json`` lies beside ``<name>.diode``::

    {"data_commit": "<commit>", "train": {"data-dir": "data/h100/train", "exclude": ["data/h100/unhinted"],
                                          "hidden-dim": 48, "seed": 1, "loss": "listwise", ...}}

``train`` holds `diode train`'s options by name without the leading dashes (a list for an option
that takes several values, ``true`` for a flag; an option left out takes its default), with paths
relative to the repository root; the output (``--model``) is not part of it. ``data_commit`` is
the commit whose data folders the model was trained on. A model adapted from another
(``--init-model``, docs/contributing.md) names that model's file, such as
``src/torch_diode/models/NVIDIA-H200-matmul.diode``, read at the same commit as the data.
`diode rebuild-model NAME` trains with these options on those paths as they are at that commit
(read with ``git archive``, so nothing in the checkout changes) and compares the result with the
shipped model; a test checks that each recipe's options are the ones its shipped model records.
"""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    from ..model_file import ModelFile

RECIPE_SUFFIX = ".recipe.json"
# the options whose values are paths relative to the repository root (an --exclude may also
# name a shapeset)
PATH_OPTIONS = ("dataset", "data-dir", "prior-data", "exclude", "init-model")
DATA_OPTIONS = ("dataset", "data-dir", "prior-data", "init-model")  # read, so they must exist at the commit
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Recipe:
    path: Path  # the recipe file
    data_commit: str
    train: dict[str, Any]  # `diode train` option (no dashes) -> value

    @property
    def name(self) -> str:
        """The model's name: the file's name less ``.recipe.json``."""
        return self.path.name[: -len(RECIPE_SUFFIX)]

    @property
    def model_path(self) -> Path:
        """The model file the recipe describes (beside it; it may be absent)."""
        return self.path.with_name(self.name + ".diode")

    def paths(self, options: tuple[str, ...] = PATH_OPTIONS) -> list[str]:
        """The values of ``options``, in the recipe's order."""
        out: list[str] = []
        for option in options:
            value = self.train.get(option)
            out.extend([] if value is None else [value] if isinstance(value, str) else value)
        return out

    def argv(self, root: str | os.PathLike | None = None) -> list[str]:
        """The `diode train` words of the options; with ``root``, each path that exists under it
        joined to it (another --exclude word is a shapeset's name and stays as it is)."""
        words: list[str] = []
        for option, value in self.train.items():
            if value is False:
                continue
            words.append(f"--{option}")
            if value is True:
                continue
            for v in value if isinstance(value, list) else [value]:
                joined = Path(root, v) if root is not None and option in PATH_OPTIONS else None
                words.append(str(joined) if joined is not None and joined.exists() else str(v))
        return words


def recipe_path(model: str | os.PathLike) -> Path:
    """Where the recipe of the model file ``model`` lies."""
    model = Path(model)
    return model.with_name(model.stem + RECIPE_SUFFIX)


def load_recipe(path: str | os.PathLike) -> Recipe:
    """The recipe in ``path``; DatasetFormatError naming the file and the field where it is not one."""
    from ..formats import DatasetFormatError, decode_bytes, read_input_bytes

    path = Path(path)
    if not path.name.endswith(RECIPE_SUFFIX):
        raise DatasetFormatError(path, "<file>", f"a recipe's name ends in {RECIPE_SUFFIX}")
    data = decode_bytes(read_input_bytes(path), "json", False, path)
    if not isinstance(data, dict):
        raise DatasetFormatError(path, "<root>", f"expected an object, got {type(data).__name__}")
    unknown = sorted(set(data) - {"data_commit", "train"})
    if unknown:
        raise DatasetFormatError(path, unknown[0], "not a recipe field (data_commit, train)")
    commit, train = data.get("data_commit"), data.get("train")
    if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
        raise DatasetFormatError(path, "data_commit", f"expected a git commit (7-40 hex digits), got {commit!r}")
    if not isinstance(train, dict):
        raise DatasetFormatError(path, "train", f"expected an object of `diode train` options, got {train!r}")
    for option, value in train.items():
        scalar = (str, int, float, bool)
        ok = isinstance(value, scalar) or (
            isinstance(value, list) and value and all(isinstance(v, scalar) and not isinstance(v, bool) for v in value)
        )
        if not ok or option == "model" or option.startswith("-"):
            detail = "the output is rebuild-model's --output" if option == "model" else f"got {value!r}"
            raise DatasetFormatError(
                path, f"train.{option}", f"expected an option name without dashes and a value, list or true; {detail}"
            )
        if option in PATH_OPTIONS and not all(isinstance(v, str) for v in value if isinstance(value, list)):
            raise DatasetFormatError(path, f"train.{option}", "expected paths")
    if not any(option in train for option in ("dataset", "data-dir")):
        raise DatasetFormatError(path, "train", "names no data (data-dir or dataset)")
    return Recipe(path, commit, dict(train))


def _git(root: Path, *words: str, what: str) -> str:
    """``git words`` in ``root``: its output, or UserError saying ``what`` failed."""
    try:
        proc = subprocess.run(["git", *words], cwd=root, capture_output=True, text=True)
    except FileNotFoundError:
        raise UserError(f"{what}: git is not installed") from None
    if proc.returncode != 0:
        raise UserError(f"{what}: {' '.join(proc.stderr.split()) or f'git {words[0]} failed'}")
    return proc.stdout


def repository_root(start: str | os.PathLike = ".") -> Path:
    """The root of the git checkout holding ``start``; UserError outside one."""
    where = "rebuilding a model reads its data from the repository's history: run it in a torch-diode checkout"
    return Path(_git(Path(start), "rev-parse", "--show-toplevel", what=where).strip())


def resolve_commit(root: Path, recipe: Recipe) -> str:
    """The full hash of the recipe's data commit; UserError naming the recipe where the checkout lacks it."""
    what = (
        f"{recipe.path}: field 'data_commit': {recipe.data_commit} is not in the history of {root} "
        "(a shallow clone: `git fetch --unshallow`; or --current-data)"
    )
    return _git(root, "rev-parse", "--verify", "--quiet", f"{recipe.data_commit}^{{commit}}", what=what).strip()


def changed_since(root: Path, commit: str, paths: list[str]) -> list[str]:
    """The files under ``paths`` that differ between ``commit`` and the working tree (changed,
    added, removed or untracked)."""
    what = f"comparing {', '.join(paths)} with {commit[:7]}"
    changed = _git(root, "diff", "--name-only", commit, "--", *paths, what=what).split("\n")
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "--", *paths, what=what).split("\n")
    return sorted({f for f in changed + untracked if f})


def extract_at_commit(root: Path, recipe: Recipe, commit: str, dest: Path) -> None:
    """Writes the recipe's data paths as they are at ``commit`` under ``dest`` (``git archive``);
    UserError naming the recipe's field where a data path is not in that commit."""
    present = [
        p for p in dict.fromkeys(recipe.paths()) if _git(root, "ls-tree", "--name-only", commit, "--", p, what=p)
    ]
    for option in DATA_OPTIONS:
        for p in recipe.paths((option,)):
            if p not in present:
                raise UserError(f"{recipe.path}: field 'train.{option}': {p} is not in commit {commit[:7]}")
    with subprocess.Popen(
        ["git", "archive", "--format=tar", commit, "--", *present], cwd=root, stdout=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None
        with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
            # the "data" filter (Python 3.11.4 and later) refuses links and paths out of dest
            archive.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    if proc.returncode != 0:
        raise UserError(f"git archive {commit[:7]} -- {' '.join(present)} failed (exit {proc.returncode})")


# what a rebuilt model is compared with the shipped one on (metadata paths)
COMPARED = (
    "feature_version",
    "training_data.problems",
    "training_data.rows",
    "training_data.prior_data.problems",
    "training.report.best_epoch",
    "training.report.validation_mse",
    "training_data.heldout_top1_slowdown.aligned.geomean",
    "training_data.heldout_top1_slowdown.misaligned.geomean",
)


def _field(metadata: dict[str, Any], dotted: str) -> Any:
    for key in dotted.split("."):
        metadata = metadata.get(key) if isinstance(metadata, dict) else None
    return metadata


def compare_models(shipped: ModelFile, rebuilt: ModelFile) -> list[tuple[str, Any, Any]]:
    """(what, shipped, rebuilt) for the metadata of :data:`COMPARED` and the weights (their
    largest absolute difference, 0.0 where they are the same; None where the layer sizes differ)."""
    import numpy as np

    rows = [(name, _field(shipped.metadata, name), _field(rebuilt.metadata, name)) for name in COMPARED]
    arrays = [
        (a, b)
        for mine, theirs in zip(shipped.members, rebuilt.members)
        for (wa, ba), (wb, bb) in zip(mine, theirs)
        for a, b in ((wa, wb), (ba, bb))
    ]
    same_shape = len(shipped.members) == len(rebuilt.members) and shipped.dims == rebuilt.dims
    largest = max(float(np.abs(a - b).max()) for a, b in arrays) if same_shape else None
    rows.append(("weights: largest difference", 0.0, largest))
    return rows

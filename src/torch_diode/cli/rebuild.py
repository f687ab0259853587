"""`diode rebuild-model`: train a shipped model again from its recipe (torch_diode.training.recipe)."""

from __future__ import annotations

import argparse
import os
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import OptionError, UserError

if TYPE_CHECKING:
    from ..training.recipe import Recipe


def find_recipe(name: str) -> Recipe:
    """The recipe of a shipped model's name, or of a ``.recipe.json`` path."""
    from ..registry import SHIPPED_DIR
    from ..training.recipe import RECIPE_SUFFIX, load_recipe

    if name.endswith(RECIPE_SUFFIX):
        return load_recipe(name)
    path = SHIPPED_DIR / f"{name}{RECIPE_SUFFIX}"
    if not path.is_file():
        known = sorted(p.name[: -len(RECIPE_SUFFIX)] for p in SHIPPED_DIR.glob(f"*{RECIPE_SUFFIX}"))
        raise UserError(
            f"{name}: no recipe {path.name} in {SHIPPED_DIR} (models with one: {', '.join(known) or 'none'})"
        )
    return load_recipe(path)


def recipe_options(recipe: Recipe, root: str | os.PathLike | None, output: str) -> argparse.Namespace:
    """`diode train`'s parsed options for ``recipe`` with its paths under ``root`` (None: as the
    recipe gives them), writing ``output``; UserError naming the recipe's field where an option is
    unknown or its value bad."""
    from . import _subcommand, build_parser

    parser = build_parser()
    train, _ = _subcommand(parser, ["train"])
    for option in recipe.train:
        if f"--{option}" not in train._option_string_actions:
            raise UserError(f"{recipe.path}: field 'train.{option}': not an option of `diode train`")

    def error(message: str):
        raise UserError(f"{recipe.path}: field 'train': {message}")

    parser.error = train.error = error  # type: ignore[method-assign]
    argv = ["train", *recipe.argv(root), "--model", output]
    args = parser.parse_args(argv)
    args.argv = argv
    return args


def _cmd_rebuild_model(args: argparse.Namespace) -> int:
    from ..features import FEATURE_VERSION
    from ..model_file import read_model
    from ..training.recipe import changed_since, compare_models, extract_at_commit, repository_root, resolve_commit

    recipe = find_recipe(args.name)
    shipped = read_model(recipe.model_path) if recipe.model_path.is_file() else None
    output = args.output or f"{recipe.name}.diode"
    if args.output is None and Path(output).resolve() == recipe.model_path.resolve():
        raise OptionError(
            "--output", f"the default {output} is the shipped model: give --output (its path replaces it)"
        )
    if shipped is not None and shipped.feature_version != FEATURE_VERSION:
        print(
            f"rebuild: {recipe.name} reads features of version {shipped.feature_version} and this torch-diode trains "
            f"at version {FEATURE_VERSION}: the rebuilt model is a version {FEATURE_VERSION} model"
        )
    root = repository_root()
    recipe_options(recipe, root, output)  # a bad option is reported before any data is read
    words = " ".join(shlex.quote(w) for w in ["diode", "train", *recipe.argv(), "--model", output])
    with tempfile.TemporaryDirectory(prefix="diode-rebuild-") as tmp:
        if args.current_data:
            data_root = root
            print(f"rebuild: {words}\n  on the data in {root} (--current-data)")
        else:
            commit = resolve_commit(root, recipe)
            data_root = Path(tmp)
            extract_at_commit(root, recipe, commit, data_root)
            print(f"rebuild: {words}\n  on the data at {commit[:10]} ({recipe.path.name}'s data_commit)")
            changed = changed_since(root, commit, recipe.paths())
            if changed:
                print(
                    f"rebuild: {', '.join(dict.fromkeys(recipe.paths()))} in {root} differ from {commit[:10]}'s "
                    f"({len(changed)} files, such as {changed[0]}): trained on {commit[:10]}'s "
                    "(--current-data: on the files here)"
                )
        # trained in the data's root with the recipe's relative paths, which the model records
        # (an --init-model's) as the recipe gives them
        output, here = str(Path(output).resolve()), os.getcwd()
        os.chdir(data_root)  # contextlib.chdir is Python 3.11's; the package supports 3.10
        try:
            train = recipe_options(recipe, None, output)
            train.func(train)
        finally:
            os.chdir(here)
    if shipped is not None:
        print(f"{'':52s} {'shipped':>12s} {'rebuilt':>12s}")
        for what, was, now in compare_models(shipped, read_model(output)):
            print(f"{what:52s} {_shown(was):>12s} {_shown(now):>12s}{'' if was == now else '  differs'}")
    return 0


def _shown(value) -> str:
    return "-" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)


def add_rebuild_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rebuild-model",
        help="train a shipped model again from its recipe",
        description="Train a shipped model again with the `diode train` options of its recipe "
        "(torch_diode/models/NAME.recipe.json) on the data folders as they are at the recipe's "
        "data_commit, then compare the result with the shipped model. Run it in a torch-diode checkout.",
    )
    p.add_argument("name", metavar="NAME", help="a shipped model's name (NVIDIA-H100-matmul) or a .recipe.json file")
    p.add_argument(
        "--output",
        "-o",
        metavar="PATH",
        help="the model file to write (default NAME.diode in the current folder; the shipped file's path replaces it)",
    )
    p.add_argument(
        "--current-data",
        action="store_true",
        help="train on the recipe's data folders as they are in the checkout, not as at its data_commit",
    )
    p.set_defaults(func=_cmd_rebuild_model)

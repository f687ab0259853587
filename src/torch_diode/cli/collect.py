"""`diode collect`, `diode collect-shapeset` and `diode create-validation`: random problems (or a
shapeset's) drawn as the options say and measured (:mod:`.measure`)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..errors import OptionError
from ..types import DTYPES, OPS, Problem
from .common import (
    MAX_SEED,
    finite_float,
    nonnegative_float,
    positive_float,
    positive_int,
    probability,
    seed,
)
from .measure import check_files, measure, measurement_options, output_options

if TYPE_CHECKING:
    from ..coverage import CellFill


@contextmanager
def _named_options() -> Iterator[None]:
    """ShapeSpec's errors name its field, which is named as its option: OptionError names it."""
    from ..collection.shapes import ShapeSpec

    try:
        yield
    except ValueError as e:
        field, _, message = str(e).partition(": ")
        if field not in ShapeSpec.__dataclass_fields__:
            raise
        raise OptionError("--" + field.replace("_", "-"), message) from None


def _spec(args: argparse.Namespace):
    """The ShapeSpec of the options; OptionError naming the option where they contradict each
    other or allow fewer distinct problems than --num-shapes."""
    spec = _shape_spec(args)
    possible = spec.distinct_problems()
    if args.num_shapes > possible:
        raise OptionError(
            "--num-shapes", f"{args.num_shapes} problems asked, but these options allow only {possible} distinct ones"
        )
    return spec


def _shape_spec(args: argparse.Namespace):
    from ..collection.shapes import ShapeSpec

    with _named_options():
        return ShapeSpec(
            num_shapes=args.num_shapes,
            min_size=args.min_size,
            max_size=args.max_size,
            power_of_two=args.power_of_two,
            log_normal=args.log_normal,
            log_normal_mean=args.log_normal_mean,
            log_normal_sigma=args.log_normal_sigma,
            ops=tuple(args.ops),
            dtypes=tuple(args.dtypes),
            max_batch=args.max_batch,
            min_batch=args.min_batch,
            transpose_probability=args.transpose_probability,
            alignment=args.alignment,
            aligned_fraction=args.aligned_fraction,
            sizes=tuple(args.sizes or ()),
            m_sizes=tuple(args.m_sizes or ()),
            n_sizes=tuple(args.n_sizes or ()),
            k_sizes=tuple(args.k_sizes or ()),
            layouts=tuple(args.layouts or ()),
            max_gflop=args.max_gflop,
        )


def _draw(args: argparse.Namespace, excluded: set[str], fill: CellFill | None = None) -> list[Problem]:
    """The options' random problems, none of them in ``excluded`` nor held out, with ``fill`` only
    those it takes (:func:`collection.shapes.draw_problems`)."""
    from ..collection.shapes import draw_problems

    spec = _spec(args)
    with _named_options():
        return draw_problems(spec, args.seed, excluded, fill)


def _cell_fill(args: argparse.Namespace):
    """--fill-cells: the short cells of the report, for problems of this run's TF32 setting."""
    from ..coverage import CellFill, read_missing
    from ..inductor.config_space import tf32_enabled

    tf32 = args.float32_matmul_precision == "high" if args.float32_matmul_precision else tf32_enabled()
    return CellFill(read_missing(args.fill_cells), tf32)


def _cmd_collect(args: argparse.Namespace) -> int:
    from ..collection.shapes import HELDOUT_SHAPESETS, drop_heldout, held_keys, random_problems

    check_files(args, {"--exclude": args.exclude, "--fill-cells": [args.fill_cells] if args.fill_cells else []})
    spec = _spec(args)
    record = {
        "command": "collect",
        "seed": args.seed,
        "shape_spec": spec.record(),
        "heldout_excluded": list(HELDOUT_SHAPESETS),
    }
    if args.fill_cells:
        fill = _cell_fill(args)
        wanted = sum(fill.remaining.values())
        problems = _draw(args, held_keys(args.exclude), fill)
        short = fill.still_short()
        print(
            f"collect: {len(problems)} problems for the {len(fill.remaining)} cells short in {args.fill_cells} "
            f"({wanted} problems short)"
            + (f"; still short after the draw: {', '.join(f'{c} {n}' for c, n in short.items())}" if short else "")
        )
        record = {**record, "fill_cells": str(args.fill_cells), "exclude": args.exclude or []}
        return measure(problems, args, record)
    if not args.exclude:  # the plain draw, which a collection without --exclude resumes from
        with _named_options():
            drawn = random_problems(spec, args.seed)
        problems = drop_heldout(drawn)
        if len(problems) < len(drawn):
            print(
                f"collect: {len(drawn) - len(problems)} drawn problems left out, held out by "
                f"{' '.join(HELDOUT_SHAPESETS)}"
            )
        return measure(problems, args, record)
    problems = _draw(args, held_keys(args.exclude))
    print(
        f"collect: {len(problems)} problems, none of them in {' '.join(args.exclude)} nor {' '.join(HELDOUT_SHAPESETS)}"
    )
    return measure(problems, args, {**record, "exclude": args.exclude})


def _cmd_collect_shapeset(args: argparse.Namespace) -> int:
    from ..collection.shapes import held_keys, load_shapeset, resolve_shapeset, unique_problems
    from ..types import problem_key

    check_files(args, {"--exclude": args.exclude, "--shapeset": [resolve_shapeset(args.shapeset)]})
    entries = load_shapeset(args.shapeset)
    problems = unique_problems([e.problem for e in entries])
    excluded = held_keys(args.exclude)
    kept = [p for p in problems if problem_key(p) not in excluded]
    print(
        f"shapeset {args.shapeset}: {len(entries)} entries, {len(problems)} distinct problems"
        + (f", {len(problems) - len(kept)} of them left out by --exclude" if args.exclude else "")
    )
    record = {"command": "collect-shapeset", "shapeset": str(args.shapeset)}
    if args.exclude:
        record["exclude"] = args.exclude
    return measure(kept, args, record)


def _cmd_create_validation(args: argparse.Namespace) -> int:
    from ..collection.shapes import HELDOUT_SHAPESETS, held_keys

    check_files(args, {"--train-dataset": args.train_dataset})
    spec = _spec(args)
    problems = _draw(args, held_keys(args.train_dataset))
    print(f"validation: {len(problems)} problems sharing none with the training set nor {' '.join(HELDOUT_SHAPESETS)}")
    return measure(
        problems,
        args,
        {
            "command": "create-validation",
            "seed": args.seed,
            "shape_spec": spec.record(),
            "train_dataset": [str(p) for p in args.train_dataset or []],
            "heldout_excluded": list(HELDOUT_SHAPESETS),
        },
    )


def _common(p: argparse.ArgumentParser) -> None:
    output_options(p)
    measurement_options(p)


def _random_shape_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--num-shapes", type=positive_int, default=100, help="number of problems (default 100)")
    p.add_argument("--min-size", type=positive_int, default=16, help="smallest M/N/K (default 16)")
    p.add_argument("--max-size", type=positive_int, default=8192, help="largest M/N/K (default 8192)")
    p.add_argument("--power-of-two", action="store_true", help="draw sizes among powers of two")
    p.add_argument("--log-normal", action="store_true", help="draw sizes from a log-normal distribution")
    p.add_argument("--log-normal-mean", type=finite_float, default=6.5, help="mean of ln(size) (default 6.5)")
    p.add_argument("--log-normal-sigma", type=positive_float, default=1.5, help="sigma of ln(size) (default 1.5)")
    p.add_argument("--ops", nargs="+", choices=OPS, default=["mm", "addmm", "bmm"], help="ops to draw from")
    p.add_argument(
        "--dtypes",
        nargs="+",
        choices=DTYPES,
        default=["float16", "bfloat16", "float32"],
        metavar="DTYPE",
        help=f"dtypes to draw from ({', '.join(DTYPES)})",
    )
    p.add_argument("--max-batch", type=positive_int, default=64, help="largest batch of bmm/baddbmm (default 64)")
    p.add_argument("--min-batch", type=positive_int, default=1, help="smallest batch of bmm/baddbmm (default 1)")
    p.add_argument(
        "--transpose-probability",
        type=probability,
        default=0.0,
        help="probability that an operand is stored transposed (default 0)",
    )
    p.add_argument("--alignment", type=positive_int, default=1, help="round sizes to multiples of this (default 1)...")
    p.add_argument("--aligned-fraction", type=probability, default=0.0, help="...for this share of sizes (default 0)")
    p.add_argument(
        "--sizes",
        type=positive_int,
        nargs="+",
        metavar="S",
        help="draw N and K (and M, unless --m-sizes) from these values instead of a distribution",
    )
    p.add_argument("--m-sizes", type=positive_int, nargs="+", metavar="S", help="draw M from these values")
    p.add_argument(
        "--n-sizes", type=positive_int, nargs="+", metavar="S", help="draw N from these values (instead of --sizes)"
    )
    p.add_argument(
        "--k-sizes", type=positive_int, nargs="+", metavar="S", help="draw K from these values (instead of --sizes)"
    )
    p.add_argument(
        "--layouts",
        nargs="+",
        choices=["NN", "NT", "TN", "TT"],
        help="operand layouts to draw from (T: stored transposed, e.g. NT is nn.Linear's x @ W.T); "
        "overrides --transpose-probability",
    )
    p.add_argument(
        "--max-gflop",
        type=nonnegative_float,
        default=0.0,
        help="redraw shapes needing more than this many GFLOP, 2*B*M*N*K/1e9 (default 0: no limit)",
    )
    p.add_argument("--seed", type=seed, default=0, help=f"random seed, 0 to {MAX_SEED} (default 0)")


def _exclude_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--exclude",
        nargs="+",
        metavar="DATASET_OR_SHAPESET",
        help="dataset files/folders (e.g. a validation set) or shapesets (a shipped name or a shapeset "
        "JSON file) whose problems are never measured here",
    )


def add_collection_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collect",
        help="measure random GEMM shapes through torch.compile",
        description="Draw random problems and record every autotuned choice's time.",
    )
    _random_shape_options(p)
    _exclude_option(p)
    p.add_argument(
        "--fill-cells",
        metavar="REPORT",
        help="draw only problems that count in an op or size-regime cell that this coverage report "
        "(`diode dataset coverage --targets --report-json`) lists as short, until it is full or "
        "--num-shapes are drawn; fp32 problems count as TF32 ones with --float32-matmul-precision high",
    )
    _common(p)
    p.set_defaults(func=_cmd_collect)

    p = sub.add_parser(
        "collect-shapeset",
        help="measure the GEMMs of a shapeset (public models)",
        description="Measure every problem of a shapeset file or shipped shapeset name.",
    )
    p.add_argument("--shapeset", required=True, help="shapeset JSON file, or the name of a shipped one")
    _exclude_option(p)
    _common(p)
    p.set_defaults(func=_cmd_collect_shapeset)

    p = sub.add_parser(
        "create-validation",
        help="measure random shapes that a training set does not hold",
        description="Like collect, but never a problem of --train-dataset.",
    )
    _random_shape_options(p)
    p.add_argument(
        "--train-dataset",
        nargs="+",
        help="training dataset files/folders (or shapesets) whose problems are never drawn here",
    )
    _common(p)
    p.set_defaults(func=_cmd_create_validation)

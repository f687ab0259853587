"""`diode dataset stats|merge|convert|split`."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import OptionError
from .common import add_force, add_inputs, check_outputs, dataset_output, open_fraction, seed, write_report


def _cmd_stats(args: argparse.Namespace) -> int:
    from ..dataset_io import load_datasets
    from ..dataset_tools import best_configs, dataset_stats

    check_outputs({"inputs": args.inputs}, {"--report-json": args.report_json}, force=args.force)
    dataset = load_datasets(args.inputs, args.file_extensions)
    stats = dataset_stats(dataset)
    print(
        f"{stats['num_problems']} problems, {stats['num_timed_configs']} configs timed "
        f"({stats['num_failures']} of them failed)"
    )
    for hw in stats["hardware"]:
        print(
            f"hardware: {hw['device_name']} ({hw['sm_count']} SMs, torch {hw['torch_version']}, "
            f"triton {hw['triton_version']}): {hw['problems']} problems"
        )
    for op, counts in stats["ops"].items():
        print(
            f"  op {op:8s} {counts['problems']:6d} problems {counts['timed_configs']:9d} configs timed "
            f"{counts['failures']:7d} failed"
        )
    print("  dtypes: " + ", ".join(f"{k} {v}" for k, v in stats["dtypes"].items()))
    print("  templates: " + ", ".join(f"{k} {v}" for k, v in stats["templates"].items()))
    if args.problems:
        print(
            f"\n{'problem':36s} {'choices':>7s}  {'fastest measured config':36s} {'time_us':>9s} "
            f"{'best ATen us':>12s} {'ATen/best':>9s}"
        )
        for _, problem, best, n, aten in best_configs(dataset):
            aten_us = f"{aten.time_us:12.1f}" if aten else f"{'-':>12s}"
            ratio = f"{aten.time_us / best.time_us:9.2f}" if aten else f"{'-':>9s}"
            print(f"{problem.short():36s} {n:7d}  {best.config.short():36s} {best.time_us:9.1f} {aten_us} {ratio}")
    write_report(args.report_json, stats, args.argv)
    return 0


def _cmd_coverage(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..coverage import DEFAULT_TARGETS, Coverage, format_report
    from ..dataset_io import dataset_files, load_dataset

    check_outputs({"inputs": args.inputs}, {"--report-json": args.report_json}, force=args.force)
    files = [f for path in args.inputs for f in dataset_files(path, args.file_extensions)]
    if not files:
        raise FileNotFoundError(f"no dataset files in {' '.join(args.inputs)}")
    coverage = Coverage()
    for f in tqdm(files, desc="coverage", unit="file", disable=len(files) < 2):
        coverage.add(load_dataset(f))  # file by file: a file's settings say whether it ran with TF32
    report = coverage.report(DEFAULT_TARGETS if args.targets else None)
    print("\n".join(format_report(report)))
    write_report(args.report_json, report, args.argv)
    return 0


def _merge_replacing(datasets: list) -> tuple:
    """The datasets merged in order, where a problem that a later one holds (on a GPU of the same
    name; the same problem as requested, whether or not its strides were recorded) is taken from it
    alone: a measurement made again replaces the old one instead of being averaged with it.
    (merged dataset, how many problems were replaced)"""
    from ..types import Dataset, problem_key

    merged, replaced = Dataset(), 0
    for dataset in datasets:
        held = {(hw.device_name, problem_key(p)) for hw, p, _ in dataset.problems()}
        before = merged.num_problems
        merged = merged.subset(lambda hw, p, held=held: (hw.device_name, problem_key(p)) not in held)
        replaced += before - merged.num_problems
        merged.merge(dataset)
    return merged, replaced


def _cmd_merge(args: argparse.Namespace) -> int:
    from ..dataset_io import dataset_files, load_datasets, save_dataset, unique_files

    check_outputs(
        {"inputs": args.inputs},
        {"--output": args.output},
        dataset_outputs=["--output"],
        extensions=args.file_extensions,
        force=args.force,
    )
    if args.replace:
        merged, replaced = _merge_replacing([load_datasets([i], args.file_extensions) for i in args.inputs])
    else:
        merged, replaced = load_datasets(args.inputs, args.file_extensions), 0
    save_dataset(merged, args.output)
    files = unique_files(f for i in args.inputs for f in dataset_files(i, args.file_extensions))
    print(
        f"merged {len(files)} file(s): {merged.num_problems} problems, "
        f"{merged.num_timed_configs} configs timed"
        + (f", {replaced} problem(s) taken from a later input alone" if args.replace else "")
        + f" -> {args.output}"
    )
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from ..dataset_io import load_dataset, save_dataset

    if Path(args.input).is_dir():
        raise OptionError(
            "input", f"{args.input} is a folder: convert rewrites one file (`diode dataset merge` reads folders)"
        )
    check_outputs({"input": [args.input]}, {"output": args.output}, force=args.force)
    save_dataset(load_dataset(args.input), args.output)
    print(f"{args.input} -> {args.output}")
    return 0


def _cmd_split(args: argparse.Namespace) -> int:
    from ..dataset_io import load_datasets, save_dataset
    from ..dataset_tools import split_dataset

    check_outputs(
        {"inputs": args.inputs},
        {"--train": args.train, "--validation": args.validation},
        dataset_outputs=["--train", "--validation"],
        extensions=args.file_extensions,
        force=args.force,
    )
    train, val = split_dataset(load_datasets(args.inputs, args.file_extensions), args.validation_fraction, args.seed)
    save_dataset(train, args.train)
    save_dataset(val, args.validation)
    print(
        f"train: {train.num_problems} problems -> {args.train}; "
        f"validation: {val.num_problems} problems -> {args.validation}"
    )
    return 0


def add_dataset_commands(sub: argparse._SubParsersAction) -> None:
    ds = sub.add_parser(
        "dataset",
        help="inspect, merge, convert and split dataset files",
        description="Work on dataset files (.json, .msgpack, optionally .gz) and folders of them.",
    )
    ds_sub = ds.add_subparsers(dest="dataset_command", required=True, metavar="ACTION")
    _add_report_commands(ds_sub)
    _add_file_commands(ds_sub)


def _add_report_commands(ds_sub: argparse._SubParsersAction) -> None:
    """`diode dataset stats` and `coverage`: what a dataset holds."""
    p = ds_sub.add_parser(
        "stats",
        help="counts per hardware, op, dtype and template",
        description="Print what a dataset holds; --report-json writes the figures as JSON.",
    )
    add_inputs(p)
    p.add_argument("--report-json", metavar="R", help="write the statistics to this JSON file")
    p.add_argument("--problems", action="store_true", help="list every problem with its fastest measured config")
    add_force(p)
    p.set_defaults(func=_cmd_stats)

    p = ds_sub.add_parser(
        "coverage",
        help="problem counts per op x dtype x layout, size regime and candidate kind",
        description="Count the problems of each cell (docs/data.md, 'Coverage'); empty cells are "
        "listed; --report-json writes {cells, empty_cells, ...}.",
    )
    add_inputs(p)
    p.add_argument("--report-json", metavar="R", help="write the counts to this JSON file")
    p.add_argument(
        "--targets",
        action="store_true",
        help="also print (and write as 'missing') how many problems each cell lacks to reach its target "
        "(fp16/bf16 and candidate kinds 30, fp32 and fp32-TF32 15)",
    )
    add_force(p)
    p.set_defaults(func=_cmd_coverage)


def _add_file_commands(ds_sub: argparse._SubParsersAction) -> None:
    """`diode dataset merge`, `convert` and `split`: datasets written from others."""
    p = ds_sub.add_parser(
        "merge",
        help="merge files/folders into one dataset",
        description="Merge datasets. Different hardware stays apart; repeated (problem, config) "
        "measurements keep all samples, time_us = their median (with --replace: a problem that a "
        "later input holds is taken from that input alone).",
    )
    add_inputs(p)
    p.add_argument(
        "--replace",
        action="store_true",
        help="a problem that a later input also holds (on a GPU of the same name) is taken from the later "
        "input alone: how `diode remeasure`'s output replaces the old measurements",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        type=dataset_output,
        help="output file (.json/.msgpack, optionally .gz); not an input, nor inside an input folder",
    )
    add_force(p)
    p.set_defaults(func=_cmd_merge)

    p = ds_sub.add_parser(
        "convert",
        help="convert between JSON and msgpack (by suffix)",
        description="Rewrite a dataset in the format its output suffix names.",
    )
    p.add_argument("input")
    p.add_argument("output", type=dataset_output)
    add_force(p)
    p.set_defaults(func=_cmd_convert)

    p = ds_sub.add_parser(
        "split",
        help="split into train/validation by problem",
        description="Split by problem, never by row, deterministically for a seed.",
    )
    add_inputs(p)
    p.add_argument("--train", required=True, type=dataset_output, help="output file of the training part")
    p.add_argument("--validation", required=True, type=dataset_output, help="output file of the validation part")
    p.add_argument(
        "--validation-fraction",
        type=open_fraction(),
        default=0.2,
        help="share of problems held out, in (0, 1) (default 0.2)",
    )
    p.add_argument("--seed", type=seed, default=0, help="shuffle seed, 0 to 2^32-1 (default 0)")
    add_force(p)
    p.set_defaults(func=_cmd_split)

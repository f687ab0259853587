"""`diode remeasure`: a dataset file's problems measured again as its collection did
(:mod:`torch_diode.collection.remeasure`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import OptionError
from .common import check_outputs
from .measure import (
    check_constant_ints,
    check_devices,
    constant_ints_option,
    measure,
    output_options,
    output_path,
    shard_of,
)


def _cmd_remeasure(args: argparse.Namespace) -> int:
    from ..collection.provenance import measurement_settings
    from ..collection.remeasure import measured_already, select_problems
    from ..dataset_io import load_dataset

    # a file with nothing to measure again says so without importing torch or opening the device
    # (collect.sh remeasure-hinted asks every dataset file)
    inputs = {"input": [args.input], "--only": args.only or []}
    check_outputs(inputs, {"--output": output_path(args.output, args.format)}, dataset_outputs=["--output"])
    if Path(args.input).is_dir():
        raise OptionError("input", f"{args.input} is a folder: remeasure reads one dataset file (its settings)")
    if args.below_us is not None and not args.below_us > 0:
        raise OptionError("--below-us", f"{args.below_us:g}: give a time in microseconds above 0")
    source = load_dataset(args.input)
    nothing = measured_already(source, args.layout_hinted, args.without_lead, args.below_us)
    if nothing is None:
        selection = select_problems(source, args.only, args.below_us, args.layout_hinted)
        nothing = selection.nothing
    if nothing:
        print(f"remeasure {args.input}: {nothing}; nothing to do")
        return 0
    # read once there is something to measure: a file of collections with different settings
    # that holds nothing to measure again is left alone, not an error
    settings = measurement_settings(args.input, source)
    problems = selection.problems
    if args.dry_run:
        print(
            f"remeasure {args.input}: {len(problems)} of its {source.num_problems} problems to measure again "
            "(--dry-run: nothing measured)"
        )
        return 0
    return _remeasure(args, source, settings, selection)


def _remeasure(args: argparse.Namespace, source, settings: dict, selection) -> int:
    """Measures the selected problems of ``source`` again on this device, as ``settings`` say."""
    from ..collection.remeasure import collection_options, offer_persistent_tma
    from ..collection.sweep_state import check_measured_here
    from ..hardware import detect_hardware

    shard_of(args)  # the rest of check_files (the outputs were checked above)
    check_devices(args)
    # measured again on the GPU that measured it: merged over the old timings, another GPU's would
    # stand beside them as a second device's
    check_measured_here(source, args.input, detect_hardware(args.device).device_name, args.device)
    vars(args).update(collection_options(settings))
    if args.constant_ints_instead is not None:
        args.constant_ints = args.constant_ints_instead
        check_constant_ints(args, f"({args.input} was measured in Inductor's mode)")
    offer_persistent_tma(settings)
    problems = selection.problems
    print(
        f"remeasure {args.input}: {len(problems)} of its {source.num_problems} problems"
        + (" (those whose kernels get layout hints)" if args.layout_hinted else "")
        + (f" (those of {' '.join(args.only)})" if args.only else "")
        + (f" (those whose fastest recorded time is under {args.below_us:g} us)" if args.below_us is not None else "")
        + f", {args.search_mode} mode as recorded"
        + (f", ints held as constants: {','.join(args.constant_ints)}" if args.constant_ints else "")
    )
    record = {
        "command": "remeasure",
        "source": str(args.input),
        "layout_hinted_only": args.layout_hinted,
        **selection.narrowed,
    }
    return measure(problems, args, record, fast_chunk_size=None)  # one file, as the input is


def add_remeasure_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "remeasure",
        help="measure a dataset file's problems again, as its collection did",
        description="Measure the problems of one dataset file again with this torch-diode's collector and "
        "the settings the file records (mode, sample, seed, repetitions, TF32), into a new file; "
        "`diode dataset merge --replace OLD NEW` then puts the new measurements in place of the old.",
    )
    p.add_argument("input", help="the dataset file whose problems to measure")
    p.add_argument(
        "--layout-hinted",
        action="store_true",
        help="only the problems whose Triton kernels get layout hints (sizes or strides with a power-of-two "
        "factor below 16), which the fast collector times with narrower memory accesses without the hints; "
        "a file measured with the hints (as its collections' settings or a merged re-measurement say) "
        "is left as it is",
    )
    p.add_argument(
        "--without-lead",
        action="store_true",
        help="only a file timed without the fast collector's lead of GPU time before each flush "
        "(timing.LEAD_US; on a GPU whose flush is short, such a file's short kernels read slow): "
        "a file whose collections recorded the lead, or into which a re-measurement of all its problems "
        "with it was merged, is left as it is",
    )
    p.add_argument(
        "--below-us",
        type=float,
        metavar="US",
        help="only the problems whose fastest recorded time is under US microseconds: with --without-lead, "
        'those whose timings the lead changes (docs/data.md, "How kernels are timed"); a file into '
        "which a re-measurement with the lead of its problems under US or more was merged is left as it is",
    )
    p.add_argument(
        "--only",
        nargs="+",
        metavar="DATASET_OR_SHAPESET",
        help="only the problems that these dataset files/folders or shapesets also hold (with --layout-hinted: "
        "a list of the hinted problems still timed without the hints, such as data/h100/unhinted, so that "
        "the file's others, measured with them, are not measured again)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="say how many of the file's problems would be measured again (or that none would) and stop: "
        "no device is opened (collect.sh asks every file so, without the import-time registration, "
        "before it measures one)",
    )
    constant_ints_option(
        p,
        "the kernels' ints to hold as compile-time constants instead of as the file's collections did "
        "(default: as they did)",
        dest="constant_ints_instead",
        default=None,
    )
    output_options(p)
    p.set_defaults(func=_cmd_remeasure)

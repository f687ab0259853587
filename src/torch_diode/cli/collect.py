"""`diode collect`, `diode collect-shapeset`, `diode create-validation` and `diode remeasure`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..collection.sweep_state import DEFAULT_COMPILE_TIMEOUT_S
from ..errors import OptionError
from ..formats import DATASET_SUFFIXES
from ..types import DTYPES, OPS, Problem
from .common import (
    MAX_SEED,
    check_outputs,
    finite_float,
    held_keys,
    int_at_least,
    nonnegative_float,
    positive_float,
    positive_int,
    probability,
    seed,
)

if TYPE_CHECKING:
    from ..coverage import CellFill


def _output_path(output: str, fmt: str | None) -> str:
    """--output, with the --format's suffix added where it names none; OptionError if it ends in
    no dataset suffix."""
    if fmt is not None:
        suffix = {"json": ".json", "msgpack": ".msgpack"}[fmt]
        name = output[:-3] if output.endswith(".gz") else output
        if not (name.endswith(".json") or name.endswith(".msgpack")):
            output = output + suffix
    if not output.endswith(DATASET_SUFFIXES):
        raise OptionError(
            "--output",
            f"{output!r}: expected a dataset file name ending in {', '.join(DATASET_SUFFIXES)} (or give --format)",
        )
    return output


def shard_path(output: str, index: int) -> str:
    """``runs/x.msgpack.gz`` -> ``runs/x_shard1.msgpack.gz``."""
    path = Path(output)
    suffix = "".join(s for s in path.suffixes[-2:] if s in (".json", ".msgpack", ".gz"))
    stem = path.name[: -len(suffix)] if suffix else path.name
    return str(path.with_name(f"{stem}_shard{index}{suffix}"))


def _shard(args: argparse.Namespace) -> tuple[int, int] | None:
    """(index, count) from --shard I/N, or from a torchrun launch (RANK / WORLD_SIZE)."""
    if args.shard:
        try:
            index, count = (int(x) for x in args.shard.split("/"))
        except ValueError:
            raise OptionError("--shard", f"expected I/N, got {args.shard!r}") from None
        if not 0 <= index < count:
            raise OptionError("--shard", f"need 0 <= I < N, got {args.shard!r}")
        return index, count
    if "WORLD_SIZE" not in os.environ:
        return None
    env = {name: os.environ.get(name) for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    try:
        count = int(env["WORLD_SIZE"])
        rank = int(env["RANK"] or env["LOCAL_RANK"] or "0")
        local_rank = int(env["LOCAL_RANK"] or rank)
    except ValueError:
        raise OptionError("WORLD_SIZE/RANK/LOCAL_RANK", f"expected integers (a torchrun launch), got {env}") from None
    if count <= 1:
        return None
    if not 0 <= rank < count:
        raise OptionError("RANK", f"need 0 <= RANK < WORLD_SIZE, got {env}")
    if args.device == "cuda":
        args.device = f"cuda:{local_rank}"
    return rank, count


def _spawn_devices(args: argparse.Namespace) -> int:
    """One worker process per device, each measuring every N-th problem into its own shard."""
    import subprocess
    import sys

    argv = list(args.argv)
    i = argv.index("--devices")
    j = i + 1
    while j < len(argv) and not argv[j].startswith("--"):
        j += 1
    base = argv[:i] + argv[j:]
    workers = []
    for index, device in enumerate(args.devices):
        cmd = [
            sys.executable,
            "-m",
            "torch_diode.cli",
            *base,
            "--device",
            device,
            "--shard",
            f"{index}/{len(args.devices)}",
        ]
        workers.append(subprocess.Popen(cmd))
    codes = [w.wait() for w in workers]
    output = _output_path(args.output, args.format)
    shards = " ".join(shard_path(output, i) for i in range(len(args.devices)))
    print(
        f"{len(args.devices)} workers finished (exit codes {codes}); join the shards with:\n"
        f"  diode dataset merge {shards} -o {output}"
    )
    return next((c for c in codes if c != 0), 0)


# Inductor's GEMM backends (max_autotune_gemm_backends) and diode's own
BACKENDS = ("ATEN", "TRITON", "CPP", "CUTLASS", "CUTEDSL", "NVGEMM", "CK", "CKTILE", "DIODE")


def backends(text: str) -> str:
    """--backends: a comma-separated list of known backends (argparse type)."""
    words = [w.strip().upper() for w in text.split(",")]
    unknown = [w for w in words if w not in BACKENDS]
    if unknown or not text.strip():
        raise argparse.ArgumentTypeError(
            f"unknown backend {', '.join(repr(w) for w in unknown) or repr(text)}; expected a comma-separated "
            f"list of {', '.join(BACKENDS)}"
        )
    return ",".join(dict.fromkeys(words))


def _same_device(device: str) -> str:
    """``cuda`` and ``cuda:0`` name one device."""
    return "cuda:0" if device.strip() == "cuda" else device.strip()


def _check_devices(args: argparse.Namespace) -> None:
    """A device that cannot run here fails at once, before any shape is drawn or marked; so do a
    GPU listed twice in --devices (the CPU may take several workers) and --device given with
    --devices."""
    from ..hardware import DeviceError, check_device

    if args.devices:
        seen: dict[str, str] = {}
        for device in args.devices:
            if _same_device(device) in seen and device.strip().startswith("cuda"):
                raise OptionError(
                    "--devices",
                    f"{device!r} is listed twice (as {seen[_same_device(device)]!r}): two workers timing "
                    "kernels on one GPU disturb each other's timings",
                )
            seen[_same_device(device)] = device
        words = getattr(args, "argv", None) or []
        if any(w == "--device" or w.startswith("--device=") for w in words):
            raise OptionError(
                "--devices", "given with --device: give one device with --device or several with --devices"
            )
    for option, device in [("--devices", d) for d in args.devices or []] or [("--device", args.device)]:
        try:
            check_device(device)
        except DeviceError as e:
            raise OptionError(option, str(e)) from None


def _check_files(args: argparse.Namespace, inputs: dict) -> str:
    """The output file (see _output_path), checked against the command's inputs."""
    output = _output_path(args.output, args.format)
    check_outputs(inputs, {"--output": output}, dataset_outputs=["--output"])
    _shard(args)  # a bad --shard or torchrun environment fails here, before anything is drawn
    _check_devices(args)
    return output


def _run(problems: Sequence[Problem], args: argparse.Namespace, record: dict, fast_chunk_size: int | None = 25) -> int:
    """Measures ``problems`` as ``args`` say; fast mode writes chunks of ``fast_chunk_size``
    problems unless --chunk-size says otherwise (None: one file)."""
    from ..collection.inductor_sweep import sweep_inductor
    from ..collection.sweep_state import SweepSummary, chunked
    from ..inductor.config_space import tf32_enabled

    if args.devices:
        return _spawn_devices(args)
    if args.float32_matmul_precision:
        import torch

        torch.set_float32_matmul_precision(args.float32_matmul_precision)
    record = {**record, "tf32": tf32_enabled()}  # fp32 problems ran TF32 kernels (diode dataset coverage reads it)
    output = _output_path(args.output, args.format)
    shard = _shard(args)
    if shard is not None:
        index, count = shard
        problems = list(problems)[index::count]
        output = shard_path(output, index)
        record = {**record, "shard": f"{index}/{count}", "device": args.device}
    if args.search_mode == "fast":
        from ..collection.fast_sweep import FastSweep

        sweep = FastSweep(
            exhaustive_sample=args.exhaustive_sample,
            exhaustive_rotations=args.exhaustive_rotations,
            seed=getattr(args, "seed", 0),
            reps=args.reps,
            workers=args.workers,
            device=args.device,
            compile_timeout_s=args.compile_timeout,
        )
        total = sweep.run(problems, output, chunk_size=args.chunk_size or fast_chunk_size, settings_record=record)
        print(f"summary: {len(problems)} shapes: {total.line()} -> {output}")
        return 0
    total = SweepSummary()
    for chunk, path in chunked(problems, output, args.chunk_size):
        s = sweep_inductor(
            chunk,
            path,
            device=args.device,
            search_space=args.search_space,
            backends=args.backends,
            settings_record=record,
        )
        for field in (
            "problems_measured",
            "problems_resumed",
            "problems_skipped",
            "timed_configs",
            "failed_configs",
            "seconds",
        ):
            setattr(total, field, getattr(total, field) + getattr(s, field))
    print(f"summary: {len(problems)} shapes: {total.line()} -> {output}")
    return 0


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


def _random_problems(spec, seed: int) -> list[Problem]:
    from ..collection.shapes import random_problems

    with _named_options():
        return random_problems(spec, seed)


def _spec_record(spec) -> dict:
    from dataclasses import asdict

    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()}


def _heldout_keys() -> set[str]:
    """The problems of the held-out shapesets, which random draws never produce."""
    from ..collection.shapes import HELDOUT_SHAPESETS

    return held_keys(HELDOUT_SHAPESETS)


def _draw(args: argparse.Namespace, excluded: set[str], fill: CellFill | None = None) -> list[Problem]:
    """``--num-shapes`` distinct random problems, none of them in ``excluded`` nor held out (redrawn
    with the following seeds until there are enough); with ``fill`` (a coverage.CellFill), only
    problems that it takes, until its cells are full."""
    from ..types import problem_key

    spec = _spec(args)
    excluded = set(excluded) | _heldout_keys()
    problems: list[Problem] = []
    seed = args.seed

    def enough() -> bool:
        return len(problems) >= args.num_shapes or (fill is not None and fill.done)

    while not enough() and seed < args.seed + 1000:
        for p in _random_problems(spec, seed):
            if enough():
                break
            key = problem_key(p)
            if key in excluded or (fill is not None and not fill.take(p)):
                continue
            excluded.add(key)
            problems.append(p)
        seed += 1
    return problems


def _cell_fill(args: argparse.Namespace):
    """--fill-cells: the short cells of the report, for problems of this run's TF32 setting."""
    from ..coverage import CellFill, read_missing
    from ..inductor.config_space import tf32_enabled

    tf32 = args.float32_matmul_precision == "high" if args.float32_matmul_precision else tf32_enabled()
    return CellFill(read_missing(args.fill_cells), tf32)


def _cmd_collect(args: argparse.Namespace) -> int:
    from ..collection.shapes import HELDOUT_SHAPESETS, drop_heldout

    _check_files(args, {"--exclude": args.exclude, "--fill-cells": [args.fill_cells] if args.fill_cells else []})
    spec = _spec(args)
    record = {
        "command": "collect",
        "seed": args.seed,
        "shape_spec": _spec_record(spec),
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
        return _run(problems, args, record)
    if not args.exclude:  # the plain draw, as runs before --exclude drew (their resumes depend on it)
        drawn = _random_problems(spec, args.seed)
        problems = drop_heldout(drawn)
        if len(problems) < len(drawn):
            print(
                f"collect: {len(drawn) - len(problems)} drawn problems left out, held out by "
                f"{' '.join(HELDOUT_SHAPESETS)}"
            )
        return _run(problems, args, record)
    problems = _draw(args, held_keys(args.exclude))
    print(
        f"collect: {len(problems)} problems, none of them in {' '.join(args.exclude)} nor {' '.join(HELDOUT_SHAPESETS)}"
    )
    return _run(problems, args, {**record, "exclude": args.exclude})


def _cmd_collect_shapeset(args: argparse.Namespace) -> int:
    from ..collection.shapes import load_shapeset, resolve_shapeset, unique_problems
    from ..types import problem_key

    _check_files(args, {"--exclude": args.exclude, "--shapeset": [resolve_shapeset(args.shapeset)]})
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
    return _run(kept, args, record)


def _cmd_create_validation(args: argparse.Namespace) -> int:
    from ..collection.shapes import HELDOUT_SHAPESETS

    _check_files(args, {"--train-dataset": args.train_dataset})
    spec = _spec(args)
    problems = _draw(args, held_keys(args.train_dataset))
    print(f"validation: {len(problems)} problems sharing none with the training set nor {' '.join(HELDOUT_SHAPESETS)}")
    return _run(
        problems,
        args,
        {
            "command": "create-validation",
            "seed": args.seed,
            "shape_spec": _spec_record(spec),
            "train_dataset": [str(p) for p in args.train_dataset or []],
            "heldout_excluded": list(HELDOUT_SHAPESETS),
        },
    )


# what a collection records of how it measured, and is measured again with (remeasure)
_MEASUREMENT_SETTINGS = (
    "mode",
    "exhaustive_sample",
    "exhaustive_rotations",
    "seed",
    "reps",
    "tf32",
    "max_autotune_gemm_search_space",
    "max_autotune_gemm_backends",
    "persistent_tma",
)


def collection_settings(dataset) -> list[dict]:
    """The settings every collection of ``dataset`` recorded (its metadata's sources)."""
    return [
        s["settings"]
        for s in dataset.metadata.get("sources") or []
        if isinstance(s, dict) and isinstance(s.get("settings"), dict) and s.get("tool") == "torch_diode.collect"
    ]


def _hinted_already(dataset) -> bool:
    """Whether the problems of ``dataset`` whose kernels get layout hints were measured with them:
    every collection ran with the hints, or a hinted re-measurement (of them all, not only of those
    under --below-us) was merged in (`diode dataset merge --replace`)."""
    settings = collection_settings(dataset)
    return bool(settings) and (
        all(s.get("layout_hints") for s in settings)
        or any(
            s.get("command") == "remeasure" and s.get("layout_hinted_only") and s.get("below_us") is None
            for s in settings
        )
    )


def _led_already(dataset, below_us: float | None = None) -> bool:
    """Whether ``dataset``'s timings (of its problems under ``below_us`` microseconds, where given)
    have the fast collector's lead before each flush (timing.LEAD_US) or need none: every
    collection recorded a lead or was not the fast collector's (Inductor's own timings), or a
    re-measurement with the lead of all its problems, or of all those under at least ``below_us``
    (``--below-us``), was merged in (`diode dataset merge --replace`); not one of its hinted
    problems, of --only's or of one shard."""
    settings = collection_settings(dataset)

    def covers(s: dict) -> bool:
        done_below = s.get("below_us")
        return done_below is None or (below_us is not None and done_below >= below_us)

    return bool(settings) and (
        all(s.get("lead_us") or s.get("mode") != "fast" for s in settings)
        or any(
            s.get("command") == "remeasure"
            and s.get("lead_us")
            and not (s.get("layout_hinted_only") or s.get("only") or s.get("shard"))
            and covers(s)
            for s in settings
        )
    )


def ran_under(dataset, time_us: float) -> set[str]:
    """The problems (keys, as `diode dataset merge --replace` replaces them) of ``dataset`` whose
    fastest recorded time is under ``time_us``; a problem whose choices all failed has none."""
    from ..dataset_tools import best_configs
    from ..types import problem_key

    return {problem_key(p) for _, p, best, _, _ in best_configs(dataset) if best.time_us < time_us}


def _measurement_settings(path: str, dataset) -> dict:
    """How ``dataset`` (read from ``path``) was measured: the settings its collections recorded,
    which must agree."""
    from ..collection.fast_sweep import recorded_rotations
    from ..coverage import tf32_run
    from ..formats import DatasetFormatError

    recorded = []
    for s in collection_settings(dataset):
        # collections from before the TMA template was timed, or TF32 recorded, record no setting for it
        recorded.append(
            {
                **{k: s.get(k) for k in _MEASUREMENT_SETTINGS},
                "persistent_tma": bool(s.get("persistent_tma")),
                "exhaustive_rotations": recorded_rotations(s),
                "tf32": tf32_run(s),
            }
        )
    if not recorded:
        raise DatasetFormatError(
            path, "metadata.sources", "no collection settings recorded: nothing says how to measure again"
        )
    if any(r != recorded[0] for r in recorded):
        raise DatasetFormatError(
            path, "metadata.sources", "collections with different settings: remeasure each file of them apart"
        )
    return recorded[0]


def _cmd_remeasure(args: argparse.Namespace) -> int:
    from ..collection.kernel_spec import layout_hinted
    from ..dataset_io import load_dataset
    from ..types import problem_key

    # a file with nothing to measure again says so without importing torch or opening the device
    # (collect.sh remeasure-hinted asks every dataset file)
    inputs = {"input": [args.input], "--only": args.only or []}
    check_outputs(inputs, {"--output": _output_path(args.output, args.format)}, dataset_outputs=["--output"])
    if Path(args.input).is_dir():
        raise OptionError("input", f"{args.input} is a folder: remeasure reads one dataset file (its settings)")
    if args.below_us is not None and not args.below_us > 0:
        raise OptionError("--below-us", f"{args.below_us:g}: give a time in microseconds above 0")
    source = load_dataset(args.input)
    if args.layout_hinted and _hinted_already(source):
        print(f"remeasure {args.input}: its problems were measured with the layout hints; nothing to do")
        return 0
    if args.without_lead and _led_already(source, args.below_us):
        print(
            f"remeasure {args.input}: its problems were timed with the collector's lead (or by Inductor's own "
            "benchmark, which takes none); nothing to do"
        )
        return 0
    problems = [p for _, p, _ in source.problems()]
    if not problems:  # a collection's placeholder chunk, say, of shapes not yet measured
        print(f"remeasure {args.input}: it holds no problem; nothing to do")
        return 0
    # what the file's record says was measured again: --only or --below-us where they left a
    # problem out (without, the re-measurement is of all its problems)
    narrowed = {}
    if args.only:  # before the hints, which build (meta) tensors
        only = held_keys(args.only)
        kept = [p for p in problems if problem_key(p) in only]
        if not kept:
            print(f"remeasure {args.input}: none of its problems is in {' '.join(args.only)}; nothing to do")
            return 0
        if len(kept) < len(problems):
            narrowed["only"] = list(args.only)
        problems = kept
    if args.below_us is not None:
        short = ran_under(source, args.below_us)
        kept = [p for p in problems if problem_key(p) in short]
        if not kept:
            print(f"remeasure {args.input}: none of its problems ran under {args.below_us:g} us; nothing to do")
            return 0
        if len(kept) < len(problems):
            narrowed["below_us"] = args.below_us
        problems = kept
    if args.layout_hinted:
        problems = [p for p in problems if layout_hinted(p)]
        if not problems:
            which = f"problems in {' '.join(args.only)}" if args.only else f"{source.num_problems} problems"
            print(f"remeasure {args.input}: none of its {which} gets a layout hint; nothing to do")
            return 0
    # read once there is something to measure: a file of collections with different settings
    # that holds nothing to measure again is left alone, not an error
    settings = _measurement_settings(args.input, source)
    if args.dry_run:
        print(
            f"remeasure {args.input}: {len(problems)} of its {source.num_problems} problems to measure again "
            "(--dry-run: nothing measured)"
        )
        return 0
    _shard(args)  # the rest of _check_files (the outputs were checked above)
    _check_devices(args)
    from ..collection.sweep_state import check_measured_here
    from ..hardware import detect_hardware

    # measured again on the GPU that measured it: merged over the old timings, another GPU's would
    # stand beside them as a second device's
    check_measured_here(source, args.input, detect_hardware(args.device).device_name, args.device)
    from torch._inductor import config as inductor_config

    mode = "fast" if settings["mode"] == "fast" else "max-autotune"
    args.search_mode = mode
    if mode == "fast":
        args.exhaustive_sample, args.seed, args.reps = settings["exhaustive_sample"], settings["seed"], settings["reps"]
        args.exhaustive_rotations = settings["exhaustive_rotations"]
    else:
        args.search_space = settings["max_autotune_gemm_search_space"] or "DEFAULT"
        args.backends = settings["max_autotune_gemm_backends"] or "ATEN,TRITON"
    args.float32_matmul_precision = "high" if settings["tf32"] else "highest"
    # the persistent TMA template's configs were timed where the collection had Inductor offer them
    inductor_config.triton.enable_persistent_tma_matmul = bool(settings["persistent_tma"])
    print(
        f"remeasure {args.input}: {len(problems)} of its {source.num_problems} problems"
        + (" (those whose kernels get layout hints)" if args.layout_hinted else "")
        + (f" (those of {' '.join(args.only)})" if args.only else "")
        + (f" (those whose fastest recorded time is under {args.below_us:g} us)" if args.below_us is not None else "")
        + f", {mode} mode as recorded"
    )
    record = {"command": "remeasure", "source": str(args.input), "layout_hinted_only": args.layout_hinted, **narrowed}
    return _run(problems, args, record, fast_chunk_size=None)  # one file, as the input is


def _common(p: argparse.ArgumentParser) -> None:
    _output_options(p)
    _measurement_options(p)


def _output_options(p: argparse.ArgumentParser) -> None:
    """Where and on what a collection writes and runs."""
    p.add_argument("--output", "-o", required=True, help="dataset file to write (resumed if it exists)")
    p.add_argument("--format", choices=["json", "msgpack"], help="file format (default: from the suffix)")
    p.add_argument(
        "--workers",
        type=positive_int,
        default=max(1, min(16, (os.cpu_count() or 2) - 1)),
        help="fast mode: parallel compile processes",
    )
    p.add_argument(
        "--compile-timeout",
        type=positive_float,
        default=DEFAULT_COMPILE_TIMEOUT_S,
        metavar="S",
        help="fast mode: seconds a compile worker may spend on one kernel variant; past it the variant "
        f"is recorded as failed and the workers are replaced (default {DEFAULT_COMPILE_TIMEOUT_S:g})",
    )
    p.add_argument("--device", default="cuda", help="device to measure on (default cuda)")
    p.add_argument(
        "--devices",
        nargs="+",
        metavar="DEV",
        help="several devices (e.g. cuda:0 cuda:1): one worker process each, every N-th shape, "
        "each writing <output stem>_shardI; join them with `diode dataset merge` "
        "(a torchrun launch shards by RANK/WORLD_SIZE the same way)",
    )
    p.add_argument("--shard", metavar="I/N", help="measure only shapes I, I+N, I+2N, ... into <output stem>_shardI")
    p.add_argument(
        "--chunk-size",
        type=positive_int,
        default=None,
        help="write every N shapes to their own file <stem>_chunkNNNN<suffix> (fast mode: 25)",
    )


def _measurement_options(p: argparse.ArgumentParser) -> None:
    """How a collection measures (what `diode remeasure` reads from the file instead)."""
    p.add_argument(
        "--search-space",
        choices=["DEFAULT", "EXHAUSTIVE"],
        default="DEFAULT",
        help="Inductor's Triton config space to benchmark (default DEFAULT)",
    )
    p.add_argument(
        "--search-mode",
        choices=["max-autotune", "fast"],
        default="max-autotune",
        help="max-autotune: each shape compiled by Inductor, which benchmarks its choices; fast: "
        "Inductor's kernels compiled once per config and timed on every shape (GPU only), "
        "ATen + DEFAULT + a sample of EXHAUSTIVE",
    )
    p.add_argument(
        "--exhaustive-sample",
        type=int_at_least(-1),
        default=350,
        help="fast mode: EXHAUSTIVE configs per shape besides ATen and DEFAULT (-1: all; default 350)",
    )
    p.add_argument(
        "--exhaustive-rotations",
        type=int_at_least(0),
        default=1,
        help="fast mode: draws of the EXHAUSTIVE sample, each problem taking one by a hash of it (1: one "
        "sample for all, whose kernels compile once for problems specialised alike; R: about R times the "
        "configs timed across the run; 0: a draw per problem; default 1)",
    )
    p.add_argument("--reps", type=positive_int, default=10, help="fast mode: timed repetitions per choice (default 10)")
    p.add_argument(
        "--backends",
        type=backends,
        default="ATEN,TRITON",
        help=f"max_autotune_gemm_backends, comma-separated among {','.join(BACKENDS)} (default ATEN,TRITON)",
    )
    p.add_argument(
        "--float32-matmul-precision",
        choices=["highest", "high"],
        help="torch.set_float32_matmul_precision for the run: 'high' times fp32 GEMMs with TF32 "
        "(ATen and the Triton configs' ALLOW_TF32), 'highest' without (default: as the process is)",
    )


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
        "factor below 16), which the fast collector timed with narrower memory accesses before the hints; "
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
    _output_options(p)
    p.set_defaults(func=_cmd_remeasure)

"""What the collection commands share: the output file, shards and devices, and the sweep that
measures (the fast collector or Inductor's own autotuning, :mod:`torch_diode.collection`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from ..collection.sweep_state import DEFAULT_COMPILE_TIMEOUT_S
from ..errors import OptionError
from ..formats import DATASET_SUFFIXES
from ..types import Problem
from .common import check_outputs, int_at_least, positive_float, positive_int


def output_path(output: str, fmt: str | None) -> str:
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


def shard_of(args: argparse.Namespace) -> tuple[int, int] | None:
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
    from ..collection.sweep_state import shard_path

    output = output_path(args.output, args.format)
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


def constant_ints(text: str) -> tuple[str, ...]:
    """--constant-ints: "none", "all" (every size and stride) or comma-separated names of the
    kernels' ints (collection.kernel_spec.MM_INTS, BMM_INTS), in their order there (argparse type)."""
    from ..collection.kernel_spec import ALL_INTS as known

    word = text.strip().lower()
    if word in ("none", "all"):
        return () if word == "none" else known
    names = {w.strip() for w in text.split(",")}
    unknown = sorted(names - set(known))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown int {', '.join(repr(n) for n in unknown) or repr(text)}; expected none, all or a "
            f"comma-separated list of {', '.join(known)}"
        )
    return tuple(n for n in known if n in names)  # in one order, whatever the order given


def _same_device(device: str) -> str:
    """``cuda`` and ``cuda:0`` name one device."""
    return "cuda:0" if device.strip() == "cuda" else device.strip()


def check_devices(args: argparse.Namespace) -> None:
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


def check_constant_ints(args: argparse.Namespace, why: str = "(--search-mode fast)") -> None:
    """--constant-ints only where the fast collector measures: Inductor compiles its own kernels."""
    if getattr(args, "constant_ints", ()) and args.search_mode != "fast":
        raise OptionError("--constant-ints", f"fast mode only {why}: Inductor compiles its own kernels")


def check_files(args: argparse.Namespace, inputs: dict) -> str:
    """The output file (see output_path), checked against the command's inputs and options."""
    check_constant_ints(args)
    output = output_path(args.output, args.format)
    check_outputs(inputs, {"--output": output}, dataset_outputs=["--output"])
    shard_of(args)  # a bad --shard or torchrun environment fails here, before anything is drawn
    check_devices(args)
    return output


def measure(
    problems: Sequence[Problem], args: argparse.Namespace, record: dict, fast_chunk_size: int | None = 25
) -> int:
    """Measures ``problems`` as ``args`` say; fast mode writes chunks of ``fast_chunk_size``
    problems unless --chunk-size says otherwise (None: one file)."""
    from ..collection.inductor_sweep import sweep_inductor
    from ..collection.sweep_state import SweepSummary, chunked, shard_path
    from ..inductor.config_space import tf32_enabled

    if args.devices:
        return _spawn_devices(args)
    if args.float32_matmul_precision:
        import torch

        torch.set_float32_matmul_precision(args.float32_matmul_precision)
    record = {**record, "tf32": tf32_enabled()}  # fp32 problems ran TF32 kernels (diode dataset coverage reads it)
    output = output_path(args.output, args.format)
    shard = shard_of(args)
    if shard is not None:
        index, count = shard
        problems = list(problems)[index::count]
        output = shard_path(output, index)
        record = {**record, "shard": f"{index}/{count}", "device": args.device}
    if args.search_mode == "fast":
        from ..collection import kernel_spec
        from ..collection.fast_sweep import FastSweep

        kernel_spec.CONSTANT_INTS = getattr(args, "constant_ints", ())

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
        total.add(
            sweep_inductor(
                chunk,
                path,
                device=args.device,
                search_space=args.search_space,
                backends=args.backends,
                settings_record=record,
            )
        )
    print(f"summary: {len(problems)} shapes: {total.line()} -> {output}")
    return 0


def output_options(p: argparse.ArgumentParser) -> None:
    """Where and on what a collection writes and runs."""
    p.add_argument("--output", "-o", required=True, help="dataset file to write (resumed if it exists)")
    p.add_argument("--format", choices=["json", "msgpack"], help="file format (default: from the suffix)")
    p.add_argument(
        "--workers",
        type=positive_int,
        default=max(1, min(16, (os.cpu_count() or 2) - 1)),
        help="fast mode: parallel compile processes (default: the CPUs less one, at most 16)",
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


def constant_ints_option(p: argparse.ArgumentParser, what: str, dest: str = "constant_ints", default=()) -> None:
    """--constant-ints (:func:`constant_ints`), ``what`` it does first in its help."""
    p.add_argument(
        "--constant-ints",
        type=constant_ints,
        dest=dest,
        default=default,
        metavar="NAMES",
        help=f"{what}: all (every size and stride), none, or the ints named, comma-separated (M, N, K, BATCH, "
        "stride_am, ...); each distinct value compiles a kernel of its own (docs/data.md)",
    )


def measurement_options(p: argparse.ArgumentParser) -> None:
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
    constant_ints_option(
        p, "fast mode: the kernels' ints to hold as compile-time constants, as Inductor's kernels do (default none)"
    )
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

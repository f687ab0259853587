"""`diode sample`: the problems a new GPU measures first (torch_diode.collection.design)."""

from __future__ import annotations

import argparse
from collections import Counter

from ..errors import UserError
from .common import add_force, check_outputs, positive_int, seed

# the fast collector's settings for a sample: every ATen choice, Inductor's DEFAULT configs and 48
# configs of its EXHAUSTIVE space drawn per problem, as the training data's sampled parts (--workers
# is left to the collector's default, which follows the CPUs of the machine it runs on)
COLLECT_OPTIONS = "--search-mode fast --exhaustive-sample 48 --exhaustive-rotations 0 --reps 6"


def _cmd_sample(args: argparse.Namespace) -> int:
    from ..collection.design import candidates, design, shapeset_bytes
    from ..dataset_io import load_each
    from ..fileio import atomic_write_bytes
    from ..training.data import one_device

    check_outputs(
        {f"DATA[{i}]": p for i, p in enumerate(args.data)},
        {"--output": args.output},
        json_outputs=["--output"],
        force=args.force,
    )
    datasets = list(load_each(args.data))  # file by file: a file's settings say whether it ran with TF32
    device = one_device(
        (hw for d in datasets for hw, _, _ in d.problems()),
        f"DATA ({', '.join(args.data)})",
        "give the files of one GPU",
    )
    pool = candidates(datasets)
    if not pool:
        raise UserError(
            f"DATA ({', '.join(args.data)}): no problem to sample: none measured without TF32 with two or more "
            "successful timings outside the held-out shapesets"
        )
    sample = design(pool, args.num_problems, args.seed)
    name = args.name or f"sample-{len(sample)}"
    atomic_write_bytes(args.output, shapeset_bytes(sample, name, " ".join(args.data)))
    ops = Counter(c.problem.op for c in sample)
    dtypes = Counter(c.problem.dtype_a for c in sample)
    cells = {c for cand in sample for c in cand.cells}
    print(
        f"sample: {len(sample)} of {len(pool)} problems measured on {device} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(ops.items()))}; "
        f"{', '.join(f'{k} {v}' for k, v in sorted(dtypes.items()))}; "
        f"{sum(bool(c.problem.misaligned_operands) for c in sample)} misaligned), "
        f"{len(cells)} of the pool's {len({c for cand in pool for c in cand.cells})} coverage cells -> {args.output}"
    )
    print(
        f"measure it on the new GPU: diode collect-shapeset --shapeset {args.output} {COLLECT_OPTIONS} "
        "-o NEW.msgpack.gz"
    )
    return 0


def add_sample_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample",
        help="choose the problems a new GPU measures first",
        description="Choose the N problems of a measured GPU's data that teach a model the most about another "
        "GPU (every coverage cell first, close races between cuBLAS and compiled kernels, spread over sizes; "
        "torch_diode.collection.design) and write them as a shapeset for `diode collect-shapeset`.",
    )
    p.add_argument("data", nargs="+", metavar="DATA", help="dataset files or folders measured on one GPU")
    p.add_argument("--num-problems", "-n", type=positive_int, default=100, help="problems to choose (default 100)")
    p.add_argument("--output", "-o", required=True, metavar="PATH", help="the shapeset (.json) to write")
    p.add_argument("--name", help="the shapeset's name (default sample-N)")
    p.add_argument("--seed", type=seed, default=0, help="breaks ties between equally good problems (default 0)")
    add_force(p)
    p.set_defaults(func=_cmd_sample)

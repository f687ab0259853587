"""How much of the EXHAUSTIVE list do a collected part's problems time between them, and at what
compile cost? (CPU, replays the problems of collected files)

`diode collect --search-mode fast --exhaustive-sample K` times K configs of Inductor's EXHAUSTIVE
list per problem, drawn by a seeded hash. With one draw for the whole run (``--exhaustive-rotations
1``, what the shipped data was collected with) every problem takes the same K configs where their
lists agree, so the run compiles each config's kernel once for all problems that specialise it
alike, and the other configs of the list are never timed on such problems: the model ranks them at
inference from what it learnt of their neighbours. With R rotations each problem takes one of R
draws; with 0, a draw of its own. For each part (the files of one name before ``_chunk``) and each
R this counts the kernel variants the run would compile
(:func:`torch_diode.collection.kernel_compiler.variant_key`; minutes at benchmarks.studies.variant_budget's
compile rate) and how the part's problems cover their lists: of every
(problem, EXHAUSTIVE config of its list) pair, the share whose config the part times in fewer than
2% of the problems whose list holds it ("rare"), and the configs timed by no problem at all.

    python -m benchmarks.studies.sample_rotation data/h200/train/h200_v2_attn_pv4_*.msgpack.gz \\
        data/h200/train/h200_v2_attn_qk4_*.msgpack.gz data/h200/train/h200_v2_odd1_*.msgpack.gz \\
        data/h200/train/h200_v2_layouts_*.msgpack.gz --out benchmarks/results/sample_rotation_cpu.json
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.common import config_design, cpu_report_header, first_collection_settings, write_json
from benchmarks.studies.variant_budget import COMPILE_KERNELS_PER_S
from torch_diode.collection.fast_sweep import choices_for
from torch_diode.collection.kernel_compiler import variant_key
from torch_diode.dataset_io import load_dataset
from torch_diode.inductor.config_space import triton_configs

ROTATIONS = (1, 4, 16, 0)  # 0: a draw of its own for every problem
RARE = 0.02


def part_rows(name: str, problems: list, sample: int, seed: int, rotations: tuple[int, ...]) -> list[dict]:
    lists = [{config_design(c) for c in triton_configs(p, "EXHAUSTIVE")} for p in problems]
    holders = Counter(k for keys in lists for k in keys)
    rows = []
    for r in rotations:
        chosen = [[c for c in choices_for(p, sample, seed, rotations=r) if c.is_tiled] for p in problems]
        variants = len({variant_key(p, c) for p, cs in zip(problems, chosen) for c in cs})
        timed = Counter(k for cs in chosen for k in {config_design(c) for c in cs})
        pairs = [(k, timed[k] / holders[k]) for keys in lists for k in keys]
        rows.append(
            {
                "part": name,
                "problems": len(problems),
                "exhaustive_sample": sample,
                "rotations": r,
                "kernel_variants": variants,
                "compile_minutes": variants / COMPILE_KERNELS_PER_S / 60,
                "list_configs": len(holders),
                "list_configs_never_timed": sum(timed[k] == 0 for k in holders),
                "rare_pair_share": sum(share < RARE for _, share in pairs) / len(pairs),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="collected files; the files of one part name are one part")
    parser.add_argument("--rotations", type=int, nargs="+", default=list(ROTATIONS))
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    parts: dict[str, list] = defaultdict(list)
    settings: dict[str, tuple[int, int]] = {}
    for path in args.paths:
        name = re.sub(r"_chunk\d+$", "", Path(path).name.split(".")[0])
        dataset = load_dataset(path)
        recorded = first_collection_settings(dataset)
        sample, seed = int(recorded.get("exhaustive_sample", -1)), int(recorded.get("seed", 0))
        if sample < 0:
            raise SystemExit(f"{path}: no exhaustive_sample in its settings (not a fast-path collection)")
        if settings.setdefault(name, (sample, seed)) != (sample, seed):
            raise SystemExit(f"{path}: its part {name} was collected with other settings {settings[name]}")
        parts[name].extend(p for _, p, _ in dataset.problems())
    rows = []
    print(f"{'part':22s} {'problems':>8s} {'K':>4s} {'R':>3s} {'variants':>9s} {'compile min':>11s} "
          f"{'never timed':>11s} {'rare pairs':>10s}")  # fmt: skip
    for name, problems in parts.items():
        for row in part_rows(name, problems, *settings[name], tuple(args.rotations)):
            rows.append(row)
            print(
                f"{name:22s} {row['problems']:8d} {row['exhaustive_sample']:4d} {row['rotations']:3d} "
                f"{row['kernel_variants']:9d} {row['compile_minutes']:11.1f} "
                f"{row['list_configs_never_timed']:5d}/{row['list_configs']:<5d} {row['rare_pair_share']:10.1%}"
            )
    report = cpu_report_header("CPU (counting only)")
    report |= {"compile_kernels_per_s_h100": COMPILE_KERNELS_PER_S, "rare_share": RARE, "rows": rows}
    write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

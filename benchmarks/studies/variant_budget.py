"""How many kernels would the fast path compile for a dataset design? (CPU, no GPU needed)

Counts distinct kernel variants (what makes Triton compile a new binary: config, dtypes,
constexprs, the classes of the ints it specialises on) for problems drawn like `diode collect`
draws them, with sizes specialised or not. Divided by the compile rate that compile_reuse.py
measures (benchmarks/results/compile_reuse_h100.json), this gives the compile minutes.

    python -m benchmarks.studies.variant_budget --out benchmarks/results/variant_budget_cpu.json
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.common import cpu_report_header, write_json
from torch_diode.collection.fast_sweep import choices_for
from torch_diode.collection.kernel_compiler import variant_key
from torch_diode.collection.shapes import ShapeSpec, random_problems

COMPILE_KERNELS_PER_S = 17.0  # measured on the H100 machine with 16 threads

DESIGNS = {
    "as run (log-normal, 70% aligned to 64, 20% transposed)": dict(
        alignment=64, aligned_fraction=0.7, transpose_probability=0.2
    ),
    "all sizes multiples of 64, 20% transposed": dict(alignment=64, aligned_fraction=1.0, transpose_probability=0.2),
    "all sizes multiples of 64, no transposes": dict(alignment=64, aligned_fraction=1.0, transpose_probability=0.0),
    "unaligned log-normal, no transposes": dict(alignment=1, aligned_fraction=0.0, transpose_probability=0.0),
    "class: sizes multiples of 256 in 256..4096, no transposes": dict(
        alignment=256, aligned_fraction=1.0, transpose_probability=0.0, min_size=256
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--num-shapes", type=int, default=450)
    parser.add_argument("--exhaustive-sample", type=int, default=350)
    args = parser.parse_args()
    rows = []
    print(f"{args.num_shapes} problems, ATen + DEFAULT + {args.exhaustive_sample} EXHAUSTIVE each")
    print(f"{'design':58s} {'spec':>5s} {'variants':>9s} {'per problem':>11s} {'compile min':>11s}")
    for name, extra in DESIGNS.items():
        extra = {"min_size": 16, **extra}
        spec = ShapeSpec(
            num_shapes=args.num_shapes,
            log_normal=True,
            max_size=4096,
            ops=("mm", "addmm", "bmm"),
            dtypes=("float16", "bfloat16", "float32"),
            max_batch=32,
            **extra,
        )
        problems = random_problems(spec, seed=1)
        pairs = [(p, c) for p in problems for c in choices_for(p, args.exhaustive_sample, 0) if c.is_tiled]
        for specialise in (True, False):
            variants = len({variant_key(p, c, specialise) for p, c in pairs})
            row = {
                "design": name,
                "specialize_sizes": specialise,
                "variants": variants,
                "timings": len(pairs),
                "variants_per_problem": variants / len(problems),
                "compile_minutes": variants / COMPILE_KERNELS_PER_S / 60,
            }
            rows.append(row)
            print(
                f"{name:58s} {str(specialise):>5s} {variants:9d} "
                f"{row['variants_per_problem']:11.1f} {row['compile_minutes']:11.1f}"
            )
    report = cpu_report_header("CPU (counting only)") | {"compile_kernels_per_s_h100": COMPILE_KERNELS_PER_S}
    write_json(args.out, report | {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

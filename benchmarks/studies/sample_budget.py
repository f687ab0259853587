"""How many sampled EXHAUSTIVE configs does a collected problem need? (CPU, replays H100 data)

`diode collect --search-mode fast` times ATen + Inductor's DEFAULT list + a sample of the
EXHAUSTIVE list per problem. A smaller sample compiles fewer kernels (more problems per GPU hour)
but may miss the problem's best kernel. This replays datasets collected with a large sample:
for each smaller sample size it keeps the configs that `choices_for` would have drawn (the same
seeded order, so a smaller sample is a prefix of the larger one) and reports how much slower the
best kept choice is than the best measured one.

    python -m benchmarks.studies.sample_budget data/h100/train/h100_mm_chunk000*.msgpack.gz \
        data/h100/train/h100_bmm_chunk000*.msgpack.gz --out benchmarks/results/sample_budget_cpu.json
"""

from __future__ import annotations

import argparse
import math

from benchmarks.common import cpu_report_header, first_collection_settings, write_json
from torch_diode.collection.fast_sweep import choices_for
from torch_diode.collection.provenance import recorded_rotations
from torch_diode.dataset_io import load_dataset

SAMPLES = (0, 24, 48, 100, 150, 200, 320)


def replay(paths: list[str], samples: tuple[int, ...]) -> dict:
    ratios: dict[int, list[float]] = {k: [] for k in samples}
    files = []
    for path in paths:
        dataset = load_dataset(path)
        settings = first_collection_settings(dataset)
        seed, collected = int(settings.get("seed", 0)), int(settings.get("exhaustive_sample", -1))
        rotations = recorded_rotations(settings)
        files.append({"path": path, "seed": seed, "exhaustive_sample": collected, "exhaustive_rotations": rotations})
        for _hardware, problem, timed in dataset.problems():
            if problem.dtype_a == "float32":
                continue  # fp32 configs depend on the TF32 setting of the run
            times = {t.config: t.time_us for t in timed if not t.failed}
            if not times:
                continue
            best = min(times.values())
            for k in samples:
                if k > collected >= 0:
                    continue
                kept = [times[c] for c in choices_for(problem, k, seed, rotations=rotations) if c in times]
                ratios[k].append(min(kept) / best if kept else math.inf)
    rows = []
    for k in samples:
        r = [x for x in ratios[k] if math.isfinite(x)]
        if not r:
            continue
        rows.append(
            {
                "exhaustive_sample": k,
                "problems": len(r),
                "best_kept_over_best_geomean": math.exp(sum(math.log(x) for x in r) / len(r)),
                "best_kept_over_best_worst": max(r),
                "fraction_best_within_2pct": sum(x <= 1.02 for x in r) / len(r),
            }
        )
    return {"files": files, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", help="dataset files collected with a large --exhaustive-sample")
    parser.add_argument("--samples", type=int, nargs="+", default=list(SAMPLES))
    parser.add_argument("--out", help="write the JSON report here")
    args = parser.parse_args()
    report = replay(args.datasets, tuple(args.samples))
    report = cpu_report_header("CPU (replays H100 timings)") | report
    print(f"{'sample':>7} {'problems':>9} {'geomean':>9} {'worst':>8} {'within 2%':>10}")
    for row in report["rows"]:
        print(
            f"{row['exhaustive_sample']:>7} {row['problems']:>9} {row['best_kept_over_best_geomean']:>9.4f} "
            f"{row['best_kept_over_best_worst']:>8.3f} {row['fraction_best_within_2pct']:>10.3f}"
        )
    if args.out:
        write_json(args.out, report)


if __name__ == "__main__":
    main()

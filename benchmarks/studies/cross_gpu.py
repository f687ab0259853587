"""How far one GPU's measurements carry to another (CPU, replays data measured on both GPUs)

For every problem measured on both GPUs: the time on the second GPU of the config fastest on
the first, over the second GPU's best (by op, unaligned problems apart), how much faster the
second GPU's best is, and the problems whose cuBLAS (best ATen time over the best compiled
kernel's: Triton configs, decompose_k) changed most between the two.

    python -m benchmarks.studies.cross_gpu --first data/h100/train data/h100/realmodels \
        --second data/h200/train data/h200/realmodels --out benchmarks/results/cross_gpu_h100_h200_cpu.json
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from datetime import datetime, timezone

from benchmarks.common import command_line, geomean, write_json
from torch_diode.dataset_io import load_datasets
from torch_diode.features import is_aten
from torch_diode.types import problem_key


def _measured(paths: list[str]) -> tuple[str, dict]:
    dataset = load_datasets(paths)
    devices = sorted({hw.device_name for hw, _, _ in dataset.problems()})
    times = {
        problem_key(p): (p, {t.config: t.time_us for t in timings if not t.failed})
        for _, p, timings in dataset.problems()
    }
    return ", ".join(devices), times


def _aten_over_triton(times: dict) -> float | None:
    """Best ATen (cuBLAS) time over the best compiled kernel's (Triton configs, decompose_k)."""
    aten = [t for c, t in times.items() if is_aten(c)]
    compiled = [t for c, t in times.items() if not is_aten(c)]
    return min(aten) / min(compiled) if aten and compiled else None


def compare(first: list[str], second: list[str], top: int = 5) -> dict:
    first_device, a = _measured(first)
    second_device, b = _measured(second)
    carried, speedup, shifts = defaultdict(list), [], []
    for key, (problem, times_b) in b.items():
        if key not in a:
            continue
        times_a = a[key][1]
        common = [c for c in times_a if c in times_b]
        if not common:
            continue
        best_a, best_b = min(common, key=times_a.get), min(common, key=times_b.get)
        group = "unaligned" if problem.misaligned_operands else problem.op
        carried[group].append(times_b[best_a] / times_b[best_b])
        speedup.append(times_a[best_a] / times_b[best_b])
        ratio_a, ratio_b = _aten_over_triton(times_a), _aten_over_triton(times_b)
        if ratio_a and ratio_b:
            shifts.append((ratio_b / ratio_a, problem.short(), ratio_a, ratio_b))
    shifts.sort(reverse=True)
    return {
        "first": {"device": first_device, "data": first},
        "second": {"device": second_device, "data": second},
        "num_problems": len(speedup),
        "first_best_on_second_over_second_best": {
            g: {"problems": len(v), "geomean": geomean(v), "worst": max(v)} for g, v in sorted(carried.items())
        },
        "first_best_over_second_best_geomean": geomean(speedup),
        "largest_cublas_shifts": [
            {"problem": s, "aten_over_triton_first": ra, "aten_over_triton_second": rb} for _, s, ra, rb in shifts[:top]
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", nargs="+", required=True, help="dataset files or folders of the first GPU")
    parser.add_argument("--second", nargs="+", required=True, help="the same problems measured on the second GPU")
    parser.add_argument("--out", help="write the JSON report here")
    args = parser.parse_args()
    report = {
        "command": command_line(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": "CPU (replays data measured on both GPUs)",
        **compare(args.first, args.second),
    }
    first, second = report["first"]["device"], report["second"]["device"]
    print(f"{report['num_problems']} problems measured on {first} and {second}")
    print("  the first GPU's best config on the second, over the second's best (geomean, worst):")
    for group, row in report["first_best_on_second_over_second_best"].items():
        print(f"  {group:10s} {row['problems']:4d}  {row['geomean']:.4f}  {row['worst']:.3f}")
    speedup = report["first_best_over_second_best_geomean"]
    print(f"  first GPU's best time / second GPU's best time (geomean): {speedup:.3f}")
    for row in report["largest_cublas_shifts"]:
        first_ratio, second_ratio = row["aten_over_triton_first"], row["aten_over_triton_second"]
        print(f"  cuBLAS / best compiled {first_ratio:.2f}x -> {second_ratio:.2f}x  {row['problem']}")
    if args.out:
        write_json(args.out, report)


if __name__ == "__main__":
    main()

"""How far below cuBLAS can any kernel selection go? (CPU, replays measured data)

For every problem of the data: the fastest measured kernel over the fastest ATen (cuBLAS) choice,
the time a selection that always picked the best measured kernel would run in, as a fraction of
default mode's. Geomean by op family (nn.Linear-style mm/addmm, attention-style bmm/baddbmm) and
by rows (decode: M <= 16; the others), so that a runtime target over a set of GEMMs can be set
against what any selection of these candidates could reach on them.

    python -m benchmarks.studies.oracle_gain --data data/h100/realmodels data/h200/realmodels \
        --out benchmarks/results/oracle_gain_cpu.json
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from benchmarks.common import cpu_report_header, geomean, write_json
from torch_diode.dataset_io import load_datasets
from torch_diode.features import is_aten

DECODE_ROWS = 16  # M at or under this: a decode step's rows (a batch of sequences, one token each)


def best_over_cublas(path: str) -> dict:
    """Geomean of best measured / best ATen per op family and rows, over ``path``'s problems."""
    dataset = load_datasets([path])
    groups: dict[str, list[float]] = defaultdict(list)
    for _, problem, timings in dataset.problems():
        ok = [t for t in timings if not t.failed]
        aten = [t.time_us for t in ok if is_aten(t.config)]
        if not aten:
            continue
        ratio = min(t.time_us for t in ok) / min(aten)
        family = "mm/addmm" if problem.op in ("mm", "addmm") else "bmm/baddbmm"
        rows = "decode" if problem.M <= DECODE_ROWS else "other rows"
        for group in ("all", family, f"{family}, {rows}"):
            groups[group].append(ratio)
    devices = sorted({hw.device_name for hw, _, _ in dataset.problems()})
    return {
        "data": path,
        "device": ", ".join(devices),
        "best_over_cublas": {
            g: {"problems": len(v), "geomean": geomean(v), "best": min(v)} for g, v in sorted(groups.items())
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", required=True, help="dataset folders or files, one report each")
    parser.add_argument("--out", help="write the JSON report here")
    args = parser.parse_args()
    report = {**cpu_report_header("CPU (replays measured data)"), "reports": [best_over_cublas(p) for p in args.data]}
    for part in report["reports"]:
        print(f"{part['data']} ({part['device']}): best measured / cuBLAS, geomean")
        for group, row in part["best_over_cublas"].items():
            print(f"  {group:28s} {row['problems']:4d}  {row['geomean']:.3f}")
    if args.out:
        write_json(args.out, report)


if __name__ == "__main__":
    main()

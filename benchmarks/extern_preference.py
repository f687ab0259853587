"""(CPU) What the handler's extern preference does on measured data.

For every problem of a dataset, the pick the handler would make (torch_diode.selection, the same
code) for several values of ``extern_preference``, judged by the measured times: top-1 normalised
performance (geomean and worst), and how often the pick is ATen/cuBLAS (no kernel to compile).

    python benchmarks/extern_preference.py --out benchmarks/results/extern_preference_cpu.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from torch_diode.predict import load_model, predict_log_time_us
from torch_diode.selection import selection_order
from torch_diode.types import load_datasets

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="NVIDIA-H100-matmul")
    parser.add_argument("--data", nargs="+", default=[str(ROOT / "data" / "h100" / "validation")])
    parser.add_argument("--preferences", type=float, nargs="+", default=[1.0, 1.05, 1.1, 1.2, 1.3])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    model = load_model(args.model)
    problems = []
    for hardware, problem, timings in load_datasets(args.data).problems():
        ok = [t for t in timings if not t.failed]
        predicted = predict_log_time_us(model, problem, [t.config for t in ok], hardware)
        problems.append((predicted, np.array([t.time_us for t in ok]), np.array([not t.config.is_tiled for t in ok])))
    rows = []
    for preference in args.preferences:
        perf, extern_picks = [], 0
        for predicted, measured, extern in problems:
            pick = selection_order(predicted, extern, preference)[0]
            extern_picks += bool(extern[pick])
            perf.append(measured.min() / measured[pick])
        perf = np.array(perf)
        rows.append({"extern_preference": preference, "top1_perf_geomean": math.exp(np.log(perf).mean()),
                     "worst_top1_slowdown": float(1 / perf.min()), "extern_picks": extern_picks})
    measured_best_extern = sum(bool(e[np.argmin(m)]) for _, m, e in problems)
    report = {"command": " ".join(["python", *sys.argv]), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": "CPU (predictions and measured H100 data only)", "model": args.model, "data": args.data,
              "problems": len(problems), "extern_measured_best": measured_best_extern, "rows": rows}
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"{len(problems)} problems; ATen/cuBLAS measured fastest on {measured_best_extern}")
    print(f"{'preference':>10s} {'top-1 perf':>10s} {'worst':>7s} {'ATen picks':>10s}")
    for r in rows:
        print(f"{r['extern_preference']:10.2f} {r['top1_perf_geomean']:10.4f} {r['worst_top1_slowdown']:7.3f} {r['extern_picks']:10d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

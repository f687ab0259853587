"""Which timing method reproduces Inductor's own benchmark of its mm kernels? (one GPU run)

For a few shapes: Inductor (max-autotune, DEFAULT configs) benchmarks its generated kernels,
recorded by torch_diode.collect; then the fast path's kernels for the same configs are timed
three ways: (l2) L2-sized flush + events around one launch (Inductor's method), (big) a 256 MB
flush before each launch, after the collector's lead of GPU time (timing.LEAD_US: the host's
launch overhead lands behind the flush), (graph) a CUDA graph of one launch, replayed after each
L2-sized flush. Also measures the first-launch cost per kernel in the
main process after the workers' precompile (a recompile shows up as hundreds of ms).

    python -m benchmarks.studies.timing_methods --out $OUT/timing_methods_h100.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import report_header, spearman, write_json
from torch_diode.collection import collect
from torch_diode.collection.fast_sweep import FastSweep
from torch_diode.collection.inductor_sweep import compile_and_run, inductor_settings
from torch_diode.collection.kernel_compiler import precompile
from torch_diode.collection.operands import layout_tensors
from torch_diode.collection.timing import _queue, hardware_l2_bytes
from torch_diode.collection.triton_mm import make_launcher
from torch_diode.dataset_io import load_dataset
from torch_diode.types import Problem

SHAPES = [
    Problem("mm", 1, 1000, 700, 1024, "float16", "float16", "float16", transpose_b=True),
    Problem("mm", 1, 1024, 4096, 2048, "float16", "float16", "float16"),
    Problem("mm", 1, 16, 4096, 4096, "bfloat16", "bfloat16", "bfloat16"),
]


def events_time(fn, flush, reps: int, lead_us: float | None = None) -> float:
    pairs = _queue(fn, reps, flush, lead_us)  # the fast path's own timing loop (its lead: lead_us None)
    torch.cuda.synchronize()
    return min(s.elapsed_time(e) for s, e in pairs) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--specialize-sizes", action="store_true", help="kernels specialised on M, N, K")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    from torch_diode.collection import kernel_spec

    kernel_spec.SPECIALIZE_SIZES = args.specialize_sizes
    report = {
        **report_header(),
        "shapes": [],
    }
    for problem in SHAPES:
        with collect(tmp / "ind.json"):
            compile_and_run(problem, "cuda", inductor_settings("DEFAULT", "ATEN,TRITON"))
    print("TRITON_CACHE_DIR in main after Inductor:", os.environ.get("TRITON_CACHE_DIR"), flush=True)
    recorded = list(load_dataset(tmp / "ind.json").problems())
    pairs = [(p, t.config) for _, p, ts in recorded for t in ts if t.config.is_tiled]
    t0 = time.perf_counter()
    precompile(pairs, FastSweep().workers, progress=False)
    print(f"precompile {len(pairs)} pairs: {time.perf_counter() - t0:.1f} s", flush=True)
    l2 = torch.empty(hardware_l2_bytes() // 4, dtype=torch.int32, device="cuda")
    big = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
    for _, problem, timings in recorded:
        a, b, out, bias = layout_tensors(problem, "cuda")
        rows = []
        for t in timings:
            if not t.config.is_tiled or t.failed:
                continue
            fn = make_launcher(a, b, out, bias, t.config)
            t1 = time.perf_counter()
            try:
                fn()
                torch.cuda.synchronize()
            except Exception as e:
                print("launch failed", t.config.short(), e)
                continue
            first_ms = (time.perf_counter() - t1) * 1000
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn()
            rows.append(
                {
                    "config": t.config.short(),
                    "inductor_us": t.time_us,
                    "first_launch_ms": first_ms,
                    "l2_us": events_time(fn, l2, args.reps, lead_us=0.0),
                    "big_us": events_time(fn, big, args.reps),
                    "graph_us": events_time(graph.replay, l2, args.reps, lead_us=0.0),
                }
            )
        ind = np.array([r["inductor_us"] for r in rows])
        summary = {
            "problem": problem.short(),
            "configs": len(rows),
            "first_launch_ms_median": float(np.median([r["first_launch_ms"] for r in rows])),
        }
        for m in ("l2", "big", "graph"):
            v = np.array([r[f"{m}_us"] for r in rows])
            summary[m] = {
                "spearman": spearman(ind, v),
                "median_abs_rel_diff": float(np.median(np.abs(v - ind) / ind)),
                "median_ratio": float(np.median(v / ind)),
            }
        report["shapes"].append({**summary, "rows": rows})
        write_json(args.out, report)
        print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

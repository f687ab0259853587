"""Inductor's two ATen choices for addmm, timed the training data's way and the way a graph runs.

Inductor offers ``aten::addmm`` (the bias expanded to M x N) and ``aten::bias_addmm`` (the 1-D
bias, cuBLASLt's bias epilogue). The shipped H100 data has bias_addmm faster on 93% of its addmm
problems, yet end to end diode's bias_addmm picks ran slower than the addmm of stock max-autotune
(ResNet-50 fc) and default mode (the MLP). For each shape, on the GPU, both choices are timed
three ways with the fast path's own launchers (``untiled_launcher``, as Inductor calls them):
(label) the fast path's method: cache flush, events around one launch, minimum;
(replay) ``triton.testing.do_bench_cudagraph`` median: what a compiled graph's kernel costs;
(loop) ``triton.testing.do_bench`` median without a graph.

    python -m benchmarks.studies.addmm_variants --out $OUT/addmm_variants_h100.json
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

import torch
import triton

from benchmarks.common import write_json
from torch_diode.collection.fast_sweep import untiled_launcher
from torch_diode.collection.operands import layout_tensors
from torch_diode.collection.timing import flush_buffer, time_launchers
from torch_diode.types import KernelConfig, Problem

SHAPES = [
    ("MLP layer 1 (e2e)", Problem("addmm", 1, 512, 4096, 1024, "float16", "float16", "float16", transpose_b=True)),
    ("MLP layer 2 (e2e)", Problem("addmm", 1, 512, 4096, 4096, "float16", "float16", "float16", transpose_b=True)),
    ("MLP layer 3 (e2e)", Problem("addmm", 1, 512, 1024, 4096, "float16", "float16", "float16", transpose_b=True)),
    ("ResNet-50 fc (e2e)", Problem("addmm", 1, 32, 1000, 2048, "float32", "float32", "float32", transpose_b=True)),
    ("GPT-2 c_attn (e2e)", Problem("addmm", 1, 1024, 2304, 768, "float16", "float16", "float16", transpose_b=True)),
    ("DLRM top MLP (e2e)", Problem("addmm", 1, 2048, 512, 479, "float16", "float16", "float16", transpose_b=True)),
]
CHOICES = ("aten::addmm", "aten::bias_addmm")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    flush = flush_buffer("cuda")
    rows = []
    for label, problem in SHAPES:
        a, b, out, bias = layout_tensors(problem, "cuda")
        row = {"label": label, "problem": problem.short()}
        for tid in CHOICES:
            fn = untiled_launcher(problem, KernelConfig(tid), a, b, out, bias)
            (label_ms,) = time_launchers([fn], args.reps, flush)
            row[tid] = {
                "label_us": 1000 * label_ms,
                "replay_us": 1000 * triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median"),
                "loop_us": 1000 * triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"),
            }
        rows.append(row)
    report = {
        "command": "python -m benchmarks.studies.addmm_variants",
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "rows": rows,
    }
    write_json(args.out, report)
    print(
        f"{'shape':22s} {'problem':32s} "
        + " ".join(f"{m + ' ' + c:>18s}" for m in ("label", "replay", "loop") for c in ("addmm", "bias"))
    )
    for row in rows:
        cells = [row[c][m] for m in ("label_us", "replay_us", "loop_us") for c in CHOICES]
        print(f"{row['label']:22s} {row['problem']:32s} " + " ".join(f"{v:18.1f}" for v in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

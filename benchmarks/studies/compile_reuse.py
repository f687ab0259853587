"""Where does compile time go in the fast path? (one GPU run, printed and saved as JSON)

A: torch_diode's precompile() (spawned worker processes), then the main process's first launch of
   each kernel is timed (a cache hit costs milliseconds, a recompile hundreds);
B: a thread pool calls warmup() in the main process for other configs, then first launches;
C: serial warmup() in the main process.

    python -m benchmarks.studies.compile_reuse --out $OUT/compile_reuse_h100.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common import report_header, write_json


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--n", type=int, default=24, help="kernels per experiment")
    args = parser.parse_args()
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton_cache_"))
    import torch

    from torch_diode.collection.kernel_compiler import precompile
    from torch_diode.collection.operands import layout_tensors
    from torch_diode.collection.triton_mm import make_launcher, warmup
    from torch_diode.inductor.config_space import triton_configs
    from torch_diode.types import Problem

    def first_launches(problem, configs):
        a, b, out, bias = layout_tensors(problem, "cuda")
        times = []
        for c in configs:
            t = time.perf_counter()
            try:
                make_launcher(a, b, out, bias, c)()
                torch.cuda.synchronize()
            except Exception:
                continue
            times.append((time.perf_counter() - t) * 1000)
        return times

    report = {
        **report_header(),
        "cache_dir": os.environ["TRITON_CACHE_DIR"],
    }
    pa = Problem("mm", 1, 1024, 4096, 2048, "float16", "float16", "float16")
    pb = Problem("mm", 1, 2048, 2048, 2048, "bfloat16", "bfloat16", "bfloat16")
    pc = Problem("mm", 1, 4096, 1024, 1024, "float32", "float32", "float32")
    ca = triton_configs(pa, "EXHAUSTIVE")[: args.n]
    cb = triton_configs(pb, "EXHAUSTIVE")[: args.n]
    cc = triton_configs(pc, "EXHAUSTIVE")[: max(4, args.n // 3)]

    t = time.perf_counter()
    errors = precompile([(pa, c) for c in ca], workers=15, progress=False)
    report["A_worker_precompile_s"] = time.perf_counter() - t
    report["A_worker_errors"] = sum(e is not None for e in errors.values())
    report["A_cache_files"] = sum(len(f) for _, _, f in os.walk(os.environ["TRITON_CACHE_DIR"]))
    report["A_first_launch_ms"] = first_launches(pa, ca)
    print("A", report["A_worker_precompile_s"], sorted(report["A_first_launch_ms"])[len(ca) // 2], flush=True)

    a, b, out, bias = layout_tensors(pb, "cuda", fill=False)
    t = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda c: _try(warmup, a, b, out, bias, c), cb))
    report["B_thread_warmup_s"] = time.perf_counter() - t
    report["B_first_launch_ms"] = first_launches(pb, cb)
    print("B", report["B_thread_warmup_s"], sorted(report["B_first_launch_ms"])[len(cb) // 2], flush=True)

    a, b, out, bias = layout_tensors(pc, "cuda", fill=False)
    t = time.perf_counter()
    for c in cc:
        _try(warmup, a, b, out, bias, c)
    report["C_serial_warmup_s_per_kernel"] = (time.perf_counter() - t) / len(cc)
    report["C_first_launch_ms"] = first_launches(pc, cc)
    print("C", report["C_serial_warmup_s_per_kernel"], sorted(report["C_first_launch_ms"])[len(cc) // 2], flush=True)
    write_json(args.out, report)
    return 0


def _try(fn, *args):
    try:
        fn(*args)
    except Exception as e:
        return str(e)
    return None


if __name__ == "__main__":
    sys.exit(main())

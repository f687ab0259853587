"""How long the fast collector's compile workers take to start (one GPU run, printed and saved as JSON).

Every `diode collect` / `diode remeasure` process starts a pool of spawned compile workers
(``kernel_compiler.KernelCompiler``); collect.sh's remeasure loops start one per dataset file. Each
worker imports torch_diode to unpickle its call. The pool starts its workers without the
import-time registration (``TORCH_DIODE_NO_AUTOREGISTER``); the stock alternative is the plain
import, which on a GPU with a shipped model initialises CUDA, reads the model and imports
Inductor's choices in every worker. Both are timed alternately, ``--repeats`` times each, in
this process with CUDA initialised (as a collector is), and the ratio of their medians reported.

    python -m benchmarks.studies.worker_start --workers 14 --out $OUT/worker_start_h200.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time

from benchmarks.common import report_header, write_json


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--workers", type=int, default=14)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import torch

    import torch_diode
    from torch_diode.collection import kernel_compiler

    torch.cuda.init()
    without_registration = kernel_compiler._environment

    def start(registering: bool) -> float:
        # the stock alternative: workers that inherit this process's environment as it is
        kernel_compiler._environment = (lambda **_: contextlib.nullcontext()) if registering else without_registration
        try:
            t = time.perf_counter()
            compiler = kernel_compiler.KernelCompiler(args.workers)
            seconds = time.perf_counter() - t
        finally:
            kernel_compiler._environment = without_registration
        kernel_compiler._kill_workers(compiler.pool)
        return seconds

    start(False)  # warm-up (not reported): the file cache
    times: dict[str, list[float]] = {"without_registration_s": [], "with_registration_s": []}
    for _ in range(args.repeats):
        times["with_registration_s"].append(start(True))
        times["without_registration_s"].append(start(False))
    median = {k: statistics.median(v) for k, v in times.items()}
    report = {
        **report_header(),
        "workers": args.workers,
        "registered_model": torch_diode.autoregister(),
        "times": times,
        "median_without_registration_s": median["without_registration_s"],
        "median_with_registration_s": median["with_registration_s"],
        "start_ratio_vs_registering_workers": median["without_registration_s"] / median["with_registration_s"],
    }
    write_json(args.out, report)
    print(json.dumps({k: v for k, v in report.items() if k != "times"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

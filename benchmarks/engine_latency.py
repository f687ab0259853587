"""Ranking every EXHAUSTIVE config (+ ATen) of one GEMM: the C++ engine vs the PyTorch forward.

One process, one CPU thread (torch.set_num_threads(1); run under `taskset -c 0` for one core).
Models of the two families with random weights (latency does not depend on the values).
(a) engine.predict on prepared int64 rows: features + MLP in C++;
(b) the same from KernelConfig objects (config_rows conversion in Python included);
(c) features in C++, MLP forward in PyTorch (the stock alternative), no_grad.

    taskset -c 0 python -m benchmarks.engine_latency --out benchmarks/results/engine_latency_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np
import torch

from torch_diode import _C
from torch_diode.inductor.config_space import raw_config_lists
from torch_diode.features import NUM_FEATURES, config_rows, featurize, hardware_row, problem_row
from torch_diode.model_file import write_model
from torch_diode.training.model import MODEL_FAMILIES, MLP, Regressor
from torch_diode.types import Hardware, KernelConfig, Problem


def timeit(fn, reps: int = 200) -> float:
    for _ in range(10):
        fn()
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e3  # ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    hw = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 * 2**30, 232448, torch.__version__)
    problem = Problem("mm", 1, 1000, 700, 1024, "bfloat16", "bfloat16", "bfloat16")
    configs = [KernelConfig("aten::mm")] + [
        KernelConfig("triton::mm", bm, bn, bk, g, s, w, even_k=1024 % bk == 0, acc_type="tl.float32")
        for bm, bn, bk, s, w, g in raw_config_lists()["EXHAUSTIVE"]
    ]
    rows, prow, hrow = config_rows(configs), problem_row(problem), hardware_row(hw)
    results = {"command": " ".join(sys.argv), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "cpu": platform.processor() or platform.machine(), "torch": torch.__version__, "num_choices": len(configs),
               "families": {}}
    print(f"{len(configs)} choices for {problem.short()}, one thread")
    print(f"{'family':8s} {'dims':18s} {'engine ms':>10s} {'engine+rows ms':>15s} {'pytorch ms':>11s} {'speedup':>8s}")
    for family, spec in MODEL_FAMILIES.items():
        torch.manual_seed(0)
        reg = Regressor(MLP(NUM_FEATURES, spec["hidden_dim"], spec["num_layers"]), np.zeros(NUM_FEATURES, np.float32),
                        np.ones(NUM_FEATURES, np.float32), 3.0, 1.0).eval()
        path = f"/tmp/engine_latency_{family}.diode"
        write_model(path, reg.to_model_file({}))
        engine = _C.Model.load(path)
        t_engine = timeit(lambda: np.argsort(engine.predict(prow, rows, hrow)))
        t_full = timeit(lambda: np.argsort(engine.predict(problem_row(problem), config_rows(configs), hardware_row(hw))), reps=50)

        def torch_path():
            with torch.no_grad():
                return torch.argsort(reg(torch.from_numpy(featurize(problem, configs, hw))))

        t_torch = timeit(torch_path)
        dims = [NUM_FEATURES] + [spec["hidden_dim"]] * spec["num_layers"] + [1]
        results["families"][family] = {"dims": dims, "engine_ms": t_engine, "engine_with_config_rows_ms": t_full,
                                       "pytorch_forward_ms": t_torch, "speedup_vs_pytorch": t_torch / t_engine}
        print(f"{family:8s} {str(dims):18s} {t_engine:10.3f} {t_full:15.3f} {t_torch:11.3f} {t_torch / t_engine:7.1f}x")
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

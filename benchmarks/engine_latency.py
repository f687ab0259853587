"""Ranking every EXHAUSTIVE config (+ ATen) of one GEMM: the C++ engine vs the PyTorch forward.

One process, one CPU thread (torch.set_num_threads(1); run under `taskset -c 0` for one core).
Models of the two families with random weights (latency does not depend on the values).
(a) engine.predict on prepared int64 rows: features + MLP in C++;
(b) the same from KernelConfig objects (config_rows conversion in Python included);
(c) features in C++, MLP forward in PyTorch (the stock alternative), no_grad.
Ensembles (ENSEMBLES): (a) is features, every member (predict_members), mean and spread.

    taskset -c 0 python -m benchmarks.engine_latency --out benchmarks/results/engine_latency_cpu.json
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np
import torch

from benchmarks.common import command_line, write_json
from torch_diode import _C
from torch_diode.features import NUM_FEATURES, config_rows, featurize, hardware_row, problem_row
from torch_diode.inductor.config_space import raw_config_lists
from torch_diode.model_file import write_model
from torch_diode.registry import resolve_model
from torch_diode.training.model import MLP, MODEL_FAMILIES, Ensemble, Regressor
from torch_diode.types import Hardware, KernelConfig, Problem

ENSEMBLES = ((4, 32), (4, 48), (5, 32), (5, 64))  # (members, hidden width), two hidden layers each


def _cpu_model() -> str:
    try:
        return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        return platform.machine()


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
    results = {
        "command": command_line(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "num_choices": len(configs),
        "machine": f"{_cpu_model()}, {os.cpu_count()} cores, one thread (run under taskset -c 0: one core)",
        "families": {},
    }
    print(f"{len(configs)} choices for {problem.short()}, one thread")
    print(f"{'family':14s} {'dims':18s} {'engine ms':>10s} {'engine+rows ms':>15s} {'pytorch ms':>11s} {'speedup':>8s}")
    forms = {family: (spec["hidden_dim"], spec["num_layers"], 1) for family, spec in MODEL_FAMILIES.items()}
    # ensembles as the handler runs them: every member's prediction in one call (predict_members)
    forms.update({f"ensemble {k}x{h}": (h, 2, k) for k, h in ENSEMBLES})
    shipped = _C.Model.load(str(resolve_model("NVIDIA-H100-matmul")))
    for family, (hidden, layers, k) in forms.items():
        torch.manual_seed(0)
        regs = [
            Regressor(
                MLP(NUM_FEATURES, hidden, layers),
                np.zeros(NUM_FEATURES, np.float32),
                np.ones(NUM_FEATURES, np.float32),
                3.0,
                1.0,
            ).eval()
            for _ in range(k)
        ]
        reg = regs[0] if k == 1 else Ensemble(regs).eval()
        path = f"/tmp/engine_latency_{family.replace(' ', '_')}.diode"
        write_model(path, reg.to_model_file({}))
        engine = _C.Model.load(path)
        if k == 1:
            t_engine = timeit(lambda: np.argsort(engine.predict(prow, rows, hrow)))
        else:  # features (C++), every member, their mean and spread: what a decision uses

            def ensemble_path():
                members = engine.predict_members(_C.compute_features(prow, rows, hrow))
                return np.argsort(members.mean(axis=0)), members.std(axis=0)

            t_engine = timeit(ensemble_path)
        t_full = timeit(
            lambda: np.argsort(engine.predict(problem_row(problem), config_rows(configs), hardware_row(hw))), reps=50
        )

        def torch_path():
            with torch.no_grad():
                return torch.argsort(reg(torch.from_numpy(featurize(problem, configs, hw))))

        t_torch = timeit(torch_path)
        dims = [NUM_FEATURES] + [hidden] * layers + [1]
        results["families"][family] = {
            "dims": dims,
            "members": k,
            "engine_ms": t_engine,
            "engine_with_config_rows_ms": t_full,
            "pytorch_forward_ms": t_torch,
            "speedup_vs_pytorch": t_torch / t_engine,
        }
        if (dims, k) == (list(shipped.dims), shipped.num_members):  # the form of the shipped H100 model
            results["shipped_form"] = family
        print(
            f"{family:14s} {str(dims):18s} {t_engine:10.3f} {t_full:15.3f} {t_torch:11.3f} {t_torch / t_engine:7.1f}x"
        )
    write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

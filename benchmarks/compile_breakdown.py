"""Where diode top-1's compile time goes, GEMM by GEMM, against default mode's.

For each GEMM of ``--shapes`` (default: benchmarks/e2e_shapes.json), cold compile caches as in
e2e.py, one worker process per method, each with its own new Triton and Inductor cache
directories and its own warm-up (a GEMM followed by a ReLU, so that CUDA, Inductor, the Triton
compiler and Inductor's compile workers are started, as they are in any real model's compile):

  default         torch.compile, no autotuning
  diode_top1      diode's handler, top_k_configs=1 (an unsure model widens to unsure_top_k)
  diode_trusting  the same with unsure_top_k=1: the model's first pick alone, never benchmarked

With ``--profile-decisions``, a fourth worker (diode_profiled: diode_trusting's settings) runs
cProfile around diode's handler alone and reports, over all GEMMs, the functions its decisions
spent their time in (own time); its compile times carry the profiler's overhead and are not
compared.

Reported per GEMM and method: compile wall time of the first call, diode's decision time and
picks, and Inductor's phase times (``torch._dynamo.utils.compilation_time_metrics``: where the
time went, e.g. ``*_template_precompiling`` and ``*_template_autotuning``). The difference
diode_top1 - diode_trusting is what unsure benchmarking costs; diode_trusting - default is
Inductor's GEMM path plus compiling a chosen Triton kernel.

    python benchmarks/compile_breakdown.py --out $OUT/compile_breakdown_h100.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"  # the handler is installed explicitly below

import torch
from torch._inductor import config as inductor_config

sys.path.insert(0, str(Path(__file__).parent))
from e2e import geomean, load_shapes

from torch_diode import config
from torch_diode.collection.inductor_sweep import make_inputs, op_function
from torch_diode.integration.install import diode_choices
from torch_diode.types import Problem

METHODS = ("default", "diode_top1", "diode_trusting")


def compile_once(fn, inputs, method: str, model: str, profile: cProfile.Profile | None = None) -> dict:
    torch._dynamo.reset()
    before = {k: sum(v) for k, v in torch._dynamo.utils.compilation_time_metrics.items()}
    settings = {"force_disable_caches": True}
    record: dict = {}
    with inductor_config.patch(settings), torch.no_grad():
        if method == "default":
            start = time.perf_counter()
            torch.compile(fn, dynamic=False)(*inputs)
            torch.cuda.synchronize()
            record["compile_s"] = time.perf_counter() - start
        else:
            unsure_k = config.unsure_top_k if method == "diode_top1" else 1
            with inductor_config.patch(max_autotune_gemm=True, max_autotune_gemm_backends="ATEN,TRITON"), \
                    diode_choices(model) as choices, config.patch(top_k_configs=1, unsure_top_k=unsure_k):
                if profile is not None:
                    decide = choices._finalize

                    def profiled(*a, **k):
                        profile.enable()
                        try:
                            return decide(*a, **k)
                        finally:
                            profile.disable()

                    choices._finalize = profiled
                start = time.perf_counter()
                torch.compile(fn, dynamic=False)(*inputs)
                torch.cuda.synchronize()
                record["compile_s"] = time.perf_counter() - start
                stats = choices.get_stats()
            record["decision_s"] = stats["decision_seconds"]
            record["unsure_benchmarked"] = stats["unsure_benchmarked"]
            record["picks"] = [d["chosen"] for d in choices.decisions]
    after = {k: sum(v) for k, v in torch._dynamo.utils.compilation_time_metrics.items()}
    record["phases_s"] = {k: round(v - before.get(k, 0.0), 4) for k, v in sorted(after.items(), key=lambda kv: -kv[1])
                          if v - before.get(k, 0.0) > 0.005}
    return record


def worker(args: argparse.Namespace) -> int:
    method = args.worker
    warm = Problem("mm", 1, 256, 256, 256, "float16", "float16", "float16")
    warm_inputs = make_inputs(warm, "cuda")
    compile_once(lambda a, b: torch.relu(a @ b), warm_inputs, method, args.model)
    rows = []
    profile = cProfile.Profile() if method == "diode_profiled" else None
    for label, problem, _ in load_shapes(Path(args.shapes)):
        record = compile_once(op_function(problem.op), make_inputs(problem, "cuda"), method, args.model, profile)
        rows.append({"label": label, "problem": problem.short(), **record})
        print(f"[{method}] {label[:44]:44s} compile {record['compile_s']:6.2f} s  decision "
              f"{1e3 * record.get('decision_s', 0):6.1f} ms  {record.get('picks', '')}", flush=True)
        Path(args.out).write_text(json.dumps(rows, indent=1))
    if profile is not None:
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(30)
        rows.append({"label": "decision profile (all GEMMs)", "profile": text.getvalue()})
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=str(Path(__file__).with_name("e2e_shapes.json")))
    parser.add_argument("--model", default="NVIDIA-H100-matmul")
    parser.add_argument("--out", required=True)
    parser.add_argument("--profile-decisions", action="store_true", help="also profile diode's handler (see above)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    by_method = {}
    for method in METHODS + (("diode_profiled",) if args.profile_decisions else ()):
        part = Path(tempfile.mkdtemp(prefix="breakdown_")) / "rows.json"
        env = {**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp(prefix="bd_triton_"),
               "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="bd_inductor_"), "PYTHONUNBUFFERED": "1"}
        subprocess.run([sys.executable, __file__, "--worker", method, "--out", str(part), "--shapes", args.shapes,
                        "--model", args.model], env=env, check=False)
        by_method[method] = json.loads(part.read_text()) if part.exists() else []
    labels = [r["label"] for r in by_method["default"]]
    table = []
    for i, label in enumerate(labels):
        row = {"label": label}
        for method in METHODS:
            if i < len(by_method[method]):
                row[method] = by_method[method][i]
        table.append(row)

    def ratio(method: str) -> float | None:
        return geomean([r[method]["compile_s"] / r["default"]["compile_s"] for r in table if method in r])

    summary = {f"compile_ratio_vs_default_geomean_{m}": ratio(m) for m in METHODS[1:]}
    report = {"command": " ".join(["python", *sys.argv]), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": __import__("triton").__version__,
              "summary": summary, "rows": table}
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"\n{'GEMM':44s} {'default':>8s} {'top1':>8s} {'trusting':>9s} {'decision':>9s}  unsure")
    for r in table:
        cells = [f"{r[m]['compile_s']:8.2f}" if m in r else f"{'-':>8s}" for m in METHODS]
        d = r.get("diode_top1", {})
        print(f"{r['label'][:44]:44s} {cells[0]} {cells[1]} {cells[2]:>9s} {1e3 * d.get('decision_s', 0):7.1f}ms  {d.get('unsure_benchmarked', '-')}")
    for k, v in summary.items():
        print(f"{k:48s} {v:.3f}" if v else f"{k:48s} -")
    if args.profile_decisions and by_method["diode_profiled"]:
        report["decision_profile"] = by_method["diode_profiled"][-1].get("profile")
        Path(args.out).write_text(json.dumps(report, indent=1))
        print(report["decision_profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

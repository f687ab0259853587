"""Where diode's decision time goes inside torch.compile, and what its own enumeration saves.

For each GEMM of ``e2e_shapes.json``, in one process on the GPU: torch.compile with diode top-1
(a) enumerating the Triton template's candidates itself (``config.enumerate_candidates``, the
default) and (b) letting Inductor's generators build every candidate; then default mode. Caches
off, dynamo reset before each compile. Reported per GEMM: diode's ``decision_seconds``, the
compile wall time of the first call and the picks (they must agree). Last, a cProfile of (b) on
one GEMM: the functions the full path spends its time in.

    python benchmarks/decision_cost.py --out $OUT/decision_cost_h100.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"  # the handler is installed explicitly below

import torch  # noqa: E402
from torch._inductor import config as inductor_config  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from e2e import geomean, load_shapes  # noqa: E402

from torch_diode import config  # noqa: E402
from torch_diode.collection.inductor_sweep import make_inputs, op_function  # noqa: E402
from torch_diode.integration.install import diode_choices  # noqa: E402


def compile_once(problem, mode_kwargs: dict) -> float:
    fn = op_function(problem.op)
    inputs = make_inputs(problem, "cuda")
    torch._dynamo.reset()
    start = time.perf_counter()
    with inductor_config.patch(force_disable_caches=True, **mode_kwargs):
        torch.compile(fn, dynamic=False)(*inputs)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def diode_compile(problem, model: str, enumerate_candidates: bool, profile: cProfile.Profile | None = None) -> dict:
    with diode_choices(model) as choices, config.patch(enumerate_candidates=enumerate_candidates, top_k_configs=1):
        if profile is not None:
            profile.enable()
        seconds = compile_once(problem, {"max_autotune_gemm": True})
        if profile is not None:
            profile.disable()
        stats = choices.get_stats()
        return {"compile_s": seconds, "decision_s": stats["decision_seconds"], "enumerated": stats["enumerated"],
                "enumeration_mismatch": stats["enumeration_mismatch"], "fallbacks": stats["fallbacks_total"],
                "picks": [d["chosen"] for d in choices.decisions]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=str(Path(__file__).with_name("e2e_shapes.json")))
    parser.add_argument("--model", default="NVIDIA-H100-matmul")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rows = []
    for label, problem, _ in load_shapes(Path(args.shapes)):
        own = diode_compile(problem, args.model, True)
        full = diode_compile(problem, args.model, False)
        default_s = compile_once(problem, {})
        rows.append({"label": label, "problem": problem.short(), "default_compile_s": default_s,
                     "enumerated": own, "inductor_generators": full, "same_picks": own["picks"] == full["picks"]})
        print(f"{label[:44]:44s} decision {own['decision_s'] * 1e3:7.1f} ms vs {full['decision_s'] * 1e3:7.1f} ms; "
              f"compile {own['compile_s']:.2f} / {full['compile_s']:.2f} / default {default_s:.2f} s; "
              f"same picks {rows[-1]['same_picks']}", flush=True)
    profile = cProfile.Profile()
    _, problem, _ = load_shapes(Path(args.shapes))[0]
    diode_compile(problem, args.model, False, profile)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(40)
    summary = {
        "decision_ms_geomean_enumerated": 1e3 * geomean([r["enumerated"]["decision_s"] for r in rows]),
        "decision_ms_geomean_inductor_generators": 1e3 * geomean([r["inductor_generators"]["decision_s"] for r in rows]),
        "compile_s_geomean_enumerated": geomean([r["enumerated"]["compile_s"] for r in rows]),
        "compile_s_geomean_inductor_generators": geomean([r["inductor_generators"]["compile_s"] for r in rows]),
        "compile_s_geomean_default": geomean([r["default_compile_s"] for r in rows]),
        "all_same_picks": all(r["same_picks"] for r in rows),
    }
    report = {"command": " ".join(sys.argv), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": __import__("triton").__version__,
              "summary": summary, "rows": rows, "profile_inductor_generators": text.getvalue()}
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(text.getvalue()[:6000])
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

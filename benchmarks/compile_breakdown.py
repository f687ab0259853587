"""Where diode's compile time goes, GEMM by GEMM, against default mode's, and what diode's own
enumeration of the Triton candidates saves.

For each GEMM of ``--shapes`` (default: benchmarks/e2e_shapes.json), or with ``--models`` each
whole-model row of benchmarks/e2e.py, cold compile caches as in
e2e.py, one worker process per method, each with its own new Triton and Inductor cache
directories and its own warm-up (benchmarks.common.WARM_UP; then it waits for Inductor's compile
worker pool):

  default           torch.compile, no autotuning
  diode_top1        diode's handler, top_k_configs=1 (an unsure model widens to unsure_top_k)
  diode_trusting    the same with unsure_top_k=1: the model's first pick alone, never benchmarked
  diode_generators  (with --enumeration) diode_top1 with config.enumerate_candidates off:
                    Inductor's generators build every candidate; its picks must be diode_top1's
  diode_top1_no_epilogue_bench
                    (with --epilogue-bench) diode_top1 with Inductor's
                    benchmark_epilogue_fusion off: where an unsure decision leaves several
                    choices, the scheduler deciding an epilogue's fusion into them estimates the
                    separate epilogue kernel's time instead of compiling and timing it (it still
                    compiles and times the fused kernel of the best Triton choice)

With ``--profile-decisions``, one more worker (diode_profiled: diode_trusting's settings) runs
cProfile around diode's handler alone and reports, over all GEMMs, the functions its decisions
spent their time in (own time); its compile times carry the profiler's overhead and are not
compared.

Every compile also records the ``triton.compile`` calls it made in the compiling process, and in
which thread (``triton_compiles``: count and seconds, main thread and others), and Inductor's
counters of its compile-pool cache (``async_compile_cache_hit``, ``_miss``). A call that Triton's
cache serves counts too, in milliseconds; a kernel Inductor compiled in its worker pool and then
compiles again in the compiling process shows as calls of a compile's length (tenths of seconds).

With ``--repeats N``, the workers run N times, the methods alternating, each run in new processes
with new caches; each row's ``compile_s`` is then the median of the runs (``compile_s_runs``: all
of them), the other fields those of the first run. Whole-model compiles vary by tens of percent
from one run to the next.

With ``--runtime``, each compiled item's runtime follows its compile (``runtime_us``: the
median of ``do_bench_cudagraph`` replays, as benchmarks.e2e measures), so that a method that
compiles faster shows what its kernels cost.

Reported per GEMM and method: compile wall time of the first call, diode's decision time and
picks, and Inductor's phase times (``torch._dynamo.utils.compilation_time_metrics``: where the
time went, e.g. ``*_template_precompiling`` and ``*_template_autotuning``). The difference
diode_top1 - diode_trusting is what unsure benchmarking costs; diode_trusting - default is
Inductor's GEMM path plus compiling a chosen Triton kernel; diode_generators - diode_top1 is
what diode's enumeration saves.

    python -m benchmarks.compile_breakdown --out $OUT/compile_breakdown_h100.json
    python -m benchmarks.compile_breakdown --enumeration --out $OUT/decision_cost_h100.json
    python -m benchmarks.compile_breakdown --models --out $OUT/compile_breakdown_models_h100.json
    python -m benchmarks.compile_breakdown --models --epilogue-bench --runtime --out $OUT/f.json
    python -m benchmarks.compile_breakdown --models --repeats 3 --out $OUT/compile_repeats_h100.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import threading
import time
from collections import Counter

os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"  # the handler is installed explicitly below

import torch  # noqa: E402
from torch._inductor import config as inductor_config  # noqa: E402

from benchmarks.common import (  # noqa: E402
    DIODE_SETTINGS,
    SHAPES,
    WARM_UP,
    bench_cudagraph_us,
    geomean,
    input_copies,
    load_shapes,
    report_header,
    run_worker,
    timed_first_call,
    wait_for_compile_pool,
    warm_up_function,
    write_json,
)
from benchmarks.e2e_models import models as e2e_models  # noqa: E402
from torch_diode import config  # noqa: E402
from torch_diode.collection.inductor_sweep import make_inputs, op_function  # noqa: E402
from torch_diode.integration.install import diode_choices  # noqa: E402

METHODS = ("default", "diode_top1", "diode_trusting")
NO_EPILOGUE = "diode_top1_no_epilogue_bench"


def diode_settings(method: str) -> dict:
    """torch_diode.config values of a diode method."""
    return {
        "top_k_configs": 1,
        "unsure_top_k": config.unsure_top_k if method in ("diode_top1", "diode_generators", NO_EPILOGUE) else 1,
        "enumerate_candidates": method != "diode_generators",
    }


class TritonCompiles:
    """Counts and times the ``triton.compile`` calls made in this process while active, by thread
    (Inductor's worker pool compiles elsewhere and is not counted)."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()
        self.seconds: Counter = Counter()

    def __enter__(self) -> TritonCompiles:
        import triton

        self._triton, self._compile = triton, triton.compile

        def counted(*args, **kwargs):
            where = "main_thread" if threading.current_thread() is threading.main_thread() else "other_threads"
            start = time.perf_counter()
            try:
                return self._compile(*args, **kwargs)
            finally:
                self.calls[where] += 1
                self.seconds[where] += time.perf_counter() - start

        triton.compile = counted
        return self

    def __exit__(self, *exc) -> None:
        self._triton.compile = self._compile

    def record(self) -> dict:
        return {
            **{f"{where}_calls": self.calls[where] for where in ("main_thread", "other_threads")},
            **{f"{where}_s": round(self.seconds[where], 4) for where in ("main_thread", "other_threads")},
        }


POOL_COUNTERS = ("async_compile_cache_hit", "async_compile_cache_miss")


def compile_once(
    fn, inputs, method: str, model: str, profile: cProfile.Profile | None = None, runtime: bool = False
) -> dict:
    torch._dynamo.reset()
    before = {k: sum(v) for k, v in torch._dynamo.utils.compilation_time_metrics.items()}
    pool_before = {k: torch._dynamo.utils.counters["inductor"][k] for k in POOL_COUNTERS}
    record: dict = {}
    compiled = torch.compile(fn, dynamic=False)
    with inductor_config.patch(force_disable_caches=True), torch.no_grad(), TritonCompiles() as triton_compiles:
        if method == "default":
            record["compile_s"] = timed_first_call(compiled, *inputs)
        else:
            with (
                inductor_config.patch(
                    **DIODE_SETTINGS, **({"benchmark_epilogue_fusion": False} if method == NO_EPILOGUE else {})
                ),
                diode_choices(model) as choices,
                config.patch(**diode_settings(method)),
            ):
                if profile is not None:
                    finalize = choices._finalize

                    def profiled(*a, **k):
                        profile.enable()
                        try:
                            return finalize(*a, **k)
                        finally:
                            profile.disable()

                    choices._finalize = profiled
                record["compile_s"] = timed_first_call(compiled, *inputs)
                stats = choices.get_stats()
            record.update(
                decision_s=stats["decision_seconds"],
                unsure_benchmarked=stats["unsure_benchmarked"],
                enumerated=stats["enumerated"],
                enumeration_mismatch=stats["enumeration_mismatch"],
                fallbacks=stats["fallbacks_total"],
                picks=[d["chosen"] for d in choices.decisions],
            )
        record["triton_compiles"] = triton_compiles.record()  # the compile's, not the runtime's
        record["triton_compiles"].update(
            {k: torch._dynamo.utils.counters["inductor"][k] - pool_before[k] for k in POOL_COUNTERS}
        )
        if runtime:
            record["runtime_us"] = bench_cudagraph_us(compiled, input_copies(inputs))  # as e2e.py times
    after = {k: sum(v) for k, v in torch._dynamo.utils.compilation_time_metrics.items()}
    record["phases_s"] = {
        k: round(v - before.get(k, 0.0), 4)
        for k, v in sorted(after.items(), key=lambda kv: -kv[1])
        if v - before.get(k, 0.0) > 0.005
    }
    return record


def items(models: bool, shapes: str) -> list[tuple]:
    """(label, function, inputs, problem or None) to compile: the GEMMs of ``shapes``, or with
    ``models`` the whole-model rows of benchmarks.e2e (their GEMMs decided as in one model)."""
    if models:
        return [(label, module, inputs, None) for label, module, inputs in e2e_models("cuda")]
    return [
        (label, op_function(problem.op), make_inputs(problem, "cuda"), problem.short())
        for label, problem, _ in load_shapes(shapes)
    ]


def worker(args: argparse.Namespace) -> int:
    method = args.worker
    compile_once(
        warm_up_function(),
        make_inputs(WARM_UP, "cuda"),
        method if method != "diode_profiled" else "diode_trusting",
        args.model,
    )
    wait_for_compile_pool()
    rows = []
    profile = cProfile.Profile() if method == "diode_profiled" else None
    for label, fn, inputs, problem in items(args.models, args.shapes):
        record = compile_once(
            fn, inputs, "diode_trusting" if profile is not None else method, args.model, profile, args.runtime
        )
        rows.append({"label": label, **({"problem": problem} if problem else {}), **record})
        print(
            f"[{method}] {label[:44]:44s} compile {record['compile_s']:6.2f} s  decision "
            f"{1e3 * record.get('decision_s', 0):6.1f} ms  {record.get('picks', '')}",
            flush=True,
        )
        write_json(args.out, rows)
    if profile is not None:
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(30)
        rows.append({"label": "decision profile (all GEMMs)", "profile": text.getvalue()})
        write_json(args.out, rows)
    return 0


def median_rows(runs: list[list[dict]]) -> list[dict]:
    """One method's rows over its runs: the first run's, with ``compile_s`` the median of the runs
    that reached the row and ``compile_s_runs`` all of them (where there was more than one run)."""
    if len(runs) == 1:
        return runs[0]
    rows = []
    for i, first in enumerate(runs[0]):
        times = [run[i]["compile_s"] for run in runs if i < len(run) and "compile_s" in run[i]]
        rows.append({**first, "compile_s": statistics.median(times), "compile_s_runs": times})
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=str(SHAPES))
    parser.add_argument("--model", default="NVIDIA-H100-matmul")
    parser.add_argument("--out", required=True)
    parser.add_argument("--enumeration", action="store_true", help="also measure diode_generators (see above)")
    parser.add_argument("--profile-decisions", action="store_true", help="also profile diode's handler (see above)")
    parser.add_argument(
        "--models",
        action="store_true",
        help="compile benchmarks.e2e's whole-model rows (decoder block, ViT block, MLP) instead of --shapes",
    )
    parser.add_argument(
        "--epilogue-bench",
        action="store_true",
        help=f"also measure {NO_EPILOGUE} (diode_top1 without Inductor's epilogue fusion benchmark)",
    )
    parser.add_argument("--runtime", action="store_true", help="also time each compiled item (do_bench_cudagraph)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="run the workers this many times, methods alternating; compile_s is the median (see above)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.worker and args.repeats < 1:
        parser.error(f"--repeats must be at least 1, not {args.repeats}")
    return args


def run_methods(args: argparse.Namespace, methods: tuple[str, ...]) -> dict[str, list[dict]]:
    """Each method's rows, the median over ``--repeats`` workers (methods alternating)."""
    runs: dict[str, list[list[dict]]] = {}
    for repeat in range(args.repeats):
        for method in methods + (("diode_profiled",) if args.profile_decisions and repeat == 0 else ()):
            rows, _, _ = run_worker(
                "compile_breakdown",
                [
                    "--worker",
                    method,
                    "--shapes",
                    args.shapes,
                    "--model",
                    args.model,
                    *(["--models"] if args.models else []),
                    *(["--runtime"] if args.runtime else []),
                ],
            )
            runs.setdefault(method, []).append(rows)
    return {method: median_rows(rows) for method, rows in runs.items()}


def summarize(table: list[dict], methods: tuple[str, ...], args: argparse.Namespace) -> dict:
    """Compile (and with ``--runtime`` runtime) ratios to default mode, decision times and the
    Triton compiles of the compiling thread, per method."""

    def ratio(method: str, field: str = "compile_s") -> float | None:
        return geomean([r[method][field] / r["default"][field] for r in table if method in r])

    summary = {f"compile_ratio_vs_default_geomean_{m}": ratio(m) for m in methods[1:]}
    if args.runtime:
        summary.update({f"runtime_ratio_vs_default_geomean_{m}": ratio(m, "runtime_us") for m in methods[1:]})
    for method in methods:
        summary[f"compile_s_geomean_{method}"] = geomean([r[method]["compile_s"] for r in table if method in r])
    for method in methods[1:]:
        summary[f"decision_ms_geomean_{method}"] = 1e3 * (
            geomean([r[method]["decision_s"] for r in table if method in r]) or 0
        )
    if args.enumeration:
        summary["all_same_picks"] = all(
            r["diode_top1"]["picks"] == r["diode_generators"]["picks"]
            for r in table
            if "diode_top1" in r and "diode_generators" in r
        )
    for method in methods:
        summary[f"main_thread_triton_compiles_{method}"] = sum(
            r[method].get("triton_compiles", {}).get("main_thread_calls", 0) for r in table if method in r
        )
    summary["repeats"] = args.repeats
    return summary


def print_table(table: list[dict], methods: tuple[str, ...], summary: dict) -> None:
    print(
        f"\n{'GEMM':44s} " + " ".join(f"{m[-12:]:>12s}" for m in methods) + f" {'decision':>9s}  unsure  "
        "triton.compile calls in the compiling thread (diode_top1)"
    )
    for r in table:
        cells = [f"{r[m]['compile_s']:12.2f}" if m in r else f"{'-':>12s}" for m in methods]
        d = r.get("diode_top1", {})
        print(
            f"{r['label'][:44]:44s} {' '.join(cells)} {1e3 * d.get('decision_s', 0):7.1f}ms  "
            f"{d.get('unsure_benchmarked', '-')!s:6s}  {d.get('triton_compiles', {}).get('main_thread_calls', '-')}"
        )
    for k, v in summary.items():
        print(f"{k:48s} {v:.3f}" if isinstance(v, float) else f"{k:48s} {v}")


def main() -> int:
    args = parse_args()
    if args.worker:
        return worker(args)
    methods = (
        METHODS + (("diode_generators",) if args.enumeration else ()) + ((NO_EPILOGUE,) if args.epilogue_bench else ())
    )
    by_method = run_methods(args, methods)
    table = []
    for i, label in enumerate(r["label"] for r in by_method["default"]):
        table.append({"label": label} | {m: by_method[m][i] for m in methods if i < len(by_method[m])})
    summary = summarize(table, methods, args)
    report = {**report_header(), "summary": summary, "rows": table}
    write_json(args.out, report)
    print_table(table, methods, summary)
    if args.profile_decisions and by_method["diode_profiled"]:
        report["decision_profile"] = by_method["diode_profiled"][-1].get("profile")
        write_json(args.out, report)
        print(report["decision_profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

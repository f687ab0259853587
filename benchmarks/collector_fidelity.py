"""Fast collection path vs Inductor's own autotuning, in one run on one GPU.

1. Fast path throughput on a batch of random problems drawn like data/h100/collect.sh's half
   precision mm/addmm part (ATen + DEFAULT + --exhaustive-sample EXHAUSTIVE configs each), with
   an empty Triton cache, compile included: timings / wall minute.
2. Inductor reference: each shape compiled by stock torch.compile max-autotune with the
   EXHAUSTIVE search space, restricted by a choice handler to ATen + the DEFAULT configs + a
   seeded sample of EXHAUSTIVE configs (the full space takes >5 min per shape); every timing is
   recorded by torch_diode.collect. Rate = timings / wall minute (precompile + benchmark).
   It runs twice: with Inductor's stock benchmark (an L2-sized cache flush before each timed
   launch) and with the same benchmark given the fast path's larger flush (the benchmarker's
   L2_cache_size set to timing.FLUSH_BYTES). An L2-sized flush takes less time than Inductor's
   Python launch of a Triton kernel, so for short kernels the host's launch cost lands between
   the timing events; the larger flush hides it where the host is quick enough (the fast path
   also queues a lead of GPU time before its flush, timing.LEAD_US, so that it always does).
3. Fast path on exactly the configs Inductor measured for those shapes: per-shape Spearman rank
   correlation and relative differences of the times, against both references. The report's
   ``spearman_median`` and ``median_abs_rel_diff`` compare with Inductor's benchmark at the same
   flush (same method, so a difference is a different kernel or noise); ``*_stock_flush`` with
   stock Inductor as it runs.

    python -m benchmarks.collector_fidelity --out $OUT/collector_h100.json

``--recorded DATASET...`` runs step 3 alone against recorded timings: stock max-autotune's
(data/h100/inductor_timed, collect.sh inductor-*), or the fast path's own as collected, which
times the same kernels again, now and with no compile running beside them, against the timings
the collection stored (``--misaligned-only`` keeps the problems with misaligned rows):

    python -m benchmarks.collector_fidelity --recorded data/h100/realmodels --misaligned-only --out $OUT/f.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

# an empty Triton cache: the fast path's rate includes compiling every kernel it needs
# (once: the compile workers, spawned, import this module again and must not get another one)
if "DIODE_FIDELITY_TRITON_CACHE" not in os.environ:
    os.environ["DIODE_FIDELITY_TRITON_CACHE"] = tempfile.mkdtemp(prefix="diode_fidelity_triton_")
os.environ["TRITON_CACHE_DIR"] = os.environ["DIODE_FIDELITY_TRITON_CACHE"]
# stock Inductor only: no shipped model registered on import
os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"

import numpy as np  # noqa: E402

from benchmarks.common import command_line, report_header, spearman, stage, write_json  # noqa: E402
from torch_diode.collection import collect  # noqa: E402
from torch_diode.collection.fast_sweep import FastSweep, choices_for, launchers_for  # noqa: E402
from torch_diode.collection.inductor_sweep import compile_and_run, inductor_settings  # noqa: E402
from torch_diode.collection.kernel_compiler import precompile, variant_key  # noqa: E402
from torch_diode.collection.operands import layout_tensors
from torch_diode.collection.shapes import ShapeSpec, random_problems  # noqa: E402
from torch_diode.collection.timing import FLUSH_BYTES, flush_buffer, time_launchers  # noqa: E402
from torch_diode.dataset_io import load_dataset, load_datasets, save_dataset  # noqa: E402
from torch_diode.types import Dataset, Problem, TimedConfig  # noqa: E402

FIDELITY_SHAPES = [
    Problem("mm", 1, 1024, 4096, 2048, "float16", "float16", "float16"),
    Problem("addmm", 1, 2048, 1024, 1024, "float16", "float16", "float16"),
    Problem("bmm", 16, 512, 512, 64, "float16", "float16", "float16"),
    Problem("mm", 1, 16, 4096, 4096, "bfloat16", "bfloat16", "bfloat16"),
    Problem("mm", 1, 1000, 700, 1024, "float16", "float16", "float16", transpose_b=True),
    Problem("mm", 1, 333, 4096, 1000, "bfloat16", "bfloat16", "bfloat16", transpose_a=True),
    Problem("mm", 1, 64, 11008, 4096, "bfloat16", "bfloat16", "bfloat16", transpose_b=True),
    Problem("mm", 1, 512, 512, 512, "float32", "float32", "float32"),
]


def config_tuple(c) -> tuple:
    return (c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps, c.group_m)


def restricted_handler(allowed: set[tuple]):
    """An InductorChoices keeping ATen and the Triton configs in ``allowed`` only."""
    from torch._inductor.choices import InductorChoices

    class Restricted(InductorChoices):
        def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
            out = super()._finalize_template_configs(
                template_choices, kernel_inputs, templates, op_name, kwarg_overrides
            )
            keep = []
            for ktc in out:
                if not ktc.template.uid.startswith("triton::"):
                    keep.append(ktc)
                    continue
                kw = ktc.params.to_kwargs()
                key = (
                    kw.get("BLOCK_M"),
                    kw.get("BLOCK_N"),
                    kw.get("BLOCK_K"),
                    kw.get("num_stages"),
                    kw.get("num_warps"),
                    kw.get("GROUP_M"),
                )
                if key in allowed:
                    keep.append(ktc)
            return keep or out

    return Restricted()


def inductor_reference(shapes, sample: int, seed: int, path: Path, flush_bytes: int | None = None) -> tuple[float, int]:
    """Inductor autotunes ``shapes`` (recorded into ``path``); ``flush_bytes`` replaces the size of
    the cache flush of Inductor's benchmarker (its L2_cache_size, read per benchmark)."""
    from torch._inductor import config as inductor_config
    from torch._inductor.runtime.benchmarking import InductorBenchmarker, benchmarker
    from torch._inductor.virtualized import V

    if flush_bytes is not None and (
        not isinstance(benchmarker, InductorBenchmarker) or inductor_config.autotune_in_subproc
    ):
        raise SystemExit(
            "the flush override needs Inductor's InductorBenchmarker in this process "
            f"(found {type(benchmarker).__name__}, autotune_in_subproc={inductor_config.autotune_in_subproc})"
        )

    saved = benchmarker.__dict__.get("L2_cache_size")
    if flush_bytes is not None:
        benchmarker.__dict__["L2_cache_size"] = flush_bytes
    start, count = time.perf_counter(), 0
    try:
        for problem in shapes:
            allowed = {config_tuple(c) for c in choices_for(problem, sample, seed) if c.is_tiled}
            with V.set_choices_handler(restricted_handler(allowed)), collect(path) as col:
                before = col.stats["choices"]
                compile_and_run(problem, "cuda", inductor_settings("EXHAUSTIVE", "ATEN,TRITON"))
                count += col.stats["choices"] - before
            stage(
                f"inductor (flush {flush_bytes or 'L2'}) {problem.short()}: {col.stats['choices'] - before} timings, "
                f"{time.perf_counter() - start:.1f} s so far"
            )
    finally:
        if saved is None:
            benchmarker.__dict__.pop("L2_cache_size", None)
        else:
            benchmarker.__dict__["L2_cache_size"] = saved
    return time.perf_counter() - start, count


def compare(problem: Problem, timings, fast_ms, compile_errors) -> dict:
    """Fast path vs one Inductor reference on one shape."""
    both = [
        (t.time_us, f * 1000)
        for t, f in zip(timings, fast_ms)
        if not t.failed
        and f is not None
        and (not t.config.is_tiled or compile_errors.get(variant_key(problem, t.config)) is None)
    ]
    tri = [
        (t.time_us, f * 1000) for t, f in zip(timings, fast_ms) if t.config.is_tiled and not t.failed and f is not None
    ]
    aten = [
        (t.config.template_id, t.time_us, f * 1000)
        for t, f in zip(timings, fast_ms)
        if not t.config.is_tiled and not t.failed and f is not None
    ]
    by_template: dict[str, list[float]] = {}
    for t, f in zip(timings, fast_ms):
        if not t.failed and f is not None:
            by_template.setdefault(t.config.template_id, []).append(abs(f * 1000 - t.time_us) / t.time_us)
    if len(both) < 2:
        raise SystemExit(
            f"{problem.short()}: {len(both)} choices timed by both Inductor and the fast path; nothing to compare"
        )
    ind, fast = np.array([b[0] for b in both]), np.array([b[1] for b in both])
    rel = np.abs(fast - ind) / ind
    tind, tfast = np.array([b[0] for b in tri]), np.array([b[1] for b in tri])
    return {
        "problem": problem.short(),
        "choices_compared": len(both),
        "spearman": spearman(ind, fast),
        "spearman_triton_only": spearman(tind, tfast),
        "median_abs_rel_diff": float(np.median(rel)),
        "rel_diffs": rel.tolist(),
        "median_abs_rel_diff_by_template": {k: float(np.median(v)) for k, v in sorted(by_template.items())},
        "aten": [{"template_id": a, "inductor_us": i, "fast_us": f} for a, i, f in aten],
        "inductor_best_us": float(ind.min()),
        "fast_best_us": float(fast.min()),
        "same_best_choice": int(np.argmin(ind)) == int(np.argmin(fast)),
        "fast_choice_of_inductor_best_slowdown": float(ind[np.argmin(fast)] / ind.min()),
    }


def fast_on(problem: Problem, configs, reps: int, flush) -> list:
    a, b, out, bias = layout_tensors(problem, "cuda")
    return time_launchers(launchers_for(problem, configs, a, b, out, bias), reps, flush)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON report")
    parser.add_argument("--inductor-sample", type=int, default=24, help="EXHAUSTIVE configs per shape for Inductor")
    parser.add_argument("--inductor-shapes", type=int, default=6, help="how many of the fidelity shapes to run")
    parser.add_argument("--rate-problems", type=int, default=30)
    parser.add_argument("--exhaustive-sample", type=int, default=350)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--recorded",
        nargs="+",
        help="datasets of Inductor's own timings (stock max-autotune): compare with them alone (step 3); "
        "a dataset of the fast path's own timings gives the same path timed again, now, against its "
        "timings at collection",
    )
    parser.add_argument(
        "--misaligned-only",
        action="store_true",
        help="with --recorded: only the problems whose rows are misaligned (Problem.misaligned_operands)",
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=1,
        help="with --recorded: time every problem's configs this many times (one pass over all problems "
        "after the other); the comparison takes the fastest, the report says how the passes differ",
    )
    parser.add_argument(
        "--retimed-out",
        help="with --recorded: write the recorded problems with the timings of now as a dataset "
        "(for python -m benchmarks.selection_replay ... --data)",
    )
    args = parser.parse_args()
    for flag, given in (
        ("--misaligned-only", args.misaligned_only),
        ("--retimed-out", args.retimed_out),
        ("--passes", args.passes != 1),
    ):
        if given and not args.recorded:
            parser.error(f"{flag}: only with --recorded")
    if args.passes < 1:
        parser.error(f"--passes: expected at least 1, got {args.passes}")
    return args


def main() -> int:
    args = parse_args()
    return recorded(args) if args.recorded else fresh(args)


def fresh(args: argparse.Namespace) -> int:
    """Steps 1-3 of the module's docstring: the fast path's rate, Inductor's timings of the same
    configs, and the comparison."""
    tmp = Path(tempfile.mkdtemp())

    # 1. fast path rate, first: the Triton cache is still empty, so compiling every kernel counts
    problems = random_problems(
        ShapeSpec(
            num_shapes=args.rate_problems,
            ops=("mm", "addmm"),
            dtypes=("float16", "bfloat16"),
            sizes=(64, 128, 256, 512, 768, 1024, 1536, 2048, 2304, 3072, 4096, 5120, 8192, 11008, 14336),
            m_sizes=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
            layouts=("NN", "NT"),
            max_gflop=200,
        ),
        seed=123,
    )
    sweep = FastSweep(exhaustive_sample=args.exhaustive_sample, reps=args.reps, progress=False)
    t0 = time.perf_counter()
    summary = sweep.run(problems, tmp / "fast.msgpack")
    fast_seconds = time.perf_counter() - t0
    stage(f"fast rate: {summary.line()}")

    # 2. Inductor, stock, then with the fast path's flush
    shapes = FIDELITY_SHAPES[: args.inductor_shapes]
    ind_seconds, ind_count = inductor_reference(shapes, args.inductor_sample, args.seed, tmp / "inductor.json")
    stage(f"inductor: {ind_count} timings in {ind_seconds:.1f} s")
    inductor_reference(shapes, args.inductor_sample, args.seed, tmp / "inductor_flush.json", FLUSH_BYTES)
    references = {"stock": load_dataset(tmp / "inductor.json"), "flush": load_dataset(tmp / "inductor_flush.json")}
    rates = {
        "timings_per_gpu_minute": summary.timed_configs / (fast_seconds / 60),
        "inductor_exhaustive_timings_per_gpu_minute": ind_count / (ind_seconds / 60),
    }
    stage(f"rates (written to {args.out} before the comparison): {rates}")
    write_json(args.out, {"command": command_line(), "partial": "rates only", **rates})

    # 3. fast path on the same configs, compared with both references
    results, _ = fast_against(references, args.reps)
    rows, stock_rows = results["flush"], results["stock"]
    fidelity = medians(rows)
    fidelity.update({f"{k}_stock_flush": v for k, v in medians(stock_rows).items()})
    stage("fast timing of the same configs done")

    report = {
        **report_header(),
        **rates,
        **fidelity,
        "flush_bytes": {"fast": FLUSH_BYTES, "inductor_stock": "the device's L2 size", "inductor_flush": FLUSH_BYTES},
        "fast": {
            "problems": summary.problems_measured,
            "timed_configs": summary.timed_configs,
            "failed_configs": summary.failed_configs,
            "seconds": fast_seconds,
            "reps": args.reps,
            "kernels_compiled": summary.kernels_compiled,
            "compile_seconds": summary.compile_seconds,
            "exhaustive_sample": args.exhaustive_sample,
        },
        "inductor": {
            "shapes": len(shapes),
            "timings": ind_count,
            "seconds": ind_seconds,
            "exhaustive_sample_per_shape": args.inductor_sample,
        },
        "per_shape": rows,
        "per_shape_stock_flush": stock_rows,
    }
    report["speedup"] = report["timings_per_gpu_minute"] / report["inductor_exhaustive_timings_per_gpu_minute"]
    write_json(args.out, report)
    print_summary(report, summary.line())
    return 0


def print_summary(report: dict, fast_line: str) -> None:
    print(
        f"\nfast: {report['timings_per_gpu_minute']:.0f} timings/min ({fast_line}); "
        f"inductor EXHAUSTIVE: {report['inductor_exhaustive_timings_per_gpu_minute']:.0f} timings/min; "
        f"speedup {report['speedup']:.1f}x"
    )
    print(
        f"same flush:  spearman_median {report['spearman_median']:.3f}  "
        f"median_abs_rel_diff {report['median_abs_rel_diff']:.3f}"
    )
    print(
        f"stock flush: spearman_median {report['spearman_median_stock_flush']:.3f}  "
        f"median_abs_rel_diff {report['median_abs_rel_diff_stock_flush']:.3f}"
    )


def fast_against(references: dict, reps: int, passes: int = 1) -> tuple[dict[str, list[dict]], dict]:
    """The fast path on every config of the reference datasets (each problem's configs timed
    ``passes`` times, one pass over all problems after the other), compared with each reference,
    per problem, by the fastest of the passes. Also returns the passes' milliseconds per
    (problem, config)."""
    flush = flush_buffer("cuda")
    t0 = time.perf_counter()
    pairs = [
        (p, t.config) for ref in references.values() for _, p, ts in ref.problems() for t in ts if t.config.is_tiled
    ]
    compile_errors = precompile(pairs, FastSweep().workers, progress=False)
    stage(f"fast precompile of the same configs: {len(compile_errors)} kernels in {time.perf_counter() - t0:.1f} s")
    measured: dict[Problem, dict] = {}  # the recorded problem (strides, bias) -> its configs, in order
    for ref in references.values():
        for _, problem, timings in ref.problems():
            measured.setdefault(problem, {}).update(dict.fromkeys(t.config for t in timings))
    fast_ms: dict[tuple, list[float | None]] = {}
    for _ in range(passes):
        for problem, configs in measured.items():
            for c, ms in zip(configs, fast_on(problem, list(configs), reps, flush)):
                fast_ms.setdefault((problem, c), []).append(ms)
    best_ms = {k: min((m for m in v if m is not None), default=None) for k, v in fast_ms.items()}
    results = {}
    for name, ref in references.items():
        results[name] = [
            compare(problem, timings, [best_ms[problem, t.config] for t in timings], compile_errors)
            for _, problem, timings in ref.problems()
        ]
        print(f"\nagainst Inductor, {name} flush:")
        print_rows(results[name])
    return results, fast_ms


def retimed_dataset(reference: Dataset, fast_ms: dict) -> Dataset:
    """``reference``'s problems and configs with the fast path's timings of now (every pass a
    sample; a config no pass could time fails)."""
    out = Dataset()
    out.metadata["sources"].append({"tool": "benchmarks.collector_fidelity", "command": command_line()})
    for hardware, problem, timings in reference.problems():
        fresh = []
        for t in timings:
            samples = tuple(ms * 1000 for ms in fast_ms.get((problem, t.config), []) if ms is not None)
            fresh.append(
                TimedConfig(t.config, min(samples), samples_us=samples) if samples else TimedConfig.failure(t.config)
            )
        out.add(hardware, problem, fresh)
    return out


def medians(rows: list[dict]) -> dict:
    rel = np.concatenate([np.array(r["rel_diffs"]) for r in rows])
    by_template: dict[str, list[float]] = {}
    for r in rows:
        for k, v in r["median_abs_rel_diff_by_template"].items():
            by_template.setdefault(k, []).append(v)
    return {
        "spearman_median": float(np.median([r["spearman"] for r in rows])),
        "spearman_triton_only_median": float(np.median([r["spearman_triton_only"] for r in rows])),
        "median_abs_rel_diff": float(np.median(rel)),
        "p90_abs_rel_diff": float(np.quantile(rel, 0.9)),
        "median_abs_rel_diff_by_template": {k: float(np.median(v)) for k, v in sorted(by_template.items())},
    }


def pass_to_pass(fast_ms: dict) -> dict:
    """How the passes' timings of one config differ: |slowest / fastest - 1| over the configs
    timed in every pass (median, 90th percentile, max, and how many differ by more than 10%)."""
    spreads = [max(v) / min(v) - 1 for v in fast_ms.values() if len(v) > 1 and None not in v]
    if not spreads:
        return {}
    a = np.array(spreads)
    return {
        "configs": len(a),
        "median": float(np.median(a)),
        "p90": float(np.quantile(a, 0.9)),
        "max": float(a.max()),
        "over_10_percent": int((a > 0.1).sum()),
    }


def recorded(args: argparse.Namespace) -> int:
    """Step 3 alone, against recorded timings: stock max-autotune's, or the fast path's own as collected."""
    reference = load_datasets(args.recorded)
    if args.misaligned_only:
        reference = reference.subset(lambda _, problem: bool(problem.misaligned_operands))
    results, fast_ms = fast_against({"stock": reference}, args.reps, args.passes)
    rows = results["stock"]
    if args.retimed_out:
        save_dataset(retimed_dataset(reference, fast_ms), args.retimed_out)
        stage(f"the same problems timed again: {args.retimed_out}")
    report = {
        **report_header(),
        "reference": args.recorded,
        "misaligned_only": args.misaligned_only,
        "passes": args.passes,
        "pass_to_pass": pass_to_pass(fast_ms),
        "flush_bytes": {"fast": FLUSH_BYTES, "inductor": "the device's L2 size (stock)"},
        **medians(rows),
        "per_shape": rows,
    }
    write_json(args.out, report)
    print("\nper template, median over problems of the median |fast - inductor| / inductor:")
    for k, v in report["median_abs_rel_diff_by_template"].items():
        print(f"  {k:32s} {v:.3f}")
    print(
        f"spearman_median {report['spearman_median']:.3f}  "
        f"spearman_triton_only_median {report['spearman_triton_only_median']:.3f}"
    )
    if report["pass_to_pass"]:
        print(f"pass to pass |slowest / fastest - 1|: {report['pass_to_pass']}")
    return 0


def print_rows(rows) -> None:
    print(
        f"\n{'problem':34s} {'n':>4s} {'spearman':>8s} {'tri-only':>8s} {'med|rel|':>8s} "
        f"{'ind best':>9s} {'fast best':>9s} {'pick slowdown':>13s}  aten (ind/fast us)"
    )
    for r in rows:
        aten = ", ".join(f"{a['template_id'][6:]} {a['inductor_us']:.1f}/{a['fast_us']:.1f}" for a in r["aten"])
        print(
            f"{r['problem']:34s} {r['choices_compared']:4d} {r['spearman']:8.3f} "
            f"{r['spearman_triton_only']:8.3f} {r['median_abs_rel_diff']:8.3f} "
            f"{r['inductor_best_us']:9.1f} {r['fast_best_us']:9.1f} "
            f"{r['fast_choice_of_inductor_best_slowdown']:13.3f}  {aten}"
        )


if __name__ == "__main__":
    sys.exit(main())

"""End to end on the GPU: compile time and kernel speed of diode against stock Inductor.

For every GEMM of ``--shapes`` (default: the real-models held-out shapeset realmodels_heldout, one
GEMM of each of its 42 models drawn with ``--seed``, in shuffled order; or a shapes file such as
benchmarks/e2e_shapes.json; the script refuses any GEMM that the training data holds; ``--part
I/N`` with ``--only gemms`` measures one of N slices of them, runs that ``--combine`` joins) and
every model (a decoder transformer block at prefill and at decode, a ViT-B block, an MLP), in one
process:

  default        torch.compile, no autotuning (ATen for every GEMM)
  diode_top1     default mode + Inductor's GEMM path with diode's choice handler, top_k_configs=1
                 (nothing is benchmarked unless the model is unsure, then unsure_top_k)
  diode_top3     the same with top_k_configs=3 (Inductor benchmarks the three)
  max_autotune   stock max-autotune: max_autotune=True, backends ATEN,TRITON, DEFAULT space
  exhaustive     stock max-autotune with the EXHAUSTIVE space (entries marked "exhaustive" only)
  diode_max_autotune_mode
                 as the torch.compile integration guide compiles: mode="max-autotune" (CUDA graphs,
                 coordinate-descent tuning, every non-GEMM kernel autotuned) with
                 max_autotune_gemm_backends="DIODE", fast_autotune=True and diode's handler at
                 top_k_configs=1; only with --methods naming it. Against diode_top1 it gives the
                 compile time Inductor spends autotuning everything but the GEMMs. Its compiled
                 function replays CUDA graphs of its own, which do_bench_cudagraph cannot capture,
                 so ``runtime_us`` is do_bench's figure for this method.

Each measurement starts cold: Dynamo reset, Inductor's caches off (force_disable_caches). The
methods run in worker processes, one after the other, each in empty Triton and Inductor cache
directories made for it: diode_top1; default + max_autotune + exhaustive; diode_top3;
diode_max_autotune_mode (``--methods`` picks the methods; its default is every one but the last). So no
method finds kernels another compiled, and stock autotuning never runs in a process where diode's
handler is installed. TORCH_DIODE_NO_AUTOREGISTER=1 keeps the import from registering the
shipped model: diode decides only where a diode method installs it.
Each worker first compiles a small throwaway GEMM followed by a ReLU (CUDA, Inductor, the Triton
compiler and Inductor's compile workers start up, as in any real model's compile) and waits for
Inductor's worker pool, which compiles every kernel after it, so the first item measured compiles
on a running pool as every later one does. Compile
time is the wall time of the first call; one compile of a model varies by a few tenths of a second
between processes, so ``--compile-repeats N`` (with ``--only models``) compiles the models N times
with default mode and diode_top1, each time in a worker of its own (empty cache directories) in alternating
order, and reports the median as ``compile_s`` (every time in ``compile_s_repeats``; the runtimes
are the first worker's that compiled the model). Runtime
(``runtime_us``, the summary's ratios) is
``triton.testing.do_bench_cudagraph`` of the compiled function: its median over replays of a CUDA
graph, the way mode="max-autotune" runs compiled functions, so it is the kernels' time. The graph
calls it on several copies of the inputs in turn (``input_copies``: together over twice the L2
cache; ``input_copies`` in the row says how many), so each call reads its operands from memory as
a layer of a model does; a model's weights are its own and not copied. A worker of any method
but default mode (and the guide's mode) also compiles default mode's graph of each item after the
method's, in a frame of its own, and times the two alternately (``default_runtime_us``,
benchmarks.common.paired_cudagraph_us); the summary takes a runtime over default mode's through
that paired timing, and two methods' as the quotient of their ratios to it, so that runs joined
from other processes or machines compare (default mode's and the guide's mode's rows, which hold
no paired timing, compare by their own times).
``runtime_cudagraph_warm_l2_us`` is the same replayed on one copy: operands that fit in L2 stay
there, and for those that nearly fill it the figure depends on where in memory they lie
(benchmarks/studies/l2_residency.py, benchmarks/results/l2_residency_h200.log).
``runtime_do_bench_us`` (summary keys ``*_do_bench``) is the plain ``triton.testing.do_bench``
median (same warm-up and repetitions for every method), beside ``wall_us_per_call``: do_bench times
one host call after a cache flush, and where the host's cost of calling a compiled function
exceeds the flush its figure is the host's, not the kernel's (the report's rows show both). A
worker that outlives its time limit is stopped, and the items it finished go into the report. The
report is written after each worker (``complete``: false until the last one ends), so a run stopped
between two holds the finished workers' rows; the results table takes only a complete report.
``--combine`` joins reports of one device, torch, Triton and model whose rows are timed the same
way: over copies of the inputs (``input_copies`` in each row) or on one copy (no ``input_copies``).

Each measurement also records ``pad_mm`` (benchmarks/pad_mm.py): what Inductor's shape-padding
pass (torch/_inductor/fx_passes/pad_mm.py) did during the compile, which can make a row slower under
one method than another although both pick the same kernel (M=199 padded to 200 adds a pad
kernel and runs the GEMM at M=200). ``counters``: the compile's increments of ``torch._dynamo.utils.counters
["inductor"]`` (``pad_mm_bench``: padded and unpadded GEMMs benchmarked against each other, not
bumped where the decision came from the pass's cache); ``gemms``: each GEMM of the post-grad
graph, its operands' shapes and whether one is padded (made by ``constant_pad_nd``);
``padded_gemms``; ``cached_decisions`` and ``cached_base_mm_ms``: what the pass wrote into its
on-disk cache (TORCHINDUCTOR_CACHE_DIR/cache/<system hash>, shared by every compile of the
worker). pad_mm's decision is Inductor's own benchmark of padded against unpadded GEMM, taken
ahead of any kernel choice and noisy near its 1.1x margin: two processes can decide differently
on the same GEMM, and a padded M=199 can take 1.3x the unpadded one's time
(benchmarks/results/pad_mm_falcon_h100.log). So that a row
compares kernel choices, not two draws of that benchmark, the workers share one decision per
GEMM, taken by an unmeasured pass that runs ahead of them and compiles every item once in default
mode: each worker starts with the pad_mm entries that pass wrote and finds every decision in
the cache (``pad_mm_bench`` 0), so no method's compile time holds the pad_mm benchmark, which a
user pays alike in every mode. Where something
is unavailable, the key is missing or ``error`` says why; the row never fails for it.

    python -m benchmarks.e2e --out $OUT/e2e_h100.json --plot $OUT/e2e_h100.png

Shapes file: a JSON list of objects with op (mm, addmm, bmm, baddbmm), B, M, N, K, dtype,
optional label, transpose_a, transpose_b, exhaustive.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Diode acts only where this script installs it: the import registers no shipped model, so the
# stock methods compile with stock Inductor on every GPU.
os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"

import torch  # noqa: E402

from benchmarks.common import (  # noqa: E402
    DIODE_SETTINGS,
    REP_MS,
    SHAPES,
    WARM_UP,
    WARMUP_MS,
    bench_cudagraph_us,
    bench_us,
    input_copies,
    load_shapes,
    paired_cudagraph_us,
    reference_call,
    report_header,
    run_worker,
    stage,
    timed_first_call,
    wait_for_compile_pool,
    wall_us_per_call,
    warm_up_function,
    write_json,
)
from benchmarks.e2e_models import models  # noqa: E402
from benchmarks.e2e_report import (  # noqa: E402
    GUIDE_MODE,
    METHODS,
    RUNTIME,
    combine,
    finish,
    merge_compile_repeats,
    part_arg,
    part_of,
    write_e2e_report,
)
from benchmarks.pad_mm import load_pad_decisions, pad_mm_facts, save_pad_decisions  # noqa: E402
from torch_diode import config as diode_config  # noqa: E402
from torch_diode.collection.inductor_sweep import inductor_settings, make_inputs, op_function  # noqa: E402
from torch_diode.dataset_io import load_datasets  # noqa: E402
from torch_diode.integration.install import diode_choices  # noqa: E402
from torch_diode.types import problem_key  # noqa: E402

logger = logging.getLogger(__name__)

WORKERS = (("diode_top1",), ("default", "max_autotune", "exhaustive"), ("diode_top3",), ("diode_max_autotune_mode",))
DEFAULT_METHODS = METHODS[:-1]
PAD_PASS_LIMIT_S = 240  # the pad_mm pass: every item compiled once in default mode
REPEATED = ("diode_top1", "default")  # the methods whose models' compile time --compile-repeats repeats


# diode's handler settings in the diode methods (top_k_configs: the method's), and the Inductor
# settings of the guide's mode (mode="max-autotune" with diode as the only GEMM backend)
DIODE_HANDLER_SETTINGS: dict[str, Any] = {"performance_threshold": 1.0}
DIODE_STATS = (  # the handler's stats a diode method's row records
    "total_calls",
    "model_selections",
    "fallbacks",
    "configs_filtered",
    "unsure_widened",
    "unsure_benchmarked",
    "extern_preferred",
    "extern_added",
    "decision_seconds",
)
GUIDE_SETTINGS: dict[str, Any] = {"max_autotune_gemm_backends": "DIODE", "fast_autotune": True}


# ----- one measurement --------------------------------------------------------------------------
def method_settings(method: str) -> dict[str, Any]:
    """The Inductor settings ``method`` compiles with (caches off for every one)."""
    settings: dict[str, Any] = {"force_disable_caches": True}
    if method in ("max_autotune", "exhaustive"):
        settings.update(inductor_settings("DEFAULT" if method == "max_autotune" else "EXHAUSTIVE", "ATEN,TRITON"))
    elif method == GUIDE_MODE:
        from torch_diode.inductor.settings import add_settings

        add_settings()  # the guide's settings (this script imports torch_diode without registration)
        settings.update(GUIDE_SETTINGS)
    elif method.startswith("diode"):
        settings.update(DIODE_SETTINGS)
    return settings


def measure(fn: Callable, inputs: tuple, method: str, model: str) -> dict[str, Any]:
    """Cold compile + first call (with the handler's stats for a diode method), then the compiled
    function's runtimes (:func:`runtimes`)."""
    torch._dynamo.reset()
    from torch._inductor import config as inductor_config

    compiled = torch.compile(fn, dynamic=False, mode="max-autotune" if method == GUIDE_MODE else None)
    record: dict[str, Any] = {}

    def first_call() -> None:
        """The compile: wall seconds of the first call, and what pad_mm did in it."""
        with pad_mm_facts() as pad_mm:
            record["compile_s"] = timed_first_call(compiled, *inputs)
        record["pad_mm"] = pad_mm

    with inductor_config.patch(method_settings(method)), torch.no_grad():
        if method.startswith("diode"):
            k = 3 if method == "diode_top3" else 1
            with diode_choices(model) as choices, diode_config.patch(top_k_configs=k, **DIODE_HANDLER_SETTINGS):
                first_call()
                stats = choices.get_stats()
            record["diode"] = {k2: stats[k2] for k2 in DIODE_STATS}
            record["diode"]["decisions"] = list(choices.decisions)
        else:
            first_call()
    # another method is timed beside default mode's graph of the same work, compiled after it here
    reference = default_reference(fn, inputs) if method not in ("default", GUIDE_MODE) else None
    with torch.no_grad():
        record.update(runtimes(compiled, inputs, method, reference))
    return record


def default_reference(fn: Callable, inputs: tuple) -> Callable:
    """``fn`` compiled in default mode in a frame of its own (benchmarks.common.reference_call),
    by its first call here: the graph a method's runtime is paired with."""
    from torch._inductor import config as inductor_config

    compiled = torch.compile(reference_call, dynamic=False)

    def reference(*args: Any) -> Any:
        return compiled(fn, *args)

    with inductor_config.patch(method_settings("default")), torch.no_grad():
        reference(*inputs)
    return reference


def runtimes(compiled: Callable, inputs: tuple, method: str, reference: Callable | None) -> dict[str, Any]:
    """do_bench's figure, the CUDA-graph replays over input copies (paired with ``reference``'s,
    ``default_runtime_us``, where there is one) and on one copy, and the wall time per call."""
    record: dict[str, Any] = {"runtime_do_bench_us": bench_us(lambda: compiled(*inputs))}
    try:
        copies = input_copies(inputs)
        record["input_copies"] = len(copies)
        if reference is None:
            record["runtime_cudagraph_us"] = bench_cudagraph_us(compiled, copies)
        else:
            record["runtime_cudagraph_us"], record["default_runtime_us"] = paired_cudagraph_us(
                compiled, reference, copies
            )
        record["runtime_cudagraph_warm_l2_us"] = bench_cudagraph_us(compiled, [inputs])
        del copies
    except Exception as e:  # reported; the row then has runtime_do_bench_us, no runtime_us
        record["runtime_cudagraph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    if "runtime_cudagraph_us" in record:  # never a do_bench figure: ratios compare like with like
        record["runtime_us"] = record["runtime_cudagraph_us"]
    elif method == GUIDE_MODE:  # compiled with CUDA graphs: do_bench replays them (module docstring)
        record["runtime_us"] = record["runtime_do_bench_us"]
    try:
        record["wall_us_per_call"] = wall_us_per_call(lambda: compiled(*inputs))
    except Exception as e:
        record["wall_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    return record


def run_item(kind: str, label: str, fn: Callable, inputs: tuple, methods: list[str], model: str) -> dict[str, Any]:
    row: dict[str, Any] = {"kind": kind, "label": label, "methods": {}}
    for method in methods:
        try:
            row["methods"][method] = measure(fn, inputs, method, model)
        except Exception as e:  # a failed measurement is reported, the run goes on
            row["methods"][method] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        m = row["methods"][method]
        stage(
            f"{label:52s} {method:12s} "
            + (
                f"compile {m['compile_s']:7.2f} s  runtime {m.get('runtime_us', math.nan):9.1f} us  "
                f"do_bench {m['runtime_do_bench_us']:9.1f} us  wall/call {m.get('wall_us_per_call', math.nan):8.1f} us"
                if "error" not in m
                else m["error"]
            )
        )
    return row


# ----- the workers and the run ------------------------------------------------------------------
def worker(args: argparse.Namespace) -> int:
    """Measures ``args.worker`` methods on every item, rewriting ``args.out`` after each."""
    methods = args.worker.split(",")
    shapes = part_of(load_shapes(args.shapes, args.per_model, args.seed), args.part)
    rows: list[dict] = []

    pad_decisions = Path(args.pad_decisions) if args.pad_decisions else None
    if pad_decisions:
        load_pad_decisions(pad_decisions)

    def save() -> None:
        write_json(args.out, rows)
        if pad_decisions:
            save_pad_decisions(pad_decisions)

    if args.pad_pass:
        # every item compiled once in default mode: pad_mm decides, the workers after it read it
        gemms = () if args.only == "models" else ((op_function(p.op), make_inputs(p, "cuda")) for _, p, _ in shapes)
        whole = () if args.only == "gemms" else ((module, inputs) for _, module, inputs in models("cuda"))
        for fn, inputs in itertools.chain(gemms, whole):  # one item's inputs on the GPU at a time
            torch._dynamo.reset()
            with torch.no_grad():
                torch.compile(fn, dynamic=False)(*inputs)
            save()
        return 0
    run_item(
        "warm-up",
        "warm-up (not reported)",
        warm_up_function(),
        make_inputs(WARM_UP, "cuda"),
        [m for m in methods if m not in ("max_autotune", "exhaustive")] or ["default"],
        args.model,
    )
    wait_for_compile_pool()
    if args.only != "models":
        for label, problem, exhaustive in shapes:
            todo = [m for m in methods if m != "exhaustive" or (exhaustive and not args.no_exhaustive)]
            row = run_item("gemm", label, op_function(problem.op), make_inputs(problem, "cuda"), todo, args.model)
            row["problem"] = problem.to_dict()
            rows.append(row)
            save()
    if args.only != "gemms":
        for label, module, inputs in models("cuda"):
            rows.append(run_item("model", label, module, inputs, [m for m in methods if m != "exhaustive"], args.model))
            save()
    save()
    return 0


def worker_plan(args: argparse.Namespace, limits: list[float]) -> list[tuple[tuple[str, ...], float, str | None]]:
    """The workers in order, each as (methods, time limit, --only): the pad_mm pass, the methods'
    workers, then --compile-repeats' extra rounds (models only, diode_top1 and default in
    alternating order, each worker in empty cache directories). With repeats, default mode has a worker of
    its own in the first round too, so that every round compiles alike, each default-mode
    compile in a worker where no other method compiled the models first."""
    plan: list[tuple[tuple[str, ...], float, str | None]] = [(("pad_mm",), PAD_PASS_LIMIT_S, args.only)]
    for worker_methods, limit in zip(WORKERS, limits):
        methods = tuple(m for m in worker_methods if m in args.methods)
        alone = tuple(m for m in methods if m in REPEATED) if args.compile_repeats > 1 else ()
        rest = tuple(m for m in methods if m not in alone)
        plan += [((m,), limit, args.only) for m in alone] + ([(rest, limit, args.only)] if rest else [])
    limit_of = {m: limit for worker_methods, limit in zip(WORKERS, limits) for m in worker_methods}
    repeated = [m for m in REPEATED if m in args.methods]
    for round_ in range(1, args.compile_repeats):
        for method in repeated[::-1] if round_ % 2 else repeated:
            plan.append(((method,), limit_of[method], "models"))
    return plan


def command_line_parser() -> argparse.ArgumentParser:
    """The command line (``--worker``, ``--pad-decisions`` and ``--pad-pass`` are a worker's, not shown)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--shapes",
        default="realmodels_heldout",
        help=f"a shapeset (shipped name or file) or a JSON list of GEMMs such as {SHAPES.name} (default: %(default)s)",
    )
    parser.add_argument(
        "--per-model", type=int, default=1, help="GEMMs of each model of a shapeset (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="draw of --per-model and the order (default: %(default)s)")
    parser.add_argument(
        "--part",
        type=part_arg,
        metavar="I/N",
        help="measure only the I-th of N equal slices of the drawn GEMMs, with --only gemms (the runs of "
        "--part 1/N .. N/N, joined by --combine, measure the GEMMs of one run without --part)",
    )
    parser.add_argument("--model", default="NVIDIA-H100-matmul", help="diode model name or file")
    parser.add_argument(
        "--train-data",
        nargs="*",
        default=[str(SHAPES.parents[1] / "data" / "h100" / "train")],
        help="training data the shapes must not be in (none: skip the check)",
    )
    parser.add_argument("--only", choices=["gemms", "models"], help="measure only the GEMMs or only the models")
    parser.add_argument("--no-exhaustive", action="store_true", help="skip the EXHAUSTIVE measurements")
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS,
        default=list(DEFAULT_METHODS),
        help=f"methods to measure (default: all but {GUIDE_MODE})",
    )
    parser.add_argument(
        "--time-limits",
        type=float,
        nargs="+",
        default=(120, 420, 240, 330),
        metavar="S",
        help=f"seconds for the diode_top1, stock, diode_top3 and {GUIDE_MODE} workers "
        f"(default 120 420 240 330; with three values the {GUIDE_MODE} worker gets 330)",
    )
    parser.add_argument(
        "--compile-repeats",
        type=int,
        default=1,
        metavar="N",
        help="with --only models: compile each model N times with default mode and diode_top1, each in a "
        "worker of its own in empty cache directories, in alternating order; compile_s is the median "
        "(default: %(default)s)",
    )
    parser.add_argument("--out", required=True, help="JSON report")
    parser.add_argument("--plot", help="PNG of runtime vs compile time")
    parser.add_argument(
        "--combine",
        nargs="+",
        metavar="REPORT",
        help="join the reports of several runs (e.g. --only gemms and --only models) into --out; measures nothing",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--pad-decisions", help=argparse.SUPPRESS)
    parser.add_argument("--pad-pass", action="store_true", help=argparse.SUPPRESS)
    return parser


def check_shapes(args: argparse.Namespace, part: str | None) -> None:
    """Refuses a draw (its slice ``part``) with no GEMM, or holding a problem of ``--train-data``."""
    shapes = part_of(load_shapes(args.shapes, args.per_model, args.seed), args.part)
    if part and not shapes:
        raise SystemExit(f"--part {part}: the draw has fewer GEMMs than parts")
    if args.train_data:
        train = load_datasets(args.train_data)
        seen = {problem_key(p) for _, p, _ in train.problems()}
        leaked = [label for label, p, _ in shapes if problem_key(p) in seen]
        if leaked:
            raise SystemExit(f"{args.shapes}: these problems are in the training data, not held out: {leaked}")


def report_head(args: argparse.Namespace, part: str | None) -> dict[str, Any]:
    """The report's head, which every worker's rows join: the command, device, versions, settings and the draw."""
    return {
        **report_header(),
        "model": args.model,
        "runtime": RUNTIME,
        "do_bench": {"warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "return_mode": "median"},
        "settings": {
            "max_autotune": inductor_settings("DEFAULT", "ATEN,TRITON"),
            "exhaustive": inductor_settings("EXHAUSTIVE", "ATEN,TRITON"),
            "diode": {
                **DIODE_SETTINGS,
                "candidate_pool": diode_config.candidate_pool,
                **DIODE_HANDLER_SETTINGS,
                "unsure_top_k": diode_config.unsure_top_k,
            },
            GUIDE_MODE: {"mode": "max-autotune", **GUIDE_SETTINGS, "top_k_configs": 1},
        },
        "pad_mm": "decided once per GEMM by a default-mode pass ahead of the measured workers, shared by every method",
        "shapes": {"shapes": args.shapes, "per_model": args.per_model, "seed": args.seed}
        | ({"part": part} if part else {}),
        "methods": list(args.methods),
        "workers": [],
        "rows": [],
    }


def run_workers(args: argparse.Namespace, report: dict[str, Any], part: str | None, limits: list[float]) -> list[dict]:
    """Runs the workers of ``worker_plan`` one after the other, the pad_mm pass first (its decisions
    handed to every worker after it); the rows they wrote. ``report`` gets each worker's exit status,
    seconds and items, and is written to ``args.out`` after each (``complete``: false)."""
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="e2e_pad_mm_") as pad_dir:
        pad_decisions = Path(pad_dir) / "decisions.json"
        for worker_methods, limit, only in worker_plan(args, limits):
            pad_pass = worker_methods == ("pad_mm",)
            worker_args = (
                ["--worker", "default" if pad_pass else ",".join(worker_methods), "--shapes", args.shapes]
                + ["--model", args.model]
                + ["--per-model", str(args.per_model), "--seed", str(args.seed)]
                + (["--part", part] if part else [])
                + (["--only", only] if only else [])
                + (["--no-exhaustive"] if args.no_exhaustive else [])
                + ["--pad-decisions", str(pad_decisions)]
                + (["--pad-pass"] if pad_pass else [])
            )
            stage(f"worker {'pad_mm pass' if pad_pass else ','.join(worker_methods)} (limit {limit:.0f} s)")
            done, code, seconds = run_worker("e2e", worker_args, limit)
            if pad_pass:
                report["pad_mm_pass"] = {"exit": code, "seconds": seconds}
                continue
            report["workers"].append(
                {"methods": list(worker_methods), "exit": code, "seconds": seconds, "items": len(done)}
                | ({"only": only} if only != args.only else {})
            )
            rows.extend(done)
            write_e2e_report(report, merge_compile_repeats(rows), args.out, complete=False)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = command_line_parser().parse_args(argv)
    if args.combine:
        return combine(args)
    if not torch.cuda.is_available():
        raise SystemExit("e2e.py measures on a CUDA GPU; none is available here (--combine needs none)")
    if args.worker:
        return worker(args)

    if args.compile_repeats < 1 or (args.compile_repeats > 1 and args.only != "models"):
        raise SystemExit("--compile-repeats: give N >= 1; it repeats the models' compiles: give --only models")
    part = "/".join(map(str, args.part)) if args.part else None
    if part and args.only != "gemms":
        raise SystemExit("--part slices the GEMMs: give --only gemms (and measure the models in a run of their own)")
    check_shapes(args, part)
    report = report_head(args, part)
    if len(args.time_limits) not in (3, 4):
        raise SystemExit(f"--time-limits: give 3 or 4 values, got {len(args.time_limits)}")
    limits = list(args.time_limits) + [330.0] * (len(WORKERS) - len(args.time_limits))
    if args.compile_repeats > 1:
        report["compile_repeats"] = args.compile_repeats
    return finish(report, merge_compile_repeats(run_workers(args, report, part, limits)), args)


if __name__ == "__main__":
    sys.exit(main())

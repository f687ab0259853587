"""End to end on the GPU with dynamic sizes: one graph per GEMM serving every size a serving stack
runs, compiled by default mode, diode and stock max-autotune, timed at each size.

Items: one nn.Linear-style GEMM (weights static, the rows dynamic) of each held-out public model
of the shapeset realmodels_heldout that has mm/addmm GEMMs (``--per-model``, drawn with
``--seed``; ``--gemms`` of them), the attention scores q @ k^T of the first ``--attention`` models
drawn with one (a bmm over batch x heads, both operands activations: the token count is the rows
of q and of k, and under ``dynamic=True`` the batch and the head size are symbols too), and a
decoder block (benchmarks.e2e_models.DecoderBlock) over a dynamic token count.
Each is compiled both ways users get a dynamic graph: ``dynamic`` (``torch.compile(dynamic=True)``,
first called at ``--hint`` rows) and ``automatic`` (plain ``torch.compile``, called at ``--hint``
rows and then at another size: the second call recompiles the graph with dynamic sizes). Then the
compiled function runs every size of ``--sizes`` (decode batches 1-256 and prefill token counts
16-8,192 by default, odd counts included); a size of 1 compiles a graph of its own (torch.compile's
0/1 specialisation), counted in ``recompiles``.

Methods, each in a worker process of its own with new Triton and Inductor caches:
  default        torch.compile, no autotuning (cuBLAS for every GEMM, chosen per call)
  diode          default mode + Inductor's GEMM path with diode's handler (top_k_configs=1): the
                 dynamic decision of torch_diode.selection.dynamic
  max_autotune   stock max-autotune (ATEN,TRITON, DEFAULT space): benchmarks at the hint, one
                 kernel for every size
  max_autotune_hints  max_autotune with Inductor's size-hint multi-kernel dispatch
                 (``multi_kernel_hints`` = MULTI_KERNEL_HINTS): where the hint's fastest choice is
                 a Triton kernel, the fastest Triton kernel at each of these sizes too, the one
                 nearest the run's size (log2 distance) running at each call

Runtime per size is ``do_bench_cudagraph``'s median over input copies (benchmarks.common). The
diode and max-autotune workers also compile default mode's graph of each item in their process and
time it at each size alternately with their own, PAIRED_ROUNDS times (``default_runtime_us``, the
median as ``runtime_us`` is): their ratios to default mode are of timings interleaved within a
second, not of two processes' (clocks drift a few percent between them), and diode's over
max-autotune's is the quotient of their ratios to default mode. Compile time is the
wall time of the call that compiled the dynamic graph (the first for ``dynamic``, the second for
``automatic``). The summary holds, over every item and size, diode's runtime over default mode's
and over max-autotune's (worst, geomean) and the compile time ratios per dynamic graph.

    python -m benchmarks.e2e_dynamic --model NVIDIA-H100-matmul --out $OUT/e2e_dynamic_h100.json

``--combine A.json B.json --out C.json`` joins the reports of runs that measured the same items at
the same sizes and hint with other methods (``--methods default diode`` in one call, ``--methods
max_autotune`` in the next: the three workers take longer than one call of a lent GPU), on one
device, torch, Triton and model; a (item, way, method) measured twice is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from typing import Any

os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"  # diode acts only where this script installs it

import torch  # noqa: E402
from torch import nn  # noqa: E402

from benchmarks.common import (  # noqa: E402
    DIODE_SETTINGS,
    PAIRED_ROUNDS,
    WARM_UP,
    bench_cudagraph_us,
    combinable_reports,
    command_line,
    geomean,
    input_copies,
    load_shapes,
    paired_cudagraph_us,
    reference_call,
    report_header,
    run_worker,
    runtime_over_default,
    stage,
    timed_first_call,
    wait_for_compile_pool,
    warm_up_function,
    write_json,
)
from benchmarks.e2e_models import DecoderBlock  # noqa: E402
from torch_diode.collection.inductor_sweep import inductor_settings, make_inputs  # noqa: E402
from torch_diode.integration.install import diode_choices  # noqa: E402

logger = logging.getLogger(__name__)

DEVICE = "cuda"
METHODS = ("default", "diode", "max_autotune", "max_autotune_hints")
MULTI_KERNEL_HINTS = [64, 256, 4096]  # the value torch._inductor.config suggests for multi_kernel_hints
WAYS = ("dynamic", "automatic")
DECODE_SIZES = (1, 2, 3, 8, 17, 64, 256)
PREFILL_SIZES = (16, 77, 333, 1000, 2048, 4096, 8192)
# input copies per size (benchmarks.common.input_copies): enough to leave the L2 cold for the
# weights-bound decode sizes, few enough that a size is timed in a fraction of a second
MAX_COPIES = 8
SECOND_SIZE = 333  # automatic dynamic shapes: the call after the hint's, which recompiles dynamic


class Gemm(nn.Module):
    """One GEMM of a model's layer: the weights (and bias) static parameters, the rows dynamic."""

    def __init__(self, problem: Any):
        super().__init__()
        inputs = make_inputs(problem, DEVICE)
        bias, _, w = inputs if problem.op == "addmm" else (None, *inputs)
        self.w = nn.Parameter(w, requires_grad=False)
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)
        self.k, self.dtype, self.transpose_a = problem.K, getattr(torch, problem.dtype_a), problem.transpose_a

    def rows(self, m: int) -> tuple[torch.Tensor]:
        """The activation of ``m`` rows, laid out as the problem's A."""
        if self.transpose_a:
            return (torch.randn(self.k, m, device=DEVICE, dtype=self.dtype).t(),)
        return (torch.randn(m, self.k, device=DEVICE, dtype=self.dtype),)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.w) if self.bias is None else torch.addmm(self.bias, x, self.w)


class AttentionScores(nn.Module):
    """Attention scores q @ k^T of a model's layer (a bmm, B stored transposed: k's view)."""

    def __init__(self, problem: Any):
        super().__init__()
        self.b, self.d, self.dtype = problem.B, problem.K, getattr(torch, problem.dtype_a)

    def rows(self, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """q and k of ``m`` tokens."""
        return tuple(torch.randn(self.b, m, self.d, device=DEVICE, dtype=self.dtype) for _ in range(2))

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.bmm(q, k.transpose(1, 2))


class Decoder(nn.Module):
    """benchmarks.e2e_models.DecoderBlock over one sequence of a dynamic token count."""

    def __init__(self):
        super().__init__()
        self.block = DecoderBlock().to(DEVICE, torch.bfloat16).eval()

    def rows(self, m: int) -> tuple[torch.Tensor]:
        return (torch.randn(1, m, 2048, device=DEVICE, dtype=torch.bfloat16),)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


def module_of(problem: Any) -> nn.Module:
    """The module an item of :func:`items` compiles."""
    if problem is None:
        return Decoder()
    return AttentionScores(problem) if problem.op == "bmm" else Gemm(problem)


def items(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """(label, the problem, or None for the decoder block) of each item: layers' forward GEMMs
    (activation rows x weights), whose rows are the tokens or the batch, then attention scores."""
    shapes = load_shapes(args.shapes, args.per_model, args.seed)
    linear = [
        (label, p) for label, p, _ in shapes if p.op in ("mm", "addmm") and not p.transpose_a and "grad" not in label
    ]
    scores = [
        (label, p)
        for label, p, _ in shapes
        if p.op == "bmm" and p.transpose_b and not p.transpose_a and "q @ k^T" in label and p.M == p.N
    ]
    out: list[tuple[str, Any]] = linear[: args.gemms] + scores[: args.attention]
    if args.decoder:
        out.append(("decoder block, 1 sequence (bf16)", None))
    return out


def settings_of(method: str) -> dict[str, Any]:
    settings: dict[str, Any] = {"force_disable_caches": True}
    if method == "diode":
        settings.update(DIODE_SETTINGS)
    elif method in ("max_autotune", "max_autotune_hints"):
        settings.update(inductor_settings("DEFAULT", "ATEN,TRITON"))
        if method == "max_autotune_hints":
            settings["multi_kernel_hints"] = MULTI_KERNEL_HINTS
    return settings


def unique_graphs() -> int:
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def compile_calls(compiled: Any, module: nn.Module, way: str, sizes: list[int], hint: int) -> dict[str, Any]:
    """The calls that compile ``compiled`` ``way`` (the hint's, then for ``automatic`` another
    size's), then one call at each size (a size of 1 compiles a graph of its own): the first
    call's wall seconds, the dynamic graph's compile seconds, the graphs compiled and how many of
    them the sizes' calls compiled."""
    before = unique_graphs()
    first = timed_first_call(compiled, *module.rows(hint))
    second = timed_first_call(compiled, *module.rows(SECOND_SIZE)) if way == "automatic" else None
    calls = unique_graphs()
    for m in sizes:
        compiled(*module.rows(m))
    graphs = unique_graphs()
    compile_s = first if way == "dynamic" else second
    return {"compile_s": compile_s, "first_call_s": first, "graphs": graphs - before, "recompiles": graphs - calls}


def measure(module: nn.Module, method: str, way: str, sizes: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """Compile ``module`` one ``way`` with ``method``, then its runtime at every size. Another
    method's worker also compiles default mode's graph in its process and times it at each size
    alternately with the method's, PAIRED_ROUNDS times (``default_runtime_us``): the ratio to
    default mode compares timings of the same second, clock and temperature."""
    from torch._inductor import config as inductor_config

    torch._dynamo.reset()
    dynamic = True if way == "dynamic" else None
    compiled = torch.compile(module, dynamic=dynamic)
    record: dict[str, Any] = {"runtime_us": {}}
    diode = diode_choices(args.model) if method == "diode" else contextlib.nullcontext()
    with inductor_config.patch(settings_of(method)), torch.no_grad(), diode as choices:
        record.update(compile_calls(compiled, module, way, sizes, args.hint))
        if choices is not None:
            stats = choices.get_stats()
            record["diode"] = {k: stats[k] for k in ("model_selections", "dynamic_decisions", "dynamic_kept_aten")}
            record["diode"]["fallbacks"] = stats["fallbacks"]
            record["diode"]["decisions"] = list(choices.decisions)
    reference: Any = None
    if method != "default":
        compiled_reference = torch.compile(reference_call, dynamic=dynamic)

        def reference(*inputs: torch.Tensor) -> torch.Tensor:
            return compiled_reference(module, *inputs)

        with inductor_config.patch(settings_of("default")), torch.no_grad():
            compile_calls(reference, module, way, sizes, args.hint)
        record["default_runtime_us"] = {}
    with torch.no_grad():
        for m in sizes:
            copies = input_copies(module.rows(m), max_copies=MAX_COPIES)
            if reference is None:
                record["runtime_us"][str(m)] = bench_cudagraph_us(compiled, copies)
            else:
                own, ref = paired_cudagraph_us(compiled, reference, copies)
                record["runtime_us"][str(m)], record["default_runtime_us"][str(m)] = own, ref
    return record


def worker(args: argparse.Namespace) -> int:
    method = args.worker
    rows: list[dict] = []
    timed_first_call(torch.compile(warm_up_function()), *make_inputs(WARM_UP, DEVICE))
    wait_for_compile_pool()
    for label, problem in items(args):
        module = module_of(problem)
        sizes = [s for s in args.sizes if problem is not None or s <= args.decoder_max_tokens]
        for way in WAYS:
            try:
                record = measure(module, method, way, sizes, args)
            except Exception as e:  # kept: the row says why
                record = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            rows.append({"label": label, "way": way, "method": method, **record})
            write_json(args.out, rows)
        del module
        torch.cuda.empty_cache()
    write_json(args.out, rows)
    return 0


def _over_default(row: dict, default: dict | None) -> dict[str, float]:
    """A row's runtime over default mode's per size (:func:`benchmarks.common.runtime_over_default`:
    over the default timing paired with it in its worker, else over ``default``, default mode's
    row of the same graph)."""
    paired = row.get("default_runtime_us", {})
    own = default["runtime_us"] if default else {}
    ratios = {s: runtime_over_default(t, paired.get(s), own.get(s)) for s, t in row["runtime_us"].items()}
    return {s: r for s, r in ratios.items() if r is not None}


def _ratios(by: dict, method: str, base: str, graphs: set | None = None) -> tuple[list[float], list[float]]:
    """``method`` over ``base`` on each graph (item, way) both measured (those of ``graphs`` where
    given): runtime per size, and compile time per graph (over the base worker's). Each runtime is
    taken over default mode's first (:func:`_over_default`), and two methods compare as the quotient
    of those ratios, so that the clocks of two processes (minutes or machines apart) cancel; a size
    that default mode has no timing of compares the two runtimes as they are."""
    runtime, compile_s = [], []
    for (label, way, m), r in by.items():
        ref = by.get((label, way, base))
        if m != method or not ref or (graphs is not None and (label, way) not in graphs):
            continue
        default = by.get((label, way, "default"))
        mine = _over_default(r, default)
        if base == "default":
            runtime.extend(mine.values())
        else:
            theirs = _over_default(ref, default)
            for s, t in r["runtime_us"].items():
                if s in mine and s in theirs:
                    runtime.append(mine[s] / theirs[s])
                elif s in ref["runtime_us"]:
                    runtime.append(t / ref["runtime_us"][s])
        if ref.get("compile_s"):
            compile_s.append(r["compile_s"] / ref["compile_s"])
    return runtime, compile_s


def summarize(rows: list[dict]) -> dict[str, Any]:
    """diode over default mode and over max-autotune, per item, way and size; compile per graph.
    For each max-autotune method, its own figures over default mode and diode's on the graphs it
    measured (a worker stopped at its time limit measures fewer)."""
    by = {(r["label"], r["way"], r["method"]): r for r in rows if "error" not in r}
    vs_default, compile_vs_default = _ratios(by, "diode", "default")
    vs_max, _ = _ratios(by, "diode", "max_autotune")
    summary = {
        "dynamic_runtime_ratio_vs_default_worst": max(vs_default, default=None),
        "dynamic_runtime_ratio_vs_default_geomean": geomean(vs_default),
        "dynamic_runtime_ratio_vs_max_autotune_worst": max(vs_max, default=None),
        "dynamic_runtime_ratio_vs_max_autotune_geomean": geomean(vs_max),
        "dynamic_compile_ratio_vs_default_geomean": geomean(compile_vs_default),
        "rows_vs_default": len(vs_default),
        "errors": sum("error" in r for r in rows),
    }
    for method in ("max_autotune", "max_autotune_hints"):
        graphs = {(label, way) for label, way, m in by if m == method}
        if not graphs:
            continue
        for who in (method, "diode"):
            runtime, compile_s = _ratios(by, who, "default", graphs)
            prefix = method if who == method else f"diode_on_{method}_graphs"
            summary[f"{prefix}_runtime_ratio_vs_default_worst"] = max(runtime, default=None)
            summary[f"{prefix}_runtime_ratio_vs_default_geomean"] = geomean(runtime)
            summary[f"{prefix}_compile_ratio_vs_default_geomean"] = geomean(compile_s)
        summary[f"{method}_graphs"] = len(graphs)
    # the most that choosing between default mode and stock max-autotune at each size could give
    faster = [
        min(1.0, ratio)
        for (label, way, m), r in by.items()
        if m == "max_autotune"
        for ratio in _over_default(r, by.get((label, way, "default"))).values()
    ]
    summary["faster_of_default_and_max_autotune_runtime_ratio_vs_default_geomean"] = geomean(faster)
    return summary


def print_table(rows: list[dict], summary: dict) -> None:
    print(f"{'item':58s} {'way':9s} {'method':18s} {'compile s':>9s} {'worst/default':>13s}")
    by = {(r["label"], r["way"], r["method"]): r for r in rows if "error" not in r}
    for r in rows:
        if "error" in r:
            print(f"{r['label'][:58]:58s} {r['way']:9s} {r['method']:18s} error: {r['error'][:60]}")
            continue
        ratios, _ = _ratios(by, r["method"], "default", {(r["label"], r["way"])})
        worst = max(ratios, default=float("nan"))
        print(f"{r['label'][:58]:58s} {r['way']:9s} {r['method']:18s} {r['compile_s']:9.2f} {worst:13.3f}")
    for key, value in summary.items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")


# what the parts of a combined report must share
SHARED = ("device", "torch", "triton", "model", "sizes", "hint")


def combine(paths: list[str], out: str) -> dict[str, Any]:
    """One report, to be written to ``out``, of the rows of several runs' reports (:data:`SHARED`
    the same in each), with its summary over all of them and each run's command, date and workers
    under ``runs``."""
    parts = combinable_reports(paths, out, SHARED)
    rows, seen = [], set()
    for path, part in zip(paths, parts):
        for row in part["rows"]:
            key = (row["label"], row["way"], row["method"])
            if key in seen:
                raise SystemExit(f"--combine: {path} measures {key} again")
            seen.add(key)
            rows.append(row)
    runs = [{k: part.get(k) for k in ("command", "date", "workers")} for part in parts]
    report = {k: parts[0][k] for k in SHARED if k in parts[0]}
    report.update(command=command_line(), runs=runs, summary=summarize(rows), rows=rows)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="NVIDIA-H100-matmul", help="diode model name or file")
    parser.add_argument("--shapes", default="realmodels_heldout", help="shapeset or shapes file")
    parser.add_argument("--per-model", type=int, default=1, help="GEMMs drawn from each model (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gemms", type=int, default=12, help="GEMMs measured at most (default 12)")
    parser.add_argument("--attention", type=int, default=2, help="attention scores measured at most (default 2)")
    parser.add_argument("--no-decoder", dest="decoder", action="store_false", help="leave out the decoder block")
    parser.add_argument("--decoder-max-tokens", type=int, default=4096)
    parser.add_argument("--hint", type=int, default=64, help="rows of the first call (the graph's hint)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[*DECODE_SIZES, *PREFILL_SIZES])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--time-limit", type=float, default=300, help="seconds per method's worker")
    parser.add_argument("--out", required=True, help="JSON report")
    parser.add_argument("--combine", nargs="+", metavar="REPORT", help="join these reports into --out (no GPU)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.worker:
        return worker(args)
    if args.combine:
        report = combine(args.combine, args.out)
        write_json(args.out, report)
        print_table(report["rows"], report["summary"])
        return 0
    common = ["--model", args.model, "--shapes", args.shapes, "--per-model", str(args.per_model)]
    common += ["--seed", str(args.seed), "--gemms", str(args.gemms), "--attention", str(args.attention)]
    common += ["--hint", str(args.hint)]
    common += ["--decoder-max-tokens", str(args.decoder_max_tokens), "--sizes", *map(str, args.sizes)]
    common += [] if args.decoder else ["--no-decoder"]
    rows, status = [], {}
    for method in args.methods:
        stage(f"worker {method}")
        got, code, wall_s = run_worker("e2e_dynamic", [*common, "--worker", method], args.time_limit)
        rows.extend(got)
        status[method] = {"exit": code, "wall_s": round(wall_s, 1), "rows": len(got)}
        if method != "default":
            status[method]["paired_rounds"] = PAIRED_ROUNDS
    summary = summarize(rows)
    report = {**report_header(), "model": args.model, "sizes": args.sizes}
    report.update(hint=args.hint, workers=status, summary=summary, rows=rows)
    write_json(args.out, report)
    print_table(rows, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

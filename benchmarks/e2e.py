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
                 compile time Inductor spends autotuning everything but the GEMMs. Its runtime is
                 do_bench's of a function already replayed from CUDA graphs (do_bench_cudagraph
                 cannot capture one), so ``runtime_us`` is that figure for this method.

Each measurement starts cold: Dynamo reset, Inductor's caches off (force_disable_caches). The
methods run in worker processes, one after the other, each with its own new Triton and
Inductor cache directories: diode_top1; default + max_autotune + exhaustive; diode_top3;
diode_max_autotune_mode (``--methods`` picks the methods; its default is every one but the last). So no
method finds kernels another compiled, and stock autotuning never runs in a process where diode's
handler was installed. TORCH_DIODE_NO_AUTOREGISTER=1 keeps the import from registering the
shipped model (on an H100 it would otherwise decide every GEMM, the stock methods' included).
Each worker first compiles a small throwaway GEMM followed by a ReLU (CUDA, Inductor, the Triton
compiler and Inductor's compile workers start up, as in any real model's compile) and waits for
Inductor's worker pool, which compiles every kernel after it (until the pool is up Inductor
compiles in the worker itself, so the first item measured would pay for the pool's start). Compile
time is the wall time of the first call; one compile of a model varies by a few tenths of a second
between processes, so ``--compile-repeats N`` (with ``--only models``) compiles the models N times
with default mode and diode_top1, each time in a worker of its own (new caches) in alternating
order, and reports the median as ``compile_s`` (every time in ``compile_s_repeats``; the runtimes
are the first worker's that compiled the model). Runtime
(``runtime_us``, the summary's ratios) is
``triton.testing.do_bench_cudagraph`` of the compiled function: its median over replays of a CUDA
graph, the way mode="max-autotune" runs compiled functions, so it is the kernels' time. The graph
calls it on several copies of the inputs in turn (``input_copies``: together over twice the L2
cache; ``input_copies`` in the row says how many), so each call reads its operands from memory as
a layer of a model does; a model's weights are its own and not copied. ``runtime_cudagraph_warm_l2_us``
is the same replayed on one copy: operands that fit in L2 stay there, and for those that nearly
fill it the figure depends on where in memory they lie (benchmarks/studies/l2_residency.py). The plain
``triton.testing.do_bench`` median (same warm-up and repetitions for every method) is kept as
``runtime_do_bench_us`` (summary keys ``*_do_bench``), with ``wall_us_per_call``: do_bench times
one host call after a cache flush, and where the host's cost of calling a compiled function
exceeds the flush its figure is the host's, not the kernel's (the report's rows show both). A
worker that outlives its time limit is stopped; its finished items are kept. The report is
written after each worker (``complete``: false until the last has run), so a run stopped between
two keeps the finished workers' rows; the results table takes only a complete report.
``--combine`` joins reports of one device, torch, Triton and model, and refuses to join rows timed
over input copies with rows timed on one copy (reports without ``input_copies`` in their rows).

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
before any kernel is chosen and noisy near its 1.1x margin: two processes can decide differently
on the same GEMM, and a padded M=199 can run 1.3x slower than the unpadded one. So that a row
compares kernel choices, not two draws of that benchmark, the workers share one decision per
GEMM, made before any of them by a pass that compiles every item once in default mode and is not
measured: each worker starts with the pad_mm entries that pass wrote and finds every decision in
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
import json
import logging
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Diode acts only where this script installs it: without this, importing torch_diode on an H100
# would register the shipped model for every compile, the stock methods included.
os.environ["TORCH_DIODE_NO_AUTOREGISTER"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from benchmarks.common import (  # noqa: E402
    SHAPES,
    WARM_UP,
    geomean,
    load_shapes,
    report_header,
    run_worker,
    stage,
    timed_first_call,
    wait_for_compile_pool,
    warm_up_function,
)
from benchmarks.pad_mm import load_pad_decisions, pad_mm_facts, save_pad_decisions  # noqa: E402
from torch_diode import config as diode_config  # noqa: E402
from torch_diode.collection.inductor_sweep import inductor_settings, make_inputs, op_function  # noqa: E402
from torch_diode.dataset_io import load_datasets  # noqa: E402
from torch_diode.fileio import atomic_write_bytes  # noqa: E402
from torch_diode.integration.install import diode_choices  # noqa: E402
from torch_diode.types import problem_key  # noqa: E402

logger = logging.getLogger(__name__)

METHODS = ("default", "diode_top1", "diode_top3", "max_autotune", "exhaustive", "diode_max_autotune_mode")
WORKERS = (("diode_top1",), ("default", "max_autotune", "exhaustive"), ("diode_top3",), ("diode_max_autotune_mode",))
DEFAULT_METHODS = METHODS[:-1]
GUIDE_MODE = "diode_max_autotune_mode"  # compiled as the integration guide compiles
WARMUP_MS, REP_MS = 25, 100
MAX_INPUT_COPIES = 256  # input_copies: enough for inputs of 400 KB or more to leave a 50 MB L2 cold
# Inductor's GEMM path in default mode, where diode's choice handler decides (the diode methods)
DIODE_SETTINGS: dict[str, Any] = {"max_autotune_gemm": True, "max_autotune_gemm_backends": "ATEN,TRITON"}
RUNTIME = (  # the report's description of its runtimes
    "do_bench_cudagraph median over input copies (runtime_us), on one copy (runtime_cudagraph_warm_l2_us); "
    "do_bench median (runtime_do_bench_us)"
)
PAD_PASS_LIMIT_S = 240  # the pad_mm pass: every item compiled once in default mode


# ----- what is measured -------------------------------------------------------------------------
class DecoderBlock(nn.Module):
    """A Llama-style block: RMSNorm, q/k/v/o projections, attention as two batched matmuls
    (optionally over a KV cache), SwiGLU MLP."""

    def __init__(self, hidden: int = 2048, heads: int = 16, ffn: int = 5632):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(hidden, ffn, bias=False), nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)
        self.n1, self.n2 = nn.RMSNorm(hidden), nn.RMSNorm(hidden)

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor | None = None, v_cache: torch.Tensor | None = None):
        b, s, h = x.shape
        y = self.n1(x)
        split = lambda t: (
            t.view(b, -1, self.heads, self.head_dim).transpose(1, 2).reshape(b * self.heads, -1, self.head_dim)
        )
        q, k, v = split(self.q(y)), split(self.k(y)), split(self.v(y))
        if k_cache is not None:
            k, v = torch.cat([k_cache, k], dim=1), torch.cat([v_cache, v], dim=1)
        att = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_dim), dim=-1)
        o = torch.bmm(att, v).view(b, self.heads, s, self.head_dim).transpose(1, 2).reshape(b, s, h)
        x = x + self.o(o)
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class ViTBlock(nn.Module):
    def __init__(self, dim: int = 768, heads: int = 12, mlp: int = 3072):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, mlp), nn.Linear(mlp, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        hd = d // self.heads
        qkv = (
            self.qkv(self.n1(x)).view(b, s, 3, self.heads, hd).permute(2, 0, 3, 1, 4).reshape(3, b * self.heads, s, hd)
        )
        att = torch.softmax(torch.bmm(qkv[0], qkv[1].transpose(1, 2)) * hd**-0.5, dim=-1)
        o = torch.bmm(att, qkv[2]).view(b, self.heads, s, hd).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(o)
        return x + self.fc2(F.gelu(self.fc1(self.n2(x))))


def models(device: str) -> list[tuple[str, nn.Module, tuple]]:
    bf16, fp16 = torch.bfloat16, torch.float16
    g = torch.Generator(device="cpu").manual_seed(0)
    rnd = lambda *shape, dtype: torch.randn(*shape, generator=g).to(device=device, dtype=dtype)
    dec = DecoderBlock().to(device, bf16).eval()
    heads, hd = dec.heads, dec.head_dim
    mlp = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1024))
    return [
        ("decoder block, prefill 1x2048 tokens (bf16)", dec, (rnd(1, 2048, 2048, dtype=bf16),)),
        (
            "decoder block, decode 8 sequences, 1024 cached (bf16)",
            dec,
            (rnd(8, 1, 2048, dtype=bf16), rnd(8 * heads, 1024, hd, dtype=bf16), rnd(8 * heads, 1024, hd, dtype=bf16)),
        ),
        ("ViT-B/16 block, batch 32 (fp16)", ViTBlock().to(device, fp16).eval(), (rnd(32, 197, 768, dtype=fp16),)),
        ("MLP 1024-4096-4096-1024, batch 512 (fp16)", mlp.to(device, fp16).eval(), (rnd(512, 1024, dtype=fp16),)),
    ]


# ----- one measurement --------------------------------------------------------------------------
def bench_us(fn: Callable) -> float:
    import triton

    return 1000 * triton.testing.do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")


def bench_cudagraph_us(fn: Callable, inputs: Sequence[tuple] = ((),)) -> float:
    """The same function replayed from a CUDA graph: kernel time without the host's launch cost
    (mode="max-autotune" runs compiled functions this way). do_bench times one launch after a
    cache flush, so a host cost longer than the flush lands in its figure. The graph calls ``fn``
    on each of ``inputs`` in turn (copies from ``input_copies``: then no call finds its operands
    in the L2 cache); the figure is per call."""
    import triton

    def calls() -> None:
        for x in inputs:
            fn(*x)

    return 1000 * triton.testing.do_bench_cudagraph(calls, rep=REP_MS, return_mode="median") / len(inputs)


def operand_bytes(inputs: tuple) -> int:
    """Bytes of the storages of the tensors among ``inputs``."""
    import torch

    return sum(x.untyped_storage().nbytes() for x in inputs if isinstance(x, torch.Tensor))


def input_copies(inputs: tuple, l2_bytes: int | None = None, max_copies: int = MAX_INPUT_COPIES) -> list[tuple]:
    """``inputs`` and copies of it (each tensor in a storage of its own, with its size, strides,
    offset and values), enough that calls on each in turn read more than twice ``l2_bytes``
    between two calls on the same copy, at most ``max_copies``; inputs of that size or more are
    not copied. Replayed back to back on one copy, a GEMM whose operands fit in L2 reads them from
    L2, and one whose operands nearly fill it runs at a speed that depends on where they lie in
    memory (benchmarks/studies/l2_residency.py); in a model the other layers' traffic evicts them, and
    the collector flushes L2 before each timing. ``l2_bytes``: the current CUDA device's L2 size
    where not given."""
    import torch

    if l2_bytes is None:
        l2_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    footprint = operand_bytes(inputs)
    if not footprint or footprint >= 2 * l2_bytes:
        return [inputs]
    count = min(max_copies, math.ceil(2 * l2_bytes / footprint) + 1)

    def copy(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        storage = torch.empty(x.untyped_storage().nbytes() // x.element_size(), dtype=x.dtype, device=x.device)
        return storage.as_strided(x.size(), x.stride(), x.storage_offset()).copy_(x)

    return [inputs] + [tuple(copy(x) for x in inputs) for _ in range(count - 1)]


def measure(fn: Callable, inputs: tuple, method: str, model: str) -> dict[str, Any]:
    """Cold compile + first call, then do_bench of the compiled function."""
    torch._dynamo.reset()
    from torch._inductor import config as inductor_config

    settings: dict[str, Any] = {"force_disable_caches": True}
    if method in ("max_autotune", "exhaustive"):
        settings.update(inductor_settings("DEFAULT" if method == "max_autotune" else "EXHAUSTIVE", "ATEN,TRITON"))
    elif method == GUIDE_MODE:
        from torch_diode.inductor.settings import add_settings

        add_settings()  # the guide's settings (this script imports torch_diode without registration)
        settings.update(max_autotune_gemm_backends="DIODE", fast_autotune=True)
    elif method.startswith("diode"):
        settings.update(DIODE_SETTINGS)
    compiled = torch.compile(fn, dynamic=False, mode="max-autotune" if method == GUIDE_MODE else None)
    record: dict[str, Any] = {}

    def first_call() -> None:
        """The compile: wall seconds of the first call, and what pad_mm did in it."""
        with pad_mm_facts() as pad_mm:
            record["compile_s"] = timed_first_call(compiled, *inputs)
        record["pad_mm"] = pad_mm

    with inductor_config.patch(settings), torch.no_grad():
        if method.startswith("diode"):
            k = 3 if method == "diode_top3" else 1
            with diode_choices(model) as choices, diode_config.patch(top_k_configs=k, performance_threshold=1.0):
                first_call()
                stats = choices.get_stats()
            record["diode"] = {
                k2: stats[k2]
                for k2 in (
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
            }
            record["diode"]["decisions"] = list(choices.decisions)
        else:
            first_call()
        record["runtime_do_bench_us"] = bench_us(lambda: compiled(*inputs))
        try:
            copies = input_copies(inputs)
            record["input_copies"] = len(copies)
            record["runtime_cudagraph_us"] = bench_cudagraph_us(compiled, copies)
            record["runtime_cudagraph_warm_l2_us"] = bench_cudagraph_us(compiled, [inputs])
            del copies
        except Exception as e:  # reported; this method then has no runtime_us (do_bench's figure is kept)
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


def wall_us_per_call(fn: Callable, calls: int = 200) -> float:
    """Wall time per call of back-to-back calls: the larger of the host's cost and the GPU's."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / calls


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


# ----- summary ----------------------------------------------------------------------------------
def ratios(rows: list[dict], method: str, base: str, field: str) -> list[float]:
    """Per row measured by both: ``method``'s ``field`` over ``base``'s."""
    return best_of_ratios(rows, method, (base,), field)


def best_of_ratios(rows: list[dict], method: str, bases: tuple[str, ...], field: str = "runtime_us") -> list[float]:
    """Per row measured by ``method`` and every base: its ``field`` over the smallest base's."""
    out = []
    for r in rows:
        m = r["methods"].get(method, {})
        base_values = [r["methods"].get(b, {}).get(field) for b in bases]
        if field in m and all(v is not None for v in base_values):
            out.append(m[field] / min(base_values))
    return out


def summarize(rows: list[dict]) -> dict[str, Any]:
    s: dict[str, Any] = {}
    for method in ("diode_top1", "diode_top3"):
        suffix = "" if method == "diode_top1" else "_top3"
        compile_vs_ma = ratios(rows, "max_autotune", method, "compile_s")  # max-autotune time / diode time
        compile_vs_default = ratios(rows, method, "default", "compile_s")
        rt_ma = ratios(rows, method, "max_autotune", "runtime_us")
        rt_ex = ratios(rows, method, "exhaustive", "runtime_us")
        s[f"compile_speedup_vs_max_autotune_geomean{suffix}"] = geomean(compile_vs_ma)
        s[f"compile_ratio_vs_default_geomean{suffix}"] = geomean(compile_vs_default)
        s[f"runtime_ratio_vs_max_autotune_geomean{suffix}"] = geomean(rt_ma)
        s[f"runtime_ratio_vs_max_autotune_worst{suffix}"] = max(rt_ma) if rt_ma else None
        s[f"runtime_ratio_vs_exhaustive_geomean{suffix}"] = geomean(rt_ex)
        s[f"rows_compared{suffix}"] = len(rt_ma)
        s[f"exhaustive_rows{suffix}"] = len(rt_ex)
    for method in ("diode_top1", "diode_top3"):
        suffix = "" if method == "diode_top1" else "_top3"
        db = ratios(rows, method, "max_autotune", "runtime_do_bench_us")
        s[f"runtime_ratio_vs_max_autotune_geomean_do_bench{suffix}"] = geomean(db)
        s[f"runtime_ratio_vs_max_autotune_worst_do_bench{suffix}"] = max(db) if db else None
    guide = ratios(rows, GUIDE_MODE, "diode_top1", "compile_s")
    if guide:  # what mode="max-autotune" adds to diode's compile: Inductor autotuning the non-GEMM kernels
        s["compile_ratio_max_autotune_mode_vs_diode_top1_geomean"] = geomean(guide)
        s["compile_ratio_max_autotune_mode_vs_default_geomean"] = geomean(
            ratios(rows, GUIDE_MODE, "default", "compile_s")
        )
        s["compile_ratio_diode_top1_vs_default_geomean_same_rows"] = geomean(
            [
                r
                for row in rows
                if GUIDE_MODE in row["methods"]
                for r in ratios([row], "diode_top1", "default", "compile_s")
            ]
        )
        # per call as the caller sees it: the mode replays its own CUDA graphs, diode_top1 launches
        # its kernels one by one (the mode's graphs cannot be captured again to time its kernels alone)
        s["wall_ratio_max_autotune_mode_vs_diode_top1_geomean"] = geomean(
            ratios(rows, GUIDE_MODE, "diode_top1", "wall_us_per_call")
        )
        s["rows_compared_max_autotune_mode"] = len(guide)
    s["runtime_ratio_max_autotune_vs_default_geomean"] = geomean(ratios(rows, "max_autotune", "default", "runtime_us"))
    s["runtime_ratio_diode_top1_vs_default_geomean"] = geomean(ratios(rows, "diode_top1", "default", "runtime_us"))
    # the targets: per GEMM, diode top-1 against the faster of what the user had (default mode or
    # max-autotune), and against default mode; the whole models' compile time against default mode's
    gemms = [r for r in rows if r["kind"] == "gemm"]
    best = best_of_ratios(gemms, "diode_top1", ("default", "max_autotune"))
    s["runtime_ratio_vs_best_of_default_and_max_autotune_geomean"] = geomean(best)
    s["runtime_ratio_vs_best_of_default_and_max_autotune_worst"] = max(best) if best else None
    s["runtime_ratio_vs_default_geomean"] = geomean(ratios(gemms, "diode_top1", "default", "runtime_us"))
    s["gemm_rows_compared"] = len(best)
    if any("run" in timing for r in rows for timing in r["methods"].values()):  # combined: which run timed what
        runs = [
            (r["methods"]["default"].get("run"), r["methods"]["diode_top1"].get("run"))
            for r in gemms
            if all("runtime_us" in r["methods"].get(m, {}) for m in ("default", "diode_top1"))
        ]
        # a run not known (None) cannot vouch that both were timed together
        s["gemm_rows_default_and_diode_top1_from_different_runs"] = sum(
            1 for default, diode in runs if default is None or diode is None or default != diode
        )
    models_ = [r for r in rows if r["kind"] == "model"]
    models_compile = ratios(models_, "diode_top1", "default", "compile_s")
    s["compile_ratio_vs_default_models_geomean"] = geomean(models_compile)
    s["compile_speedup_vs_max_autotune_models_geomean"] = geomean(
        ratios(models_, "max_autotune", "diode_top1", "compile_s")
    )
    s["model_rows_compared"] = len(models_compile)
    return s


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 6))
    markers = dict(zip(METHODS, "osD^vP"))
    for method in METHODS:
        both = [
            (
                r["methods"][method]["compile_s"],
                r["methods"][method]["runtime_us"] / r["methods"]["default"]["runtime_us"],
            )
            for r in rows
            if "runtime_us" in r["methods"].get(method, {}) and "runtime_us" in r["methods"].get("default", {})
        ]
        if both:
            ax.scatter([x for x, _ in both], [y for _, y in both], label=method, marker=markers[method], alpha=0.75)
    ax.set_xscale("log")
    ax.set_xlabel("compile time, first call (s, log scale)")
    ax.set_ylabel("runtime relative to default mode (lower is faster)")
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set_title("torch-diode vs stock Inductor, per GEMM and model")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def print_table(rows: list[dict], summary: dict) -> None:
    shown = [m for m in METHODS if any(m in r["methods"] for r in rows)]
    print(f"\n{'item':52s} " + " ".join(f"{m[:21]:>21s}" for m in shown))
    print(f"{'':52s} " + " ".join(f"{'compile s / run us':>21s}" for _ in shown))
    for r in rows:
        cells = []
        for m in shown:
            v = r["methods"].get(m)
            cells.append(
                f"{'-':>21s}"
                if not v
                else f"{'error':>21s}"
                if "error" in v
                else f"{v['compile_s']:8.2f} /{v.get('runtime_us', math.nan):10.1f}"
            )
        print(f"{r['label'][:52]:52s} " + " ".join(f"{c:>21s}" for c in cells))
    print()
    for k, v in summary.items():
        print(f"{k:48s} {v:.3f}" if isinstance(v, float) else f"{k:48s} {v}")


def worker(args: argparse.Namespace) -> int:
    """Measures ``args.worker`` methods on every item, rewriting ``args.out`` after each."""
    methods = args.worker.split(",")
    shapes = part_of(load_shapes(args.shapes, args.per_model, args.seed), args.part)
    rows: list[dict] = []

    pad_decisions = Path(args.pad_decisions) if args.pad_decisions else None
    if pad_decisions:
        load_pad_decisions(pad_decisions)

    def save() -> None:
        Path(args.out).write_text(json.dumps(rows, indent=1))
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


def part_arg(text: str) -> tuple[int, int]:
    """``I/N`` of --part: 1 <= I <= N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N (e.g. 1/2)") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be between 1 and N")
    return i, n


def part_of(items: list, part: tuple[int, int] | None) -> list:
    """The ``part`` (I, N) slice of ``items``: N contiguous slices whose sizes differ by at most one."""
    if part is None:
        return items
    i, n = part
    return items[(i - 1) * len(items) // n : i * len(items) // n]


def draw_of(shapes: list) -> dict | str | None:
    """What a combined report's runs measured, from each run's ``shapes``: the draw they share,
    where the runs of its slices (--part) cover it, 1/N to N/N; a line saying they differ otherwise;
    None where no run says."""
    if all(s is None for s in shapes):
        return None
    differ = "differs between the runs: see each run's"
    if not all(isinstance(s, dict) for s in shapes):
        return differ
    draws = {json.dumps({k: v for k, v in s.items() if k != "part"}, sort_keys=True) for s in shapes}
    parts = {s["part"] for s in shapes if "part" in s}
    counts = {part_arg(part)[1] for part in parts}
    covered = not parts or (len(counts) == 1 and parts == {f"{i}/{n}" for n in counts for i in range(1, n + 1)})
    return json.loads(draws.pop()) if len(draws) == 1 and covered else differ


def timed_over_input_copies(rows: list[dict]) -> bool | None:
    """Whether ``rows``' runtimes were timed over input copies (``input_copies`` in each measured
    method's record) or on one copy (no ``input_copies``); None where no method has a runtime."""
    timed = [m for row in rows for m in row["methods"].values() if "runtime_cudagraph_us" in m]
    return None if not timed else all("input_copies" in m for m in timed)


def combine(args: argparse.Namespace) -> int:
    """One report from several runs' reports: their rows, a summary over all of them."""
    parts = [json.loads(Path(p).read_text()) for p in args.combine]
    for key in ("device", "torch", "triton", "model"):
        if len({part.get(key) for part in parts}) > 1:
            raise SystemExit(f"--combine: the reports differ in {key!r}: {[part.get(key) for part in parts]}")
    timings = {timed_over_input_copies(part["rows"]) for part in parts} - {None}
    if len(timings) > 1:
        raise SystemExit(
            "--combine: some reports time the runtime over input copies and some on one copy "
            "(runtime_cudagraph_warm_l2_us); their rows do not compare"
        )
    per_run = (
        "command",
        "date",
        "device",
        "torch",
        "triton",
        "workers",
        "note",
        "pad_mm",
        "pad_mm_pass",
        "shapes",
        "compile_repeats",
    )
    dropped = ("command", "date", "workers", "pad_mm_pass", "rows", "summary", "runs", "note", "compile_repeats")
    report = {k: v for k, v in parts[0].items() if k not in dropped}
    if timings == {True}:  # rows timed over input copies: the report says how (RUNTIME)
        report["runtime"] = RUNTIME
    for key in ("pad_mm", "shapes"):
        report.pop(key, None)
    part_runs = [part.get("runs") or [{k: part[k] for k in per_run if k in part}] for part in parts]
    runs = [
        {**{k: part[k] for k in ("pad_mm", "shapes") if k in part}, **run}
        for part, its_runs in zip(parts, part_runs)
        for run in its_runs
    ]
    pad_mm = {json.dumps(run.get("pad_mm"), sort_keys=True) for run in runs}
    if len(pad_mm) == 1 and "pad_mm" in runs[0]:
        report["pad_mm"] = runs[0]["pad_mm"]
    elif len(pad_mm) > 1:
        report["pad_mm"] = "differs between the runs: see each run's"
    shapes = draw_of([run.get("shapes") for run in runs])
    if shapes is not None:
        report["shapes"] = shapes
    report["runs"] = runs
    complete = all(part.get("complete", True) for part in parts)
    rc = finish(report, run_tagged_rows(parts, [len(its_runs) for its_runs in part_runs]), args, complete)
    apart = report["summary"].get("gemm_rows_default_and_diode_top1_from_different_runs")
    if apart:
        print(
            f"--combine: {apart} GEMM rows compare diode_top1 with default mode timed in another run "
            "(other processes, perhaps another machine): measure both in one run to compare them"
        )
    return rc


def run_tagged_rows(parts: list[dict], run_counts: list[int]) -> list[dict]:
    """The parts' rows, each method's timings tagged with the index of the run that measured them
    in the combined report's ``runs`` (``run_counts``: each part's runs there). A part that is itself
    a combined report keeps its tags, offset; where it holds several runs without tags, which of
    them measured a timing is not known (``None``)."""
    rows, first = [], 0
    for part, count in zip(parts, run_counts):
        for row in part["rows"]:
            methods = {}
            for method, timing in row["methods"].items():
                run = timing.get("run", 0 if count == 1 else None)
                methods[method] = {**timing, "run": None if run is None else first + run}
            rows.append({**row, "methods": methods})
        first += count
    return rows


def write_report(report: dict[str, Any], rows: list[dict], out: str | Path, complete: bool) -> None:
    """Rows merged by label (a later row's methods win) and their summary, written to ``out`` in one
    step (a run stopped between two writes leaves the last whole report in place). ``complete``: every
    worker has run (a report written after each worker says which ran, ``workers``)."""
    merged: dict[str, dict] = {}
    for row in rows:
        merged.setdefault(row["label"], {k: v for k, v in row.items() if k != "methods"} | {"methods": {}})
        merged[row["label"]]["methods"].update(row["methods"])
    report["complete"] = complete
    report["rows"] = list(merged.values())
    report["summary"] = summarize(report["rows"])
    atomic_write_bytes(out, json.dumps(report, indent=1).encode())


def finish(report: dict[str, Any], rows: list[dict], args: argparse.Namespace, complete: bool = True) -> int:
    """The report (``complete``: of every worker), then the plot and table."""
    write_report(report, rows, args.out, complete)
    if args.plot:
        plot(report["rows"], args.plot)
    print_table(report["rows"], report["summary"])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
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
        "--part 1/N .. N/N, joined by --combine, measure the GEMMs one run would)",
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
        "(default 120 420 240 330; a fourth value may be left out)",
    )
    parser.add_argument(
        "--compile-repeats",
        type=int,
        default=1,
        metavar="N",
        help="with --only models: compile each model N times with default mode and diode_top1, each in a "
        "worker of its own with new caches, in alternating order; compile_s is the median (default: %(default)s)",
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
    args = parser.parse_args(argv)
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
    shapes = part_of(load_shapes(args.shapes, args.per_model, args.seed), args.part)
    if part and not shapes:
        raise SystemExit(f"--part {part}: the draw has fewer GEMMs than parts")
    if args.train_data:
        train = load_datasets(args.train_data)
        seen = {problem_key(p) for _, p, _ in train.problems()}
        leaked = [label for label, p, _ in shapes if problem_key(p) in seen]
        if leaked:
            raise SystemExit(f"{args.shapes}: these problems are in the training data, not held out: {leaked}")
    report: dict[str, Any] = {
        **report_header(),
        "model": args.model,
        "runtime": RUNTIME,
        "do_bench": {"warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "return_mode": "median"},
        "settings": {
            "max_autotune": inductor_settings("DEFAULT", "ATEN,TRITON"),
            "exhaustive": inductor_settings("EXHAUSTIVE", "ATEN,TRITON"),
            "diode": {
                "max_autotune_gemm": True,
                "candidate_pool": diode_config.candidate_pool,
                "performance_threshold": 1.0,
                "unsure_top_k": diode_config.unsure_top_k,
            },
            GUIDE_MODE: {
                "mode": "max-autotune",
                "max_autotune_gemm_backends": "DIODE",
                "fast_autotune": True,
                "top_k_configs": 1,
            },
        },
        "pad_mm": "decided once per GEMM by a pass in default mode before the measured workers, shared by every method",
        "shapes": {"shapes": args.shapes, "per_model": args.per_model, "seed": args.seed}
        | ({"part": part} if part else {}),
        "methods": list(args.methods),
        "workers": [],
        "rows": [],
    }
    rows: list[dict] = []
    if len(args.time_limits) not in (3, 4):
        raise SystemExit(f"--time-limits: give 3 or 4 values, got {len(args.time_limits)}")
    limits = list(args.time_limits) + [330.0] * (len(WORKERS) - len(args.time_limits))
    if args.compile_repeats > 1:
        report["compile_repeats"] = args.compile_repeats
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
            write_report(report, merge_compile_repeats(rows), args.out, complete=False)
    return finish(report, merge_compile_repeats(rows), args)


REPEATED = ("diode_top1", "default")  # the methods whose models' compile time --compile-repeats repeats


def worker_plan(args: argparse.Namespace, limits: list[float]) -> list[tuple[tuple[str, ...], float, str | None]]:
    """The workers in order, each as (methods, time limit, --only): the pad_mm pass, the methods'
    workers, then --compile-repeats' extra rounds (models only, diode_top1 and default in
    alternating order, each worker with new caches). With repeats, default mode has a worker of
    its own in the first round too, so that every round compiles alike (in the stock worker it
    would come after max-autotune's compiles of the models ahead of it in the list, and find their
    kernels)."""
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


def merge_compile_repeats(rows: list[dict]) -> list[dict]:
    """``rows`` with each model's measurements of a method by --compile-repeats' rounds folded into
    one, the first that has a compile time (its runtimes are kept): ``compile_s`` becomes the median
    of every round's compile time, listed in ``compile_s_repeats``."""
    records: dict[tuple[str, str], list[dict]] = {}
    out: list[dict] = []
    for row in rows:
        if row["kind"] != "model":
            out.append({**row, "methods": {k: dict(m) for k, m in row["methods"].items()}})
            continue
        methods: dict[str, dict] = {}
        for method, m in row["methods"].items():
            key = (row["label"], method)
            if key in records:
                records[key].append(m)
            else:
                methods[method] = {}  # filled below, where the first measurement of it lands
                records[key] = [m]
        if methods:
            out.append({**row, "methods": methods})
    for row in out:
        for method in row["methods"] if row["kind"] == "model" else ():
            measured = records[(row["label"], method)]
            timed = [m for m in measured if "compile_s" in m]
            kept = dict(timed[0] if timed else measured[0])
            if len(timed) > 1:
                kept["compile_s_repeats"] = [m["compile_s"] for m in timed]
                kept["compile_s"] = statistics.median(kept["compile_s_repeats"])
            row["methods"][method] = kept
    return out


if __name__ == "__main__":
    sys.exit(main())

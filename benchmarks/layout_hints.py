"""(GPU) What the fast path's layout hints change, and whether they bring its timings to Inductor's.

Inductor's kernels have every size and stride as a constant; the fast path passes them at run
time, where Triton knows only 1 and multiples of 16. With a row of K = 72 fp16 elements,
Inductor's kernel loads 16-byte vectors and the fast path's, without hints, 2-byte elements
(collection/triton_mm.py's docstring; the PTX check: tests/collection/test_triton_cpu.py).

1. Problems of ``--data`` whose kernels get a hint (``kernel_spec.layout_hinted``), at most
   ``--problems``, in the datasets' order.
2. Each one's ATen choices and Inductor's DEFAULT Triton configs timed by the fast path twice, in
   one process: kernels compiled without the hints (as data collected before them was) and with
   them. Per problem: best Triton time without / with, whether the best choice changes between
   ATen and Triton, and the median over its configs of the dataset's recorded time / the one
   timed now without hints (whether the recorded data repeats).
3. For the first ``--inductor-problems``: stock max-autotune benchmarks its own kernels of the same
   configs (DEFAULT search space, recorded with the fast path's cache flush), and the median
   |fast - Inductor| / Inductor over the Triton configs, without and with hints; with hints also
   apart for the configs where K fits in one BLOCK_K tile (Inductor's kernel knows it and does not
   pipeline the K loop; the fast path's does). ``--inductor-max-k 64`` picks such problems.

    python -m benchmarks.layout_hints --out $OUT/layout_hints_h100.json
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

os.environ.setdefault("TORCH_DIODE_NO_AUTOREGISTER", "1")  # stock Inductor in step 3

import numpy as np  # noqa: E402

from benchmarks.collector_fidelity import config_tuple, fast_on, inductor_reference  # noqa: E402
from benchmarks.common import geomean, report_header, stage, write_json  # noqa: E402
from torch_diode.collection import kernel_spec  # noqa: E402
from torch_diode.collection.fast_sweep import FastSweep  # noqa: E402
from torch_diode.collection.kernel_compiler import precompile  # noqa: E402
from torch_diode.collection.shapes import problem_identity  # noqa: E402
from torch_diode.collection.timing import FLUSH_BYTES, flush_buffer  # noqa: E402
from torch_diode.dataset_io import load_dataset, load_datasets  # noqa: E402
from torch_diode.inductor.config_space import aten_configs, triton_configs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = [str(ROOT / "data" / "h100" / "realmodels"), str(ROOT / "data" / "h100" / "validation")]


def timed(problems, configs, hints: bool, reps: int) -> dict:
    """(problem, config) -> fast path's ms, kernels compiled with or without the hints."""
    kernel_spec.LAYOUT_HINTS = hints
    pairs = [(p, c) for p in problems for c in configs[p] if c.is_tiled]
    errors = precompile(pairs, FastSweep().workers, progress=False)
    stage(f"hints {'on' if hints else 'off'}: {len(errors)} kernel variants compiled")
    flush = flush_buffer("cuda")
    out = {}
    for p in problems:
        out.update({(p, c): ms for c, ms in zip(configs[p], fast_on(p, configs[p], reps, flush))})
    return out


def median_rel_diff(fast_ms: dict, problem, pairs: list) -> float | None:
    """Median |fast - Inductor| / Inductor over (Inductor's time in us, config) pairs; None if none."""
    diffs = [abs(fast_ms[problem, c] * 1e3 - i) / i for i, c in pairs]
    return float(np.median(diffs)) if diffs else None


def median_of(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return float(np.median(values)) if values else None


def hint_rows(problems: list, configs: dict, off: dict, on: dict, recorded: dict) -> list[dict]:
    """Per problem: the best Triton time without the layout hints over with them, the median
    config's, whether a Triton config beats ATen either way, and the recorded timings over now."""
    rows = []
    for p in problems:
        tri = [c for c in configs[p] if c.is_tiled and off[p, c] and on[p, c]]
        aten = [c for c in configs[p] if not c.is_tiled and off[p, c]]
        best_off, best_on = min(off[p, c] for c in tri), min(on[p, c] for c in tri)
        best_aten = min(off[p, c] for c in aten)
        rec = {t.config: t.time_us / 1000.0 for t in recorded[p] if t.config.is_tiled and not t.failed}
        repeat = [rec[c] / off[p, c] for c in tri if c in rec]
        rows.append(
            {
                "problem": p.short(),
                "misaligned": list(p.misaligned_operands),
                "best_triton_off_over_on": best_off / best_on,
                "config_off_over_on_median": float(np.median([off[p, c] / on[p, c] for c in tri])),
                "best_is_triton_off": best_off < best_aten,
                "best_is_triton_on": best_on < best_aten,
                "recorded_over_off_median": float(np.median(repeat)) if repeat else None,
            }
        )
        print(
            f"{p.short():40s} best Triton off/on {rows[-1]['best_triton_off_over_on']:6.3f}  "
            f"median config {rows[-1]['config_off_over_on_median']:6.3f}  "
            f"Triton best: off {rows[-1]['best_is_triton_off']!s:5s} on {rows[-1]['best_is_triton_on']!s:5s}"
        )

    return rows


def inductor_fidelity(shapes: list, configs: dict, off: dict, on: dict) -> list[dict]:
    """Per shape: how far the fast path's timings (hints off and on) lie from Inductor's own."""
    fidelity = []
    if shapes:
        path = Path(tempfile.mkdtemp()) / "inductor.json"
        inductor_reference(shapes, 0, 0, path, FLUSH_BYTES)
        by_identity = {problem_identity(p): p for p in shapes}  # Inductor's record adds strides and bias
        for _, recorded_problem, timings in load_dataset(path).problems():
            p = by_identity.get(problem_identity(recorded_problem))
            if p is None:
                continue
            by_tile = {config_tuple(c): c for c in configs[p] if c.is_tiled}
            pairs = [
                (t.time_us, by_tile[config_tuple(t.config)])
                for t in timings
                if t.config.is_tiled and not t.failed and config_tuple(t.config) in by_tile
            ]
            pairs = [(i, c) for i, c in pairs if off[p, c] and on[p, c]]
            if not pairs:
                continue
            # where K fits in one BLOCK_K tile, Inductor's kernel (K a constant) has no pipelined loop
            single = [(i, c) for i, c in pairs if c.block_k >= p.K]
            multi = [(i, c) for i, c in pairs if c.block_k < p.K]
            fidelity.append(
                {
                    "problem": p.short(),
                    "configs": len(pairs),
                    "single_tile_configs": len(single),
                    "median_abs_rel_diff_off": median_rel_diff(off, p, pairs),
                    "median_abs_rel_diff_on": median_rel_diff(on, p, pairs),
                    "median_abs_rel_diff_on_single_tile": median_rel_diff(on, p, single),
                    "median_abs_rel_diff_on_multi_tile": median_rel_diff(on, p, multi),
                }
            )
    return fidelity


def summarize(rows: list[dict], fidelity: list[dict]) -> dict:
    ratios = [r["best_triton_off_over_on"] for r in rows]
    summary = {
        "problems": len(rows),
        "best_triton_off_over_on_geomean": geomean(ratios),
        "best_triton_off_over_on_max": max(ratios) if ratios else None,
        "best_choice_flips_to_triton": sum(r["best_is_triton_on"] and not r["best_is_triton_off"] for r in rows),
        "best_choice_flips_to_aten": sum(r["best_is_triton_off"] and not r["best_is_triton_on"] for r in rows),
        "recorded_over_off_geomean": geomean(
            [r["recorded_over_off_median"] for r in rows if r["recorded_over_off_median"]]
        ),
        **{
            f"inductor_{key}": median_of(fidelity, key)
            for key in (
                "median_abs_rel_diff_off",
                "median_abs_rel_diff_on",
                "median_abs_rel_diff_on_single_tile",
                "median_abs_rel_diff_on_multi_tile",
            )
        },
    }
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--data", nargs="+", default=DEFAULT_DATA)
    parser.add_argument("--problems", type=int, default=60)
    parser.add_argument("--inductor-problems", type=int, default=6)
    parser.add_argument(
        "--inductor-max-k",
        type=int,
        default=0,
        help="step 3 takes hinted problems with K at most this (0: any): where K fits in one BLOCK_K tile",
    )
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()

    recorded = {}
    for _, problem, timings in load_datasets(args.data).problems():
        if len(recorded) < args.problems and kernel_spec.layout_hinted(problem):
            recorded[problem] = timings
    problems = list(recorded)
    configs = {p: aten_configs(p) + triton_configs(p, "DEFAULT") for p in problems}
    stage(f"{len(problems)} problems with hints, {sum(map(len, configs.values()))} choices")
    off = timed(problems, configs, False, args.reps)
    on = timed(problems, configs, True, args.reps)
    kernel_spec.LAYOUT_HINTS = True

    rows = hint_rows(problems, configs, off, on, recorded)
    shapes = [p for p in problems if not args.inductor_max_k or p.K <= args.inductor_max_k]
    fidelity = inductor_fidelity(shapes[: args.inductor_problems], configs, off, on)
    summary = summarize(rows, fidelity)
    report = {
        **report_header(),
        "data": args.data,
        **summary,
        "rows": rows,
        "inductor": fidelity,
    }
    write_json(args.out, report)
    for f in fidelity:
        print(
            f"inductor {f['problem']:40s} {f['configs']:3d} configs  |fast-inductor|/inductor "
            f"off {f['median_abs_rel_diff_off']:.3f} on {f['median_abs_rel_diff_on']:.3f} "
            f"(on, {f['single_tile_configs']} single-tile configs: {f['median_abs_rel_diff_on_single_tile']})"
        )
    print(" ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

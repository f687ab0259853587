"""How well does a model fit cuBLAS on decode p @ v over KV lengths of any count? (CPU)

A model of the H100's data alone picks cuBLAS first for Mistral-Nemo's decode p @ v
(``bmm 32x1x128x3001 bfloat16 NN``), 1.33x slower than the best Triton config, and every model
adapted from it keeps that pick (``adapt_tail.py``). This study compares, for each ``--model``, the
predicted and measured times of the fastest ATen choice and of the fastest Triton config on the
decode p @ v problems of the data (batch x heads 16-128, one or two query rows, head dims 64-128,
KV lengths 1,500-6,500, half precision, NN), split by whether the KV length is a multiple of 8.

    python -m benchmarks.studies.cublas_fit --model h100_alone.diode NVIDIA-H100-matmul \\
        --data data/h100/train data/h100/decode_pv_long data/h100/realmodels \\
        --out benchmarks/results/cublas_fit_h100_cpu.json

(``h100_alone.diode``: ``benchmarks.adapt_curve``'s recipe for a model of the H100's data alone,
trained on a folder of links to the files of ``data/h100/train`` and ``data/h100/decode_pv_long``;
the report also holds the model of the H100's data that ``adapt_curve_cpu.json`` adapts, trained
without ``data/h100/decode_pv_long``, one member of the recipe at ``--hidden-dim`` 48 and one at
96, to see whether a wider model fits cuBLAS there, and ``h100_alone_ew8.diode``, that model's recipe
with ``--extern-weight 8``, to see whether weighting cuBLAS's rows in the loss does.)
"""

from __future__ import annotations

import argparse
import math
import statistics

import numpy as np

from benchmarks.common import cpu_report_header, write_json
from torch_diode.dataset_io import load_datasets
from torch_diode.features import is_aten
from torch_diode.predict import load_model, predict_log_time_us
from torch_diode.types import Problem


def decode_pv(p: Problem) -> bool:
    """A decode p @ v of the study's range."""
    return (
        p.op in ("bmm", "baddbmm")
        and p.M <= 2
        and 64 <= p.N <= 128
        and 1500 <= p.K <= 6500
        and 16 <= p.B <= 128
        and not p.transpose_a
        and not p.transpose_b
        and p.dtype_a in ("float16", "bfloat16")
    )


def fit_rows(model_path: str, data: list[str]) -> list[dict]:
    """One row per decode p @ v problem: measured and predicted times of the fastest ATen choice
    and of the fastest Triton config (the one measured fastest)."""
    model, rows = load_model(model_path), []
    for hardware, problem, timings in load_datasets(data).problems():
        if not decode_pv(problem):
            continue
        timed = [t for t in timings if not t.failed]
        aten = np.array([is_aten(t.config) for t in timed])
        if aten.all() or not aten.any():
            continue
        measured = np.array([t.time_us for t in timed])
        predicted = np.exp(predict_log_time_us(model, problem, [t.config for t in timed], hardware).astype(float))
        a = int(np.argmin(np.where(aten, measured, np.inf)))
        t = int(np.argmin(np.where(aten, np.inf, measured)))
        rows.append(
            {
                "problem": problem.short(),
                "kv_multiple_of_8": problem.K % 8 == 0,
                "aten_measured_us": round(float(measured[a]), 2),
                "aten_predicted_us": round(float(predicted[a]), 2),
                "triton_measured_us": round(float(measured[t]), 2),
                "triton_predicted_us": round(float(predicted[t]), 2),
                "order_wrong": bool((measured[a] < measured[t]) != (predicted[a] < predicted[t])),
            }
        )
    return rows


def summarize(rows: list[dict]) -> dict:
    """Per KV alignment: problems, the median |ln(predicted / measured)| of cuBLAS and of the
    Triton config, and how many problems the model orders the two wrongly."""
    out = {}
    for aligned in (True, False):
        part = [r for r in rows if r["kv_multiple_of_8"] == aligned]
        if not part:
            continue
        key = "kv_multiple_of_8" if aligned else "kv_not_multiple_of_8"
        out[key] = {
            "problems": len(part),
            "aten_abs_log_error_median": _median_abs_log_error(part, "aten"),
            "triton_abs_log_error_median": _median_abs_log_error(part, "triton"),
            "order_wrong": sum(r["order_wrong"] for r in part),
        }
    return out


def _median_abs_log_error(rows: list[dict], kind: str) -> float:
    """The median |ln(predicted / measured)| of the rows' ``kind`` (aten, triton) times."""
    return round(
        statistics.median(abs(math.log(r[f"{kind}_predicted_us"] / r[f"{kind}_measured_us"])) for r in rows), 3
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="+", required=True, help="model files or names")
    parser.add_argument("--data", nargs="+", required=True, help="dataset files or folders")
    parser.add_argument("--out", required=True, help="the JSON report")
    args = parser.parse_args(argv)
    report = {**cpu_report_header("CPU (models judged on data measured on the GPU each file names)"), "models": {}}
    for model in args.model:
        rows = fit_rows(model, args.data)
        report["models"][model] = {"summary": summarize(rows), "rows": rows}
        print(model, report["models"][model]["summary"])
    write_json(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

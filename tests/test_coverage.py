"""`diode dataset coverage`: problem counts per op x dtype x layout, size regime and candidate kind."""

import json
import subprocess
import sys

import pytest

from torch_diode.coverage import (
    DEFAULT_TARGETS,
    DTYPE_COLUMNS,
    LAYOUTS,
    REGIMES,
    REQUIRED_CANDIDATE_KINDS,
    Coverage,
    all_cells,
    cell_target,
    format_report,
    missing_counts,
)
from torch_diode.dataset_io import save_dataset
from torch_diode.types import OPS, Dataset, Hardware, KernelConfig, Problem, TimedConfig

H100 = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 85899345920, 232448, "2.11.0", "3.6.0", "13.0")
ATEN_MM, ATEN_BMM = KernelConfig("aten::mm"), KernelConfig("aten::bmm")


def triton(template: str = "triton::mm", tf32: bool = False) -> KernelConfig:
    return KernelConfig(template, 64, 64, 32, 8, 3, 4, allow_tf32=tf32)


def mm(m, n, k, dtype, ta=False, tb=True, op="mm", b=1):
    return Problem(op, b, m, n, k, dtype, dtype, dtype, ta, tb)


def dataset(rows, tf32_settings=None) -> Dataset:
    ds = Dataset()
    if tf32_settings is not None:
        ds.metadata["sources"] = [{"tool": "torch_diode.collect", "settings": {"tf32": tf32_settings}}]
    for problem, configs in rows:
        ds.add(H100, problem, [TimedConfig.failure(c) if failed else TimedConfig(c, 10.0) for c, failed in configs])
    return ds


DECODE = mm(8, 4096, 4096, "float16")
ATTENTION = mm(197, 197, 64, "bfloat16", op="bmm", b=64)
LM_HEAD = mm(1024, 50257, 20000, "float32", tb=False)  # fp32, TF32 seen in its Triton config
PLAIN_FP32 = mm(512, 512, 512, "float32", ta=True, tb=False)


def test_cells_count_each_problem_once_where_it_belongs():
    cov = Coverage()
    cov.add(
        dataset(
            [
                (DECODE, [(ATEN_MM, False), (triton(), False), (KernelConfig("decompose_k"), True)]),
                (ATTENTION, [(ATEN_BMM, False), (triton("triton::bmm"), False)]),
                (LM_HEAD, [(ATEN_MM, False), (triton(tf32=True), False)]),
                (PLAIN_FP32, [(ATEN_MM, False)]),
            ]
        )
    )
    cov.add(dataset([(DECODE, [(ATEN_MM, False)])]))  # the same problem in another file
    cov.add(dataset([(PLAIN_FP32, [(ATEN_MM, False)])], tf32_settings=True))  # measured again with TF32 on
    cells = cov.cells()
    assert cov.num_problems == 5
    expected = {
        "op/mm/float16/NT": 1,
        "regime/decode/float16": 1,
        "op/bmm/bfloat16/NT": 1,
        "regime/skinny_k/bfloat16": 1,
        "regime/unaligned/bfloat16": 1,
        "regime/attention_bmm/bfloat16": 1,
        "regime/large_batch_bmm/bfloat16": 1,
        "op/mm/float32-tf32/NN": 1,
        "regime/huge_k/float32-tf32": 1,
        "regime/vocab_n/float32-tf32": 1,
        "regime/unaligned/float32-tf32": 1,
        "op/mm/float32/TN": 1,
        "op/mm/float32-tf32/TN": 1,
        "candidate/aten::mm": 4,
        "candidate/triton::mm": 2,
        "candidate/aten::bmm": 1,
        "candidate/triton::bmm": 1,
    }
    assert {name: n for name, n in cells.items() if n} == expected
    assert cells["candidate/decompose_k"] == 0  # its only timing failed
    assert list(cells) == all_cells()  # every listed cell, in order, none added
    report = cov.report()
    assert set(report["empty_cells"]) == {name for name in cells if name not in expected}
    assert "missing" not in report


def test_every_cell_of_the_grids_and_required_kinds_is_listed_even_without_data():
    cells = Coverage().cells()
    assert len(cells) == len(OPS) * len(DTYPE_COLUMNS) * len(LAYOUTS) + len(REGIMES) * len(DTYPE_COLUMNS) + len(
        REQUIRED_CANDIDATE_KINDS
    )
    assert not any(cells.values())
    for kind in ("aten::bias_addmm", "aten::baddbmm", "decompose_k", "triton::mm_persistent_tma"):
        assert f"candidate/{kind}" in cells


def test_a_candidate_kind_beyond_the_required_ones_gets_a_cell():
    cov = Coverage().add(dataset([(DECODE, [(KernelConfig("cutlass::gemm"), False)])]))
    assert cov.cells()["candidate/cutlass::gemm"] == 1


def test_missing_counts_follow_the_dtype_targets():
    cells = {
        "op/mm/float16/NT": 12,
        "op/mm/float32-tf32/NT": 15,
        "regime/huge_k/float32": 4,
        "candidate/decompose_k": 0,
        "regime/decode/bfloat16": 31,
    }
    assert missing_counts(cells) == {"op/mm/float16/NT": 18, "regime/huge_k/float32": 11, "candidate/decompose_k": 30}
    assert cell_target("op/baddbmm/float32-tf32/TT") == DEFAULT_TARGETS["float32-tf32"] == 15
    report = Coverage().report(DEFAULT_TARGETS)
    assert sum(report["missing"].values()) == sum(cell_target(c) for c in report["cells"])
    text = "\n".join(format_report(report))
    assert "op/baddbmm/float32-tf32/TT" in text and "missing (target 15)" in text


def test_cli_prints_and_writes_the_report(tmp_path):
    path = tmp_path / "d.json"
    save_dataset(dataset([(DECODE, [(ATEN_MM, False), (triton(), False)]), (ATTENTION, [(ATEN_BMM, False)])]), path)
    out = tmp_path / "cov.json"
    diode = [sys.executable, "-m", "torch_diode.cli", "dataset", "coverage"]
    proc = subprocess.run([*diode, path, "--report-json", out, "--targets"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["cells"]["op/mm/float16/NT"] == 1 and report["cells"]["regime/attention_bmm/bfloat16"] == 1
    assert "candidate/decompose_k" in report["empty_cells"] and report["missing"]["op/mm/float16/NT"] == 29
    assert "2 problems" in proc.stdout and "decode" in proc.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    proc = subprocess.run([*diode, bad], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "bad.json" in proc.stderr


@pytest.mark.parametrize(
    "problem, regimes",
    [
        (mm(16, 64, 64, "float16"), {"decode", "skinny_k"}),
        (mm(17, 32768, 16384, "float16"), {"huge_k", "vocab_n"}),
        (mm(1, 1777, 128, "bfloat16", op="bmm", b=112), {"decode", "attention_bmm", "large_batch_bmm", "unaligned"}),
        (mm(333, 128, 333, "bfloat16", tb=False, op="bmm", b=28), {"attention_bmm", "unaligned"}),
        (mm(256, 256, 64, "float16", op="bmm", b=8), {"skinny_k"}),  # token counts multiples of 8
        (mm(333, 128, 333, "bfloat16", tb=False), {"unaligned"}),  # not a bmm
    ],
)
def test_size_regimes(problem, regimes):
    cells = Coverage().add(dataset([(problem, [(ATEN_MM, False)])])).cells()
    column = problem.dtype_a
    assert {r for r in REGIMES if cells[f"regime/{r}/{column}"]} == regimes

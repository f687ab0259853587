"""`diode collect --fill-cells REPORT`: a draw aimed at the cells a coverage report lists as short."""

import json

from torch_diode.cli import build_parser
from torch_diode.cli.collect import _draw
from torch_diode.coverage import CellFill, problem_cells
from torch_diode.dataset_io import load_dataset
from torch_diode.types import Problem, problem_key

FP32_ALL = ["--ops", "mm", "bmm", "--dtypes", "float32", "--layouts", "NN", "NT", "TN", "TT"]
SMALL = ["--min-size", "16", "--max-size", "40", "--max-batch", "3"]


def _args(*words: str):
    return build_parser().parse_args(["collect", "--output", "x.json", *words])


def test_the_draw_takes_only_problems_of_short_cells_until_they_are_full():
    missing = {"op/bmm/float32/NT": 3, "op/mm/float32/TT": 2, "op/mm/float16/NN": 4, "candidate/decompose_k": 9}
    fill = CellFill(missing, tf32=False)
    drawn = _draw(_args(*FP32_ALL, *SMALL, "--num-shapes", "50", "--seed", "3"), set(), fill)
    cells = [set(problem_cells(p, (), tf32=False)) for p in drawn]
    assert sum("op/bmm/float32/NT" in c for c in cells) == 3
    assert sum("op/mm/float32/TT" in c for c in cells) == 2
    assert len(drawn) == 5 and len({problem_key(p) for p in drawn}) == 5
    # fp16 is not in the spec (its cell stays short); candidate cells are not a draw's to fill
    assert fill.still_short() == {"op/mm/float16/NN": 4} and not fill.done
    # the same report and seed draw the same problems (a killed run resumes the same chunks)
    again = _draw(_args(*FP32_ALL, *SMALL, "--num-shapes", "50", "--seed", "3"), set(), CellFill(missing, False))
    assert again == drawn
    # --num-shapes caps the draw before the cells are full
    assert (
        len(_draw(_args(*FP32_ALL, *SMALL, "--num-shapes", "2", "--seed", "3"), set(), CellFill(missing, False))) == 2
    )


def test_fp32_problems_fill_the_tf32_column_when_the_run_allows_tf32():
    p = Problem("mm", 1, 64, 64, 64, "float32", "float32", "float32", True, True)
    assert not CellFill({"op/mm/float32/TT": 1}, tf32=True).take(p)
    assert CellFill({"op/mm/float32-tf32/TT": 1}, tf32=True).take(p)
    assert CellFill({"op/mm/float32/TT": 1, "regime/decode/float32": 1}, tf32=False).take(p)


def test_collect_measures_the_filling_draw_and_resumes_it(tmp_path, diode_cli):
    report = tmp_path / "coverage.json"
    report.write_text(json.dumps({"missing": {"op/bmm/float32/NN": 1, "op/mm/float32/NT": 1}}))
    # bmm: Inductor's CPP template autotunes against ATen on the CPU (one choice for mm at these sizes)
    collect = ["collect", *FP32_ALL, *SMALL, "--ops", "bmm", "--backends", "CPP,ATEN", "--num-shapes", "8"]
    collect += ["--seed", "5", "--device", "cpu", "--fill-cells", report, "--output", tmp_path / "fill.json"]
    code, out, err = diode_cli(*collect)
    assert code == 0, err[-2000:]
    assert f"1 problems for the 2 cells short in {report} (2 problems short)" in out
    assert "still short after the draw: op/mm/float32/NT 1" in out  # no mm in this run's spec
    data = load_dataset(tmp_path / "fill.json")
    measured = [(p.op, p.transpose_a, p.transpose_b) for _, p, _ in data.problems()]
    assert measured == [("bmm", False, False)]
    assert data.metadata["sources"][-1]["settings"]["fill_cells"] == str(report)
    code, out, _ = diode_cli(*collect)
    assert code == 0 and "0 problems measured, 1 already done" in out, out


def test_a_bad_report_is_one_line_naming_it(tmp_path, capsys):
    from torch_diode.cli import main

    cases = [
        (b"not json", "not a JSON coverage report"),
        (b"\x1f\x8b\x08binary", "not a JSON coverage report"),
        (b'{"cells": {}}', "missing"),
        (b'{"missing": {"op/mm/float32/NN": -1}}', "missing.op/mm/float32/NN"),
        (b'{"missing": {"op/mm/float32/NN": 3, "op/gemm/float32/NN": 3}}', "missing.op/gemm/float32/NN: not a cell"),
    ]
    for i, (content, words) in enumerate(cases):
        report = tmp_path / f"report{i}.json"
        report.write_bytes(content)
        argv = ["collect", "--device", "cpu", "--fill-cells", str(report), "-o", str(tmp_path / "c.json")]
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err and str(report) in err and words in err, err
    assert main(["collect", "--device", "cpu", "--fill-cells", str(tmp_path / "absent.json"), "-o", "c.json"]) == 2
    assert "absent.json" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()

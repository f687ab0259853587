"""The held-out real-models shapeset: what it holds, and that random draws never produce its problems."""

import importlib.util
import json
from pathlib import Path

from torch_diode.cli import build_parser
from torch_diode.cli.collect import _draw
from torch_diode.collection.shapes import (
    HELDOUT_SHAPESETS,
    ShapeSpec,
    drop_heldout,
    held_keys,
    heldout_matches,
    list_shapesets,
    load_shapeset,
    problem_identity,
    random_problems,
    unique_problems,
)
from torch_diode.types import Problem, problem_key

ROOT = Path(__file__).resolve().parents[2]


def identity(p: Problem) -> tuple:
    return (p.op, p.B, p.M, p.N, p.K, p.dtype_a, p.dtype_b, p.dtype_out, p.transpose_a, p.transpose_b)


def test_realmodels_shapeset_is_its_generators_output_and_held_nowhere_else():
    spec = importlib.util.spec_from_file_location("maker", ROOT / "data" / "h100" / "make_realmodels_shapeset.py")
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    entries = load_shapeset("realmodels_heldout")
    assert [(e.model, e.layer, e.problem, e.count) for e in entries] == [
        (e.model, e.layer, e.problem, e.count) for e in load_shapeset(_written(maker, ROOT))
    ]
    problems = unique_problems([e.problem for e in entries])
    assert 150 <= len(problems) <= 320
    assert len({e.model for e in entries}) >= 25
    assert max(p.flops for p in problems) <= 2e12
    ops = {p.op for p in problems}
    assert ops == {"mm", "addmm", "bmm", "baddbmm"}
    assert {("T" if p.transpose_a else "N") + ("T" if p.transpose_b else "N") for p in problems} == {
        "NN",
        "NT",
        "TN",
        "TT",
    }
    assert {p.dtype_a for p in problems} == {"float16", "bfloat16", "float32"}
    assert any(p.N >= 250000 for p in problems) and any(p.N == 32768 for p in problems)
    others = set()
    for name in list_shapesets():
        if name not in HELDOUT_SHAPESETS:
            others |= {identity(e.problem) for e in load_shapeset(name)}
    for s in json.loads((ROOT / "benchmarks" / "e2e_shapes.json").read_text()):
        others.add(
            identity(
                Problem(
                    s["op"],
                    s.get("B", 1),
                    s["M"],
                    s["N"],
                    s["K"],
                    s["dtype"],
                    s["dtype"],
                    s["dtype"],
                    s.get("transpose_a", False),
                    s.get("transpose_b", False),
                )
            )
        )
    assert not {identity(p) for p in problems} & others


def _written(maker, root: Path) -> Path:
    """The generator's file, written again to a temporary copy of the shapesets folder."""
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp())
    shutil.copytree(maker.SHAPESETS, tmp / "shapesets")
    (tmp / "benchmarks").mkdir()
    shutil.copy(root / "benchmarks" / "e2e_shapes.json", tmp / "benchmarks")
    maker.ROOT, maker.SHAPESETS, maker.OUT = tmp, tmp / "shapesets", tmp / "shapesets" / "realmodels_heldout.json"
    maker.main()
    return maker.OUT


def test_heldout_matches_ignore_recorded_strides_and_bias_shape():
    entry = next(e for e in load_shapeset("realmodels_heldout") if e.problem.op == "addmm")
    p = entry.problem
    recorded = Problem(
        p.op,
        p.B,
        p.M,
        p.N,
        p.K,
        p.dtype_a,
        p.dtype_b,
        p.dtype_out,
        p.transpose_a,
        p.transpose_b,
        strides_a=(p.K, 1),
        strides_b=(1, p.K),
        bias_shape=(p.N,),
    )
    other = Problem(p.op, p.B, p.M + 1, p.N, p.K, p.dtype_a, p.dtype_b, p.dtype_out, p.transpose_a, p.transpose_b)
    assert [(m[0], m[1]) for m in heldout_matches([recorded, other])] == [(recorded, "realmodels_heldout")]
    assert drop_heldout([recorded, other]) == [other]
    assert problem_identity(recorded) == problem_identity(p)


def _collect_args(*words: str):
    return build_parser().parse_args(["collect", "--output", "x.json", *words])


# the two-tower in-batch scores of realmodels_heldout: fp32 mm NT 4096 x 4096 x 128
TWO_TOWER = ["--ops", "mm", "--dtypes", "float32", "--layouts", "NT", "--sizes", "4096", "128", "--num-shapes", "7"]


def test_random_draws_never_produce_a_heldout_problem():
    spec = ShapeSpec(num_shapes=40, ops=("mm",), dtypes=("float32",), layouts=("NT",), sizes=(4096, 128))
    held = Problem("mm", 1, 4096, 4096, 128, "float32", "float32", "float32", False, True)
    assert held in random_problems(spec, 0)  # the plain draw meets it...
    assert held not in drop_heldout(random_problems(spec, 0))  # ...`diode collect` drops it
    drawn = _draw(_collect_args(*TWO_TOWER), set())  # --exclude's and create-validation's draw
    assert len(drawn) == 7 and held not in drawn  # the 8 size combinations but the held-out one


def test_exclude_accepts_shapeset_names_and_files(tmp_path):
    shipped = held_keys(["realmodels_heldout"])
    assert shipped == {problem_key(problem_identity(e.problem)) for e in load_shapeset("realmodels_heldout")}
    path = tmp_path / "mine.json"
    path.write_text(
        json.dumps(
            {
                "name": "mine",
                "entries": [
                    {
                        "model": "m",
                        "layer": "l",
                        "op": "mm",
                        "M": 4096,
                        "N": 128,
                        "K": 4096,
                        "dtype": "float32",
                        "transpose_b": True,
                    }
                ],
            }
        )
    )
    mine = Problem("mm", 1, 4096, 128, 4096, "float32", "float32", "float32", False, True)
    assert held_keys([str(path)]) == {problem_key(mine)}
    drawn = _draw(_collect_args(*TWO_TOWER[:-1], "6"), held_keys([str(path)]))
    assert len(drawn) == 6 and mine not in drawn


def test_exclude_names_an_unknown_shapeset_in_one_line(diode_cli):
    code, _, err = diode_cli(
        "collect", "--device", "cpu", "--exclude", "no_such_shapeset", "--output", "never_written.json"
    )
    assert code == 2
    assert err.strip().splitlines() == [err.strip()] and "no_such_shapeset" in err
    assert not Path("never_written.json").exists()

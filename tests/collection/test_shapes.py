"""Random shape generation and shapeset parsing."""

import json

import pytest

from torch_diode.collection.shapes import ShapeSpec, list_shapesets, load_shapeset, random_problems
from torch_diode.formats import DatasetFormatError


def test_random_problems_are_deterministic_and_in_range():
    spec = ShapeSpec(num_shapes=200, min_size=16, max_size=4096, ops=("mm", "bmm"), dtypes=("bfloat16",))
    a, b = random_problems(spec, 7), random_problems(spec, 7)
    assert a == b and a != random_problems(spec, 8)
    assert all(16 <= s <= 4096 for p in a for s in (p.M, p.N, p.K))
    assert {p.op for p in a} == {"mm", "bmm"} and all(p.dtype_a == "bfloat16" for p in a)
    assert all(p.B == 1 for p in a if p.op == "mm") and any(p.B > 1 for p in a if p.op == "bmm")


def test_power_of_two_and_log_normal():
    p2 = random_problems(ShapeSpec(num_shapes=50, power_of_two=True, min_size=16, max_size=1024), 0)
    assert all(s & (s - 1) == 0 for p in p2 for s in (p.M, p.N, p.K))
    ln = random_problems(ShapeSpec(num_shapes=300, log_normal=True, log_normal_mean=5.0, log_normal_sigma=0.5), 0)
    sizes = sorted(s for p in ln for s in (p.M, p.N, p.K))
    assert 100 < sizes[len(sizes) // 2] < 200  # median of e^N(5, 0.5) is e^5 ~ 148


def test_bad_spec():
    with pytest.raises(ValueError, match="ops"):
        ShapeSpec(ops=("conv",))
    with pytest.raises(ValueError, match="sizes"):
        ShapeSpec(min_size=100, max_size=10)


def test_shapeset_parsing_and_errors(tmp_path):
    good = {
        "name": "t",
        "entries": [
            {
                "model": "m",
                "layer": "l",
                "op": "addmm",
                "M": 8,
                "N": 16,
                "K": 32,
                "dtype": "float16",
                "transpose_b": True,
                "count": 2,
            },
            {
                "model": "m",
                "layer": "attn",
                "op": "bmm",
                "B": 12,
                "M": 128,
                "N": 128,
                "K": 64,
                "dtype_a": "bfloat16",
                "dtype_b": "bfloat16",
                "dtype_out": "float32",
            },
        ],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(good))
    entries = load_shapeset(path)
    assert entries[0].problem.transpose_b and entries[0].count == 2 and entries[0].problem.op == "addmm"
    assert entries[1].problem.B == 12 and entries[1].problem.dtype_out == "float32"

    cases = [
        (lambda d: d["entries"][0].pop("M"), "entries[0].M"),
        (lambda d: d["entries"][0].__setitem__("op", "conv"), "entries[0].op"),
        (lambda d: d["entries"][0].pop("model"), "entries[0].model"),
        (lambda d: d["entries"][1].pop("dtype_out"), "entries[1].dtype_out"),
        (lambda d: d["entries"][0].__setitem__("K", -4), "entries[0].K"),
        (lambda d: d.pop("entries"), "entries"),
    ]
    for mutate, field in cases:
        data = json.loads(json.dumps(good))
        mutate(data)
        path.write_text(json.dumps(data))
        with pytest.raises(DatasetFormatError) as info:
            load_shapeset(path)
        assert info.value.field_path == field, (field, str(info.value))
    path.write_text("{broken")
    with pytest.raises(DatasetFormatError, match="not a readable JSON"):
        load_shapeset(path)
    with pytest.raises(FileNotFoundError, match="no such shapeset"):
        load_shapeset(tmp_path / "nope.json")


def test_shipped_shapesets_load():
    names = list_shapesets()
    for name in names:
        entries = load_shapeset(name)
        assert entries and all(e.model and e.layer for e in entries)


def test_size_pools_layouts_and_flop_cap():
    spec = ShapeSpec(
        num_shapes=300,
        sizes=(64, 4096, 14336),
        m_sizes=(16, 8192),
        layouts=("NN", "NT"),
        ops=("mm", "bmm"),
        dtypes=("float16",),
        max_batch=32,
        max_gflop=200,
    )
    problems = random_problems(spec, 3)
    assert problems == random_problems(spec, 3)
    assert {p.M for p in problems} == {16, 8192}
    assert {p.N for p in problems} | {p.K for p in problems} == {64, 4096, 14336}
    assert all(2 * p.B * p.M * p.N * p.K <= 200e9 for p in problems)
    assert not any(p.transpose_a for p in problems)
    assert 0.3 < sum(p.transpose_b for p in problems) / len(problems) < 0.7
    # without m_sizes, M comes from sizes too
    assert {p.M for p in random_problems(ShapeSpec(num_shapes=50, sizes=(32, 48)), 0)} == {32, 48}


def test_size_pool_options_are_checked():
    with pytest.raises(ValueError, match="layouts"):
        ShapeSpec(layouts=("NX",))
    with pytest.raises(ValueError, match="sizes"):
        ShapeSpec(sizes=(0, 16))
    with pytest.raises(ValueError, match="max_gflop"):
        random_problems(ShapeSpec(num_shapes=1, sizes=(8192,), max_gflop=1), 0)


def test_attention_shapeset_holds_no_gemm_of_the_e2e_benchmark():
    """attention_odd_tokens trains the shipped model: none of its problems may have the (M, N, K)
    of a GEMM that benchmarks/e2e.py measures (its shape list and its models' GEMMs)."""
    import importlib.util
    from pathlib import Path

    from torch_diode.collection.shapes import load_shapeset

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "make_attention_shapeset", root / "data" / "h100" / "make_attention_shapeset.py"
    )
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    entries = load_shapeset("attention_odd_tokens")
    assert len(entries) == len(maker.entries()) > 50
    held_out = maker.e2e_mnk()
    assert (197, 197, 64) in held_out and (2048, 512, 479) in held_out
    assert not [e for e in entries if (e.problem.M, e.problem.N, e.problem.K) in held_out]
    assert all(e.problem.misaligned_operands for e in entries)

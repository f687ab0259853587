"""The C++ feature extractor (torch_diode._C) against an independent Python reference.

The reference below is written from the definitions of the features (float64 Python arithmetic on
the data-model objects), never by calling _C, so a change to the C++ that alters a feature's
value, order or count makes these tests fail until the reference is updated to match.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np
import pytest

from torch_diode import _C
from torch_diode.features import (
    FEATURE_NAMES,
    NUM_FEATURES,
    config_rows,
    featurize,
    featurize_many,
    hardware_row,
    problem_row,
)
from torch_diode.types import DTYPES, OPS, Hardware, KernelConfig, Problem

RTOL = ATOL = 1e-5

# ----------------------------------------------------------------------------------------------
# Reference implementation (tests only).
# ----------------------------------------------------------------------------------------------
REF_OPS = ("mm", "addmm", "bmm", "baddbmm")
REF_DTYPE_BYTES = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int8": 1,
    "int32": 4,
    "float64": 8,
}
REF_TEMPLATE_KINDS = (
    "aten_mm",
    "aten_addmm",
    "aten_bias_addmm",
    "triton_mm",
    "triton_tma",
    "decompose_k",
    "contiguous_mm",
    "cpp",
    "other",
)
# The template family of each template id the tests use.
REF_TEMPLATE_KIND_OF = {
    "aten::mm": "aten_mm",
    "aten::bmm": "aten_mm",
    "aten::addmm": "aten_addmm",
    "aten::baddbmm": "aten_addmm",
    "aten::bias_addmm": "aten_bias_addmm",
    "triton::mm": "triton_mm",
    "triton::bmm": "triton_mm",
    "triton::mm_persistent_tma": "triton_tma",
    "decompose_k": "decompose_k",
    "contiguous_mm": "contiguous_mm",
    "cpp::gemm": "cpp",
    "something_new": "other",
}


def lg(x: float) -> float:
    """log2(1 + x)."""
    return math.log2(1.0 + x)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def reference_features(problem: Problem, config: KernelConfig, hardware: Hardware) -> OrderedDict[str, float]:
    """Feature name -> value (float64), in the documented feature order."""
    f: OrderedDict[str, float] = OrderedDict()
    B, M, N, K = problem.B, problem.M, problem.N, problem.K
    ba = REF_DTYPE_BYTES[problem.dtype_a]
    bb = REF_DTYPE_BYTES[problem.dtype_b]
    bo = REF_DTYPE_BYTES[problem.dtype_out]

    # ---- problem -----------------------------------------------------------------------------
    flops = 2.0 * B * M * N * K
    # Compulsory traffic: read A and B once, write the output once.
    min_bytes = float(B) * (M * K * ba + K * N * bb + M * N * bo)
    f["log2_batch"] = lg(B)
    f["log2_m"] = lg(M)
    f["log2_n"] = lg(N)
    f["log2_k"] = lg(K)
    f["log2_flops"] = lg(flops)
    f["log2_min_bytes"] = lg(min_bytes)
    f["log2_arith_intensity"] = lg(flops / min_bytes)
    f["bytes_a"] = float(ba)
    f["bytes_b"] = float(bb)
    f["bytes_out"] = float(bo)
    # The compute dtype is A's.
    f["dtype_is_fp32"] = float(problem.dtype_a == "float32")
    f["dtype_is_fp16"] = float(problem.dtype_a == "float16")
    f["dtype_is_bf16"] = float(problem.dtype_a == "bfloat16")
    f["dtype_is_fp8"] = float(problem.dtype_a in ("float8_e4m3fn", "float8_e5m2"))
    f["transpose_a"] = float(problem.transpose_a)
    f["transpose_b"] = float(problem.transpose_b)

    # log2 of the byte alignment (1..16 bytes) on which each operand's vectors start: the gcd of
    # the strides stepping between rows and batches (recorded strides where there are some, else
    # the dense layout); 16 elements where nothing steps between vectors (one row, broadcast).
    def leading(strides, rows, cols, transposed):
        if not strides:
            strides = (rows * cols, 1, rows) if transposed else (rows * cols, cols, 1)
        full = (0, *strides[-2:]) if len(strides) == 2 else tuple(strides[-3:])
        steps = [abs(s) for s, n in zip(full, (B, rows, cols)) if n > 1 and abs(s) > 1]
        return math.gcd(*steps) if steps else 16

    lds = {
        "a": leading(problem.strides_a, M, K, problem.transpose_a),
        "b": leading(problem.strides_b, K, N, problem.transpose_b),
        "out": leading(None, M, N, False),
    }
    for name, elem in (("a", ba), ("b", bb), ("out", bo)):
        row_bytes = lds[name] * elem
        f[f"align_{name}"] = float(next(e for e in (4, 3, 2, 1, 0) if row_bytes % (2**e) == 0))
    for op in REF_OPS:
        f[f"op_is_{op}"] = float(problem.op == op)
    f["has_bias"] = float(problem.op in ("addmm", "baddbmm"))

    # ---- config ------------------------------------------------------------------------------
    kind = REF_TEMPLATE_KIND_OF[config.template_id]
    for t in REF_TEMPLATE_KINDS:
        f[f"template_is_{t}"] = float(kind == t)

    tiled_names = (
        "is_tiled", "log2_block_m", "log2_block_n", "log2_block_k", "log2_group_m", "num_stages",
        "num_warps", "even_k", "allow_tf32", "use_fast_accum", "log2_tiles_m", "log2_tiles_n",
        "log2_tiles_total", "log2_waves", "wave_efficiency", "waste_m", "waste_n", "log2_k_iters",
        "waste_k", "smem_per_stage_kib", "smem_total_kib", "smem_fraction", "smem_exceeds",
        "log2_acc_regs_per_thread", "log2_tile_intensity", "log2_flops_per_tile",
        "log2_tile_bytes_per_k_iter", "log2_operand_regs_per_thread", "log2_regs_per_thread",
    )  # fmt: skip
    if config.block_m is None:
        # Untiled (ATen) choices: all block-derived features are zero, flags included, but TF32
        # (cuBLAS's TF32 kernels, on fp32 only).
        for name in tiled_names:
            f[name] = 0.0
        f["allow_tf32"] = float(config.allow_tf32 and problem.dtype_a == "float32")
        return load_features(split_features(f, problem, config), None, {})

    bm, bn, bk = config.block_m, config.block_n, config.block_k
    stages, warps = config.num_stages, config.num_warps
    tiles_m = ceil_div(M, bm)
    tiles_n = ceil_div(N, bn)
    tiles = B * tiles_m * tiles_n  # output tiles over the whole batch
    waves = tiles / hardware.sm_count  # fractional number of waves over the SMs
    k_iters = ceil_div(K, bk)
    smem_stage = bm * bk * ba + bk * bn * bb  # one A tile + one B tile, bytes
    smem_total = smem_stage * stages

    f["is_tiled"] = 1.0
    f["log2_block_m"] = lg(bm)
    f["log2_block_n"] = lg(bn)
    f["log2_block_k"] = lg(bk)
    f["log2_group_m"] = lg(config.group_m)
    f["num_stages"] = float(stages)
    f["num_warps"] = float(warps)
    f["even_k"] = float(config.even_k)
    f["allow_tf32"] = float(config.allow_tf32 and problem.dtype_a == "float32")  # TF32 changes only fp32 dots
    f["use_fast_accum"] = float(config.use_fast_accum)
    f["log2_tiles_m"] = lg(tiles_m)
    f["log2_tiles_n"] = lg(tiles_n)
    f["log2_tiles_total"] = lg(tiles)
    f["log2_waves"] = lg(waves)
    # Fraction of the SM slots in the launched waves that do work.
    f["wave_efficiency"] = tiles / (math.ceil(tiles / hardware.sm_count) * hardware.sm_count)
    # Fraction of the padded extent that lies outside the problem.
    f["waste_m"] = (tiles_m * bm - M) / (tiles_m * bm)
    f["waste_n"] = (tiles_n * bn - N) / (tiles_n * bn)
    f["log2_k_iters"] = lg(k_iters)
    f["waste_k"] = (k_iters * bk - K) / (k_iters * bk)
    f["smem_per_stage_kib"] = smem_stage / 1024.0
    f["smem_total_kib"] = smem_total / 1024.0
    f["smem_fraction"] = smem_total / hardware.smem_per_block_bytes
    f["smem_exceeds"] = float(smem_total > hardware.smem_per_block_bytes)
    # fp32 accumulator elements held by each of the block's threads (32 per warp).
    f["log2_acc_regs_per_thread"] = lg(bm * bn / (warps * 32))
    # Output elements per input element loaded per k step: bm*bn / (bm + bn).
    f["log2_tile_intensity"] = lg(bm * bn / (bm + bn))
    f["log2_flops_per_tile"] = lg(2.0 * bm * bn * K)
    f["log2_tile_bytes_per_k_iter"] = lg(smem_stage)
    # 32-bit registers per thread holding one k step of both operand tiles; then with the
    # fp32 accumulator.
    operand_regs = smem_stage / (4.0 * warps * 32)
    f["log2_operand_regs_per_thread"] = lg(operand_regs)
    f["log2_regs_per_thread"] = lg(operand_regs + bm * bn / (warps * 32))
    tiles = {"a": (bm * bk, ba, lds["a"]), "b": (bk * bn, bb, lds["b"])}
    return load_features(split_features(f, problem, config), warps * 32, tiles)


def split_features(f: OrderedDict[str, float], problem: Problem, config: KernelConfig) -> OrderedDict[str, float]:
    """decompose_k's split (version 3): a bmm of k_split batches over K / k_split each, into fp32
    partial sums that a reduction adds; zero for a config without a split."""
    split = dict(config.extras).get("k_split", 0)
    f["log2_k_split"] = lg(split) if split else 0.0
    f["log2_k_per_split"] = lg(ceil_div(problem.K, split)) if split else 0.0
    f["log2_split_partial_bytes"] = lg(4.0 * problem.B * split * problem.M * problem.N) if split else 0.0
    return f


def load_features(f: OrderedDict[str, float], threads: int | None, tiles: dict) -> OrderedDict[str, float]:
    """Version 4: each operand's loads per thread for one K step of its tile, at the widest vector
    (<= 16 bytes) its row alignment allows, and whether that vector is under 32 bits; zero for a
    choice that is not tiled (threads None)."""
    sub_word = {}
    for x in ("a", "b"):
        f[f"log2_loads_per_thread_{x}"], sub_word[x] = 0.0, 0.0
        if threads is not None:
            tile_elems, elem_bytes, ld = tiles[x]
            vector_bytes = math.gcd(ld * elem_bytes, 16)
            per_thread = tile_elems / (threads * max(vector_bytes / elem_bytes, 1.0))
            f[f"log2_loads_per_thread_{x}"] = math.log2(max(per_thread, 1.0))
            sub_word[x] = float(vector_bytes < 4)
    for x in ("a", "b"):
        f[f"sub_word_loads_{x}"] = sub_word[x]
    return f


def reference_matrix(pairs, hardware: Hardware) -> np.ndarray:
    rows = [list(reference_features(p, c, hardware).values()) for p, c in pairs]
    return np.array(rows, dtype=np.float64).reshape(len(pairs), len(REF_FEATURE_NAMES))


_SAMPLE_HW = Hardware("ref", (9, 0), 132, 80 << 30, 232448, "0")
REF_FEATURE_NAMES = list(
    reference_features(Problem("mm", 1, 8, 8, 8, "float16", "float16", "float16"), KernelConfig("aten::mm"), _SAMPLE_HW)
)
assert REF_FEATURE_NAMES == list(
    reference_features(
        Problem("mm", 1, 8, 8, 8, "float16", "float16", "float16"),
        KernelConfig("triton::mm", 16, 16, 16, 1, 1, 4),
        _SAMPLE_HW,
    )
), "reference: tiled and untiled rows must have the same columns"

# ----------------------------------------------------------------------------------------------
# Random problems and configs.
# ----------------------------------------------------------------------------------------------
H100 = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 << 30, 232448, "2.13.0", "3.5.0", "12.8")
A100 = Hardware("NVIDIA A100-SXM4-40GB", (8, 0), 108, 40 << 30, 166912, "2.13.0", "3.5.0", "12.8")

TILED_TEMPLATES = ("triton::mm", "triton::bmm", "triton::mm_persistent_tma", "decompose_k")
ATEN_TEMPLATES = ("aten::mm", "aten::bias_addmm", "aten::addmm")
BLOCKS = (16, 32, 64, 128, 256)


def _rand_dim(rng: np.random.Generator) -> int:
    r = rng.random()
    if r < 0.1:
        return int(rng.integers(1, 17))  # tiny, often below any block size
    if r < 0.3:
        base = int(rng.choice([64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]))
        return max(1, min(20000, base + int(rng.integers(-1, 2))))  # exact multiples and +-1
    return max(1, min(20000, int(round(2 ** rng.uniform(0, math.log2(20000))))))  # log-uniform


def _rand_problem(rng: np.random.Generator) -> Problem:
    op = OPS[int(rng.integers(len(OPS)))]
    B = int(rng.integers(1, 65)) if op in ("bmm", "baddbmm") else 1
    dt = str(rng.choice(["float16", "bfloat16", "float32"]))
    out = dt if rng.random() < 0.8 else "float32"
    return Problem(
        op, B, _rand_dim(rng), _rand_dim(rng), _rand_dim(rng), dt, dt, out,
        transpose_a=bool(rng.integers(2)), transpose_b=bool(rng.integers(2)),
    )  # fmt: skip


def _rand_config(rng: np.random.Generator) -> KernelConfig:
    flags = dict(even_k=bool(rng.integers(2)), allow_tf32=bool(rng.integers(2)), use_fast_accum=bool(rng.integers(2)))
    if rng.random() < 0.2:
        return KernelConfig(str(rng.choice(ATEN_TEMPLATES)), **flags)
    if rng.random() < 0.1:  # Inductor's decompose_k: no block sizes, a split of K
        return KernelConfig("decompose_k", **flags, extras={"k_split": int(2 ** rng.integers(1, 9))})
    return KernelConfig(
        str(rng.choice(TILED_TEMPLATES)),
        block_m=int(rng.choice(BLOCKS)),
        block_n=int(rng.choice(BLOCKS)),
        block_k=int(rng.choice(BLOCKS)),
        group_m=int(rng.choice([1, 8])),
        num_stages=int(rng.integers(1, 6)),
        num_warps=int(rng.choice([2, 4, 8])),
        **flags,
    )


def _make_cases(seed: int = 20240611, n_problems: int = 60, configs_per_problem: int = 5):
    """(problems, configs per problem): ~300 pairs, plus hand-picked edge cases."""
    rng = np.random.default_rng(seed)
    problems = [_rand_problem(rng) for _ in range(n_problems)]
    problems += [
        Problem("mm", 1, 1, 1, 1, "float16", "float16", "float16"),
        Problem("addmm", 1, 20000, 20000, 20000, "bfloat16", "bfloat16", "bfloat16", True, False),
        Problem("bmm", 7, 1000, 700, 1024, "float32", "float32", "float32", False, True),
        Problem("baddbmm", 3, 129, 255, 17, "float16", "float16", "float32", True, True),
        Problem("mm", 1, 4096, 4096, 8192, "float8_e4m3fn", "float8_e4m3fn", "bfloat16"),
        # K=479 with A's rows padded to 480 elements (recorded strides), B's not
        Problem(
            "addmm",
            1,
            2048,
            512,
            479,
            "float16",
            "float16",
            "float16",
            False,
            True,
            strides_a=(480, 1),
            strides_b=(1, 479),
        ),
        # one row of odd length (aligned: nothing steps between rows), a broadcast B
        Problem("mm", 1, 1, 333, 479, "float16", "float16", "float16", strides_b=(0, 1)),
        # decode attention: one query row per batch, 1025 keys: each batch's output row starts
        # 2050 bytes after the last
        Problem("bmm", 128, 1, 1025, 128, "bfloat16", "bfloat16", "bfloat16", False, True),
    ]
    configs = [[_rand_config(rng) for _ in range(configs_per_problem)] for _ in problems]
    # Deterministic coverage of every template id, both block extremes and the flags.
    configs[0] += [KernelConfig(t) for t in ATEN_TEMPLATES]
    configs[-1] += [
        KernelConfig("triton::mm", 16, 16, 16, 1, 1, 2),
        KernelConfig("triton::mm_persistent_tma", 256, 256, 256, 8, 5, 8, True, True, True),
        KernelConfig("decompose_k", 32, 32, 256, 8, 4, 4, even_k=True),
    ]
    return problems, configs


PROBLEMS, CONFIGS = _make_cases()
PAIRS = [(p, c) for p, cs in zip(PROBLEMS, CONFIGS) for c in cs]


def test_random_cases_cover_the_space():
    assert len(PAIRS) >= 300
    assert {p.op for p in PROBLEMS} == set(OPS)
    assert {p.dtype_a for p in PROBLEMS} == {"float16", "bfloat16", "float32", "float8_e4m3fn"}
    assert {c.template_id for _, c in PAIRS} == set(TILED_TEMPLATES) | set(ATEN_TEMPLATES)
    assert any(p.transpose_a for p in PROBLEMS) and any(p.transpose_b for p in PROBLEMS)
    dims = [d for p in PROBLEMS for d in (p.M, p.N, p.K)]
    assert min(dims) == 1 and max(dims) == 20000
    ref = reference_matrix(PAIRS, H100)
    col = {n: i for i, n in enumerate(REF_FEATURE_NAMES)}
    # Both sides of the data-dependent branches occur.
    assert set(ref[:, col["smem_exceeds"]]) == {0.0, 1.0}
    assert (ref[:, col["waste_m"]] > 0).any() and (ref[:, col["waste_m"]] == 0).any()
    assert (ref[:, col["waste_k"]] > 0).any() and (ref[:, col["waste_k"]] == 0).any()
    assert (ref[:, col["wave_efficiency"]] < 1).any() and (ref[:, col["wave_efficiency"]] == 1).any()
    for name in ("align_a", "align_b", "align_out"):
        assert (ref[:, col[name]] == 4).any() and (ref[:, col[name]] < 4).any()


# ----------------------------------------------------------------------------------------------
# 1. Parity.
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("hardware", [H100, A100], ids=["h100", "a100"])
def test_featurize_matches_reference(hardware):
    for problem, configs in zip(PROBLEMS, CONFIGS):
        got = featurize(problem, configs, hardware)
        assert got.dtype == np.float32 and got.shape == (len(configs), NUM_FEATURES)
        ref = reference_matrix([(problem, c) for c in configs], hardware)
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"{problem.short()}")


@pytest.mark.parametrize("hardware", [H100, A100], ids=["h100", "a100"])
def test_featurize_many_matches_reference(hardware):
    rng = np.random.default_rng(7)
    order = rng.permutation(len(PAIRS))  # interleave problems so problem_index really indexes
    index_of = {id(p): i for i, p in enumerate(PROBLEMS)}
    pairs = [PAIRS[i] for i in order]
    problem_index = np.array([index_of[id(p)] for p, _ in pairs], dtype=np.int64)
    got = featurize_many(PROBLEMS, problem_index, [c for _, c in pairs], hardware)
    assert got.dtype == np.float32 and got.shape == (len(pairs), NUM_FEATURES)
    np.testing.assert_allclose(got, reference_matrix(pairs, hardware), rtol=RTOL, atol=ATOL)
    # And row for row the same as the one-problem path.
    one = np.concatenate([featurize(p, cs, hardware) for p, cs in zip(PROBLEMS, CONFIGS)])
    np.testing.assert_array_equal(got, one[order])


def test_featurize_many_with_a_subset_of_problems():
    problems = PROBLEMS[:3]
    pairs = [(problems[i % 3], CONFIGS[i % 3][i % len(CONFIGS[i % 3])]) for i in range(12)]
    got = featurize_many(problems, np.arange(12) % 3, [c for _, c in pairs], H100)
    np.testing.assert_allclose(got, reference_matrix(pairs, H100), rtol=RTOL, atol=ATOL)


def test_template_kind_matches_reference():
    names = list(_C.template_kind_names())
    assert names == list(REF_TEMPLATE_KINDS)
    for template_id, kind in REF_TEMPLATE_KIND_OF.items():
        assert names[_C.template_kind(template_id)] == kind, template_id


# ----------------------------------------------------------------------------------------------
# 2-3. Names and enums.
# ----------------------------------------------------------------------------------------------
def test_feature_names():
    assert len(FEATURE_NAMES) == NUM_FEATURES == featurize(PROBLEMS[0], CONFIGS[0], H100).shape[1]
    assert list(_C.feature_names()) == REF_FEATURE_NAMES
    assert list(FEATURE_NAMES) == REF_FEATURE_NAMES
    assert _C.FEATURE_NAMES == tuple(REF_FEATURE_NAMES)
    assert len(set(REF_FEATURE_NAMES)) == len(REF_FEATURE_NAMES)


def test_type_stubs_are_installed_and_name_the_module():
    """nanobind's stubgen writes _C.pyi at build time; it and py.typed ship beside _C."""
    import ast
    from pathlib import Path

    package = Path(_C.__file__).parent
    assert (package / "py.typed").is_file()
    stub = ast.parse((package / "_C.pyi").read_text())
    declared = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {n.target.id for n in stub.body if isinstance(n, ast.AnnAssign)}
    public = {name for name in dir(_C) if not name.startswith("_")}
    assert declared == public


def test_enums_agree():
    assert tuple(_C.dtype_names()) == DTYPES
    assert tuple(_C.op_names()) == OPS
    assert tuple(_C.op_names()) == REF_OPS
    assert set(DTYPES) == set(REF_DTYPE_BYTES)


# ----------------------------------------------------------------------------------------------
# 4. Empty config list.
# ----------------------------------------------------------------------------------------------
def test_empty_config_list():
    out = featurize(PROBLEMS[0], [], H100)
    assert out.shape == (0, NUM_FEATURES) == (0, 69) and out.dtype == np.float32
    out = _C.compute_features(problem_row(PROBLEMS[0]), np.zeros((0, 11), np.int64), hardware_row(H100))
    assert out.shape == (0, 69) and out.dtype == np.float32
    out = featurize_many(PROBLEMS[:2], np.zeros(0, np.int64), [], H100)
    assert out.shape == (0, 69) and out.dtype == np.float32


# ----------------------------------------------------------------------------------------------
# 5. Threads (the binding releases the GIL around the computation).
# ----------------------------------------------------------------------------------------------
def test_threads_agree_with_single_threaded_result():
    problems = np.stack([problem_row(p) for p in PROBLEMS])
    index_of = {id(p): i for i, p in enumerate(PROBLEMS)}
    base_index = np.array([index_of[id(p)] for p, _ in PAIRS], np.int64)
    base_configs = config_rows([c for _, c in PAIRS])
    reps = -(-200_000 // len(PAIRS))
    problem_index = np.ascontiguousarray(np.tile(base_index, reps))
    configs = np.ascontiguousarray(np.tile(base_configs, (reps, 1)))
    hw = np.array([H100.sm_count, H100.smem_per_block_bytes], np.int64)

    expected = _C.compute_features_batch(problems, problem_index, configs, hw)
    assert expected.shape == (len(configs), NUM_FEATURES)
    # The big batch is the small one repeated, and the small one matches the reference.
    np.testing.assert_allclose(expected[: len(PAIRS)], reference_matrix(PAIRS, H100), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(expected, np.tile(expected[: len(PAIRS)], (reps, 1)))

    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(slot: int) -> None:
        try:
            for _ in range(2):
                results[slot] = _C.compute_features_batch(problems, problem_index, configs, hw)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    counter = 0
    while any(t.is_alive() for t in threads):
        counter += 1  # pure-Python work in the main thread while the extractor runs
        if counter % 10_000 == 0:
            for t in threads:
                t.join(timeout=0)
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(results) == [0, 1]
    for r in results.values():
        np.testing.assert_array_equal(r, expected)


def test_candidates_join_parts_and_make_configs_on_demand():
    """Candidates: the rows of every part in order, ATen rows flagged extern, and a candidate's
    KernelConfig made by its own part's maker (only when asked for)."""
    from torch_diode.features import Candidates

    tiled = [KernelConfig("triton::mm", 64, 32, 16, 8, 3, 4, True), KernelConfig("triton::mm", 128, 64, 32, 8, 4, 8)]
    aten = [KernelConfig("aten::bias_addmm"), KernelConfig("aten::addmm")]
    asked: list[int] = []

    def make(i: int) -> KernelConfig:
        asked.append(i)
        return tiled[i]

    c = Candidates(
        [
            (config_rows(aten[:1]), aten[:1].__getitem__),
            (config_rows(tiled), make),
            (config_rows(aten[1:]), aten[1:].__getitem__),
        ]
    )
    assert len(c) == 4 and asked == []
    np.testing.assert_array_equal(c.rows, config_rows([aten[0], *tiled, aten[1]]))
    assert c.extern.tolist() == [True, False, False, True]
    assert [c.locate(i) for i in range(4)] == [(0, 0), (1, 0), (1, 1), (2, 0)]
    assert [c.config(i) for i in range(4)] == [aten[0], *tiled, aten[1]] and asked == [0, 1]
    np.testing.assert_array_equal(Candidates.of(tiled).rows, config_rows(tiled))
    assert len(Candidates([])) == 0

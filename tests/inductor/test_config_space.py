"""The fast path's per-shape configs are the ones Inductor generates (checked on recorded data)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from torch_diode.collection.fast_sweep import choices_for, untiled_launcher
from torch_diode.collection.operands import layout_tensors
from torch_diode.dataset_io import load_dataset
from torch_diode.features import k_split
from torch_diode.inductor.config_space import aten_configs, decompose_k_configs, scaled_configs, triton_configs
from torch_diode.types import Problem

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "h100_sample.json.gz"


def test_derived_configs_match_what_inductor_generated():
    """The sample was recorded from stock max-autotune (DEFAULT) on torch 2.11: every Triton
    config Inductor benchmarked must be derived here, template parameters included (EVEN_K,
    ALLOW_TF32, ACC_TYPE, epilogue extras). torch 2.13's list has one config more than 2.11's."""
    ds = load_dataset(SAMPLE)
    same_torch = all(hw.torch_version.split("+")[0] == torch.__version__.split("+")[0] for hw, _, _ in ds.problems())
    for _, problem, timings in ds.problems():
        recorded = {t.config for t in timings if t.config.is_tiled}
        derived = set(triton_configs(problem, "DEFAULT"))
        assert recorded <= derived, (problem.short(), recorded - derived)
        assert len(derived - recorded) <= (1 if same_torch else 2), (problem.short(), derived - recorded)
        recorded_aten = {t.config.template_id for t in timings if not t.config.is_tiled}
        assert recorded_aten == {c.template_id for c in aten_configs(problem)}


def test_decompose_k_choices_are_the_splits_inductor_benchmarked():
    """data/h100/inductor_timed's decompose_k part was recorded from stock max-autotune (torch 2.11,
    an H100): the decompose_k candidates derived here are the ones Inductor offered, split for
    split, and none where it offered none."""
    from torch_diode.dataset_io import load_datasets

    paths = sorted((ROOT / "data" / "h100" / "inductor_timed").glob("h100_v2_decomposek_chunk*.msgpack.gz"))
    assert paths, "the decompose_k data is missing"
    checked = 0
    for _, problem, timings in load_datasets(paths).problems():
        recorded = sorted(k_split(t.config) for t in timings if t.config.template_id == "decompose_k")
        assert sorted(k_split(c) for c in decompose_k_configs(problem)) == recorded, problem.short()
        checked += bool(recorded)
    assert checked >= 50
    assert decompose_k_configs(Problem("mm", 1, 2048, 2048, 2048, "float16", "float16", "float16")) == []
    assert decompose_k_configs(Problem("bmm", 4, 16, 16, 65536, "float16", "float16", "float16")) == []


def test_decompose_k_launcher_computes_the_product():
    """decompose_k as the fast collector times it (on the CPU in fp32: the bmm into fp32 of half
    operands exists on CUDA only), with A stored transposed, which its reshape copies."""
    problem = Problem("mm", 1, 16, 24, 4096, "float32", "float32", "float32", transpose_a=True)
    choices = [c for c in choices_for(problem, 0, 0) if c.template_id == "decompose_k"]
    assert [k_split(c) for c in choices] == [k_split(c) for c in decompose_k_configs(problem)] and choices
    a, b, out, bias = layout_tensors(problem, "cpu")
    expected = a @ b
    for config in choices:
        out.zero_()
        untiled_launcher(problem, config, a, b, out, bias)()
        torch.testing.assert_close(out, expected, atol=1e-3, rtol=1e-4)


def test_scaling_and_pruning_follow_inductor():
    small = scaled_configs(16, 16, 16, "EXHAUSTIVE")
    assert all(bm == bn == bk == 16 for bm, bn, bk, *_ in small)
    assert all(w <= max(1, 16 * 16 // 256) for *_, w, _ in small)  # num_warps capped by the tile
    big = scaled_configs(4096, 4096, 4096, "EXHAUSTIVE")
    assert all(-(-bm * bn // (w * 32)) <= 255 for bm, bn, _, _, w, _ in big)  # no accumulator spills
    assert len(big) > 1000 and len(set(big)) == len(big)
    with pytest.raises(ValueError, match="search space"):
        scaled_configs(1, 1, 1, "EVERYTHING")


def test_choices_per_problem():
    p = Problem("mm", 1, 2048, 2048, 2048, "bfloat16", "bfloat16", "bfloat16")
    choices = choices_for(p, 350, seed=0)
    default = triton_configs(p, "DEFAULT")
    assert choices[0].template_id == "aten::mm" and choices[1 : 1 + len(default)] == default
    assert len(choices) == 1 + len(default) + 350 and len(set(choices)) == len(choices)
    assert choices == choices_for(p, 350, seed=0) and choices != choices_for(p, 350, seed=1)
    # the sample is chosen per raw config, so another large shape picks the same configs
    q = Problem("mm", 1, 4096, 1024, 2048, "bfloat16", "bfloat16", "bfloat16")
    key = lambda c: (c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps)
    assert {key(c) for c in choices_for(q, 350, 0)} == {key(c) for c in choices}
    assert all(c.even_k == (2048 % c.block_k == 0) for c in choices if c.is_tiled)


def test_variant_keys_share_kernels_where_triton_would():
    from torch_diode.collection.kernel_compiler import variant_key

    a = Problem("mm", 1, 1024, 2048, 512, "float16", "float16", "float16")
    b = Problem("mm", 1, 2048, 1024, 768, "float16", "float16", "float16")  # same classes: one binary per config
    c = Problem("mm", 1, 1024, 2048, 520, "float16", "float16", "float16")  # K % 16 != 0, EVEN_K off
    cfg = lambda p: triton_configs(p, "DEFAULT")[5]
    assert variant_key(a, cfg(a)) == variant_key(b, cfg(b))
    assert variant_key(a, cfg(a)) != variant_key(c, cfg(c))
    t = Problem("mm", 1, 1024, 2048, 512, "float16", "float16", "float16", transpose_b=True)
    assert variant_key(a, cfg(a)) != variant_key(t, cfg(t))  # another stride pattern
    f = Problem("mm", 1, 1024, 2048, 512, "bfloat16", "bfloat16", "bfloat16")
    assert variant_key(a, cfg(a)) != variant_key(f, cfg(f))


def test_operands_past_int32_offsets_get_their_own_int64_kernel():
    """A 512 x 4 x 1024 x 11008 bmm's second operand holds 5.8e9 elements: int32 offsets overflow
    (the H100 collection died of an illegal memory access on it), so its kernels index in int64."""
    from torch_diode.collection.kernel_compiler import _meta_layout, variant_key
    from torch_diode.collection.kernel_spec import launch_spec, needs_int64_index

    big = Problem("bmm", 512, 4, 1024, 11008, "bfloat16", "bfloat16", "bfloat16", transpose_b=True)
    small = Problem("bmm", 32, 4, 1024, 11008, "bfloat16", "bfloat16", "bfloat16", transpose_b=True)
    cfg = triton_configs(big, "DEFAULT")[0]
    assert launch_spec(*_meta_layout(big), cfg)[2]["meta"]["INDEX_64"] is True
    assert launch_spec(*_meta_layout(small), cfg)[2]["meta"]["INDEX_64"] is False
    assert variant_key(big, cfg) != variant_key(small, cfg)
    a, b, out, bias = _meta_layout(big)
    assert needs_int64_index(b) and not needs_int64_index(a, out, bias)


def test_compile_workers_write_the_callers_triton_cache(tmp_path):
    """Spawned workers re-import the caller's main module; one that points TRITON_CACHE_DIR at a
    fresh directory on import (as a benchmark did) must not give every worker its own cache, or
    the caller finds none of their kernels and compiles each again itself."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "main.py"
    script.write_text(
        textwrap.dedent("""
        import os, tempfile
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()  # runs again in every spawned worker
        from torch_diode.collection.kernel_compiler import KernelCompiler

        if __name__ == "__main__":
            with KernelCompiler(2) as compiler:
                seen = {compiler.pool.submit(os.getenv, "TRITON_CACHE_DIR").result() for _ in range(4)}
            print(seen == {os.environ["TRITON_CACHE_DIR"]}, len(seen))
    """)
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.split() == ["True", "1"], out.stdout + out.stderr


@pytest.mark.parametrize("space", ["DEFAULT", "EXHAUSTIVE"])
def test_candidate_rows_are_the_configs_feature_rows(space):
    """The choice handler featurizes triton_candidates' rows and makes KernelConfigs only for what
    it chooses: rows and configs must be exactly those of triton_configs, in its order."""
    from torch_diode.features import config_rows
    from torch_diode.inductor.config_space import triton_candidates

    for op, (m, n, k), dtype in [
        ("mm", (2048, 4096, 4096), "bfloat16"),
        ("addmm", (1024, 2304, 768), "float16"),
        ("bmm", (197, 197, 64), "float16"),
        ("addmm", (32, 1000, 2048), "float32"),
        ("mm", (5, 7, 9), "float16"),
        ("mm", (70000, 3, 300), "bfloat16"),
    ]:
        problem = Problem(op, 4 if op == "bmm" else 1, m, n, k, dtype, dtype, dtype, transpose_b=True)
        configs = triton_configs(problem, space)
        rows, config_at = triton_candidates(problem, space)
        assert rows.dtype == np.int64 and rows.shape == (len(configs), config_rows(configs[:1]).shape[1])
        np.testing.assert_array_equal(rows, config_rows(configs))
        assert [config_at(i) for i in range(len(rows))] == configs
        # first appearance kept, nothing repeated
        assert len(set(configs)) == len(configs)


def _kernel_params(body: str) -> tuple[list[str], list[str]]:
    """(runtime, constexpr) parameter names of a kernel body in triton_mm.py, read from its source
    (triton is not importable on CPU machines)."""
    import ast

    import torch_diode.collection.kernel_spec as kernel_spec

    source = Path(kernel_spec.__file__).with_name("triton_mm.py").read_text()
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == body)
    constexpr = [a.arg for a in fn.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)]
    runtime = [a.arg for a in fn.args.args if a.arg not in constexpr]
    return runtime, constexpr


@pytest.mark.parametrize(
    "problem, body",
    [
        (Problem("addmm", 1, 384, 1442, 1595, "float16", "float16", "float16", transpose_a=True), "_mm_body"),
        (Problem("mm", 1, 256, 512, 64, "bfloat16", "bfloat16", "bfloat16"), "_mm_body"),
        (Problem("baddbmm", 4, 77, 77, 64, "float16", "float16", "float16", bias_shape=(4, 77, 77)), "_bmm_body"),
    ],
)
def test_launch_spec_binds_the_kernels_parameters_with_the_bias_strides_as_constants(problem, body):
    """The launch passes the runtime parameters positionally and the constexprs by name; the
    bias's strides are constexprs (a broadcast bias's zero stride passed at run time made Triton
    build kernels that fault: benchmarks/results/collector_fault_h200.json), so a 1-D bias and a
    full one compile apart."""
    from torch_diode.collection.kernel_compiler import _meta_layout, variant_key
    from torch_diode.collection.kernel_spec import launch_spec

    runtime, constexpr = _kernel_params(body)
    cfg = triton_configs(problem, "DEFAULT")[0]
    a, b, out, bias = _meta_layout(problem)
    _, _, spec = launch_spec(a, b, out, bias, cfg)
    assert len(spec["args"]) == len(runtime)
    assert set(spec["meta"]) - {"num_stages", "num_warps"} == set(constexpr)
    assert not any(name.startswith("stride_bias") for name in runtime)
    if problem.op == "addmm":
        assert (spec["meta"]["stride_biasm"], spec["meta"]["stride_biasn"]) == (0, 1)  # (N,) broadcast
        full = Problem(**{**problem.__dict__, "bias_shape": (problem.M, problem.N)})
        assert launch_spec(*_meta_layout(full), cfg)[2]["meta"]["stride_biasm"] == problem.N
        assert variant_key(problem, cfg) != variant_key(full, cfg)
    elif problem.op == "baddbmm":
        assert (spec["meta"]["stride_biasq"], spec["meta"]["stride_biasm"]) == (77 * 77, 77)
    else:
        assert spec["meta"]["stride_biasm"] == spec["meta"]["stride_biasn"] == 0


def test_the_kernels_int_parameters_are_the_ones_kernel_spec_names_in_launch_order():
    """kernel_spec.MM_INTS and BMM_INTS are the runtime ints of the mm and bmm bodies, in the order
    the launch passes them after the four tensors; retyped_source makes any of them a constexpr
    (and a constexpr a runtime parameter), and names the parameter a signature lacks."""
    import ast

    import torch_diode.collection.kernel_spec as kernel_spec

    source = Path(kernel_spec.__file__).with_name("triton_mm.py").read_text()
    for body, names in (("_mm_body", kernel_spec.MM_INTS), ("_bmm_body", kernel_spec.BMM_INTS)):
        runtime, constexpr = _kernel_params(body)
        assert tuple(runtime[4:]) == names
        fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == body)
        text = ast.get_source_segment(source, fn)
        retyped = kernel_spec.retyped_source(text, constant=("K", names[-1]), runtime=("stride_biasm",))
        tree = ast.parse(retyped).body[0]
        typed = {a.arg for a in tree.args.args if a.annotation is not None}
        assert typed == (set(constexpr) | {"K", names[-1]}) - {"stride_biasm"}
        assert retyped.split("):\n", 1)[1] == text.split("):\n", 1)[1]  # the body as it was
        with pytest.raises(ValueError, match="'Q,'"):
            kernel_spec.retyped_source(text, constant=("Q",))
        with pytest.raises(ValueError, match="'M: tl.constexpr,'"):
            kernel_spec.retyped_source(text, runtime=("M",))


def test_ints_held_as_constants_make_a_variant_per_value(monkeypatch):
    """With kernel_spec.CONSTANT_INTS, problems whose named ints differ compile apart even where
    Triton's specialisation would share one binary (K of 768 and 1,024, both multiples of 16); the
    persistent TMA kernel, which takes no constants, is keyed as without them; and the compile
    workers take the setting over."""
    from torch._inductor import config

    from torch_diode.collection import kernel_spec
    from torch_diode.collection.kernel_compiler import _kernel_settings, variant_key
    from torch_diode.inductor.config_space import tma_configs

    short, long = (Problem("mm", 1, 320, 320, k, "float16", "float16", "float16", False, True) for k in (768, 1024))
    cfg = triton_configs(short, "DEFAULT")[0]
    with config.patch({"triton.enable_persistent_tma_matmul": True}):
        tma = tma_configs(short, 132)[0]
    assert variant_key(short, cfg) == variant_key(long, cfg)
    tma_key = variant_key(short, tma)
    monkeypatch.setattr(kernel_spec, "CONSTANT_INTS", ("K",))
    assert variant_key(short, cfg) != variant_key(long, cfg)
    assert variant_key(short, tma) == tma_key
    assert _kernel_settings()["CONSTANT_INTS"] == ("K",)
    batched = Problem("bmm", 12, 200, 64, 200, "bfloat16", "bfloat16", "bfloat16")
    more = Problem("bmm", 16, 200, 64, 200, "bfloat16", "bfloat16", "bfloat16")
    bmm = triton_configs(batched, "DEFAULT")[0]
    assert variant_key(batched, bmm) == variant_key(more, bmm)  # the batch only sizes the grid
    monkeypatch.setattr(kernel_spec, "CONSTANT_INTS", kernel_spec.BMM_INTS)
    assert variant_key(batched, bmm) != variant_key(more, bmm)


def test_aten_choices_of_fp32_carry_tf32_where_it_is_allowed():
    """cuBLAS runs TF32 kernels for fp32 GEMMs where TF32 is allowed; an ATen config (collected)
    and an ATen row (the handler's candidates) carry the flag then, on fp32 only."""
    from torch_diode import _C
    from torch_diode.features import FEATURE_NAMES, config_rows, featurize, featurize_rows, is_extern
    from torch_diode.inductor.config_space import with_aten_tf32
    from torch_diode.types import Hardware

    f32 = Problem("addmm", 1, 512, 1024, 768, "float32", "float32", "float32")
    f16 = Problem("addmm", 1, 512, 1024, 768, "float16", "float16", "float16")
    assert [c.allow_tf32 for c in aten_configs(f32, tf32=True)] == [True, True]
    assert not any(c.allow_tf32 for c in aten_configs(f32, tf32=False) + aten_configs(f16, tf32=True))
    configs = aten_configs(f32, tf32=False) + triton_configs(f32, "DEFAULT")[:3]
    rows = config_rows(configs)
    marked = with_aten_tf32(f32, rows, True)
    column = _C.config_columns().index("allow_tf32")
    assert (marked[is_extern(rows), column] == 1).all() and (marked[~is_extern(rows)] == rows[~is_extern(rows)]).all()
    assert with_aten_tf32(f32, rows, False) is rows and with_aten_tf32(f16, rows, True) is rows
    # the features tell cuBLAS's TF32 times from its full-precision ones, on the ATen rows too
    hw = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 * 2**30, 232448, "2.11.0", "3.6.0")
    tf32_feature = FEATURE_NAMES.index("allow_tf32")
    assert featurize_rows(f32, marked, hw)[0, tf32_feature] == 1.0
    assert featurize(f32, configs, hw)[0, tf32_feature] == 0.0


def test_tma_configs_are_the_ones_inductor_offered():
    """data/h100/inductor_timed's TMA part was recorded from stock max-autotune with
    ENABLE_PERSISTENT_TMA_MATMUL=1 (torch 2.11, an H100, 132 SMs): the persistent TMA configs
    derived here are the ones Inductor offered, in its order, template options included."""
    from torch._inductor import config

    from torch_diode.dataset_io import load_datasets
    from torch_diode.inductor.config_space import TMA_TEMPLATE_ID, tma_configs, tma_offered

    path = ROOT / "data" / "h100" / "inductor_timed" / "h100_v2_tma_chunk0000.msgpack.gz"
    checked = 0
    with config.patch({"triton.enable_persistent_tma_matmul": True}):
        for hardware, problem, timings in load_datasets([path]).problems():
            recorded = [t.config for t in timings if t.config.template_id == TMA_TEMPLATE_ID]
            assert tma_offered(problem, device_has_tma=True) == bool(recorded), problem.short()
            assert tma_configs(problem, hardware.sm_count) == recorded, problem.short()
            checked += bool(recorded)
    assert checked >= 12


def test_tma_is_offered_where_inductor_offers_it():
    """Inductor's use_triton_tma_template: the flag, a TMA device, mm/addmm, and operands whose
    rows and inner extent are multiples of 16 bytes with one contiguous dim."""
    from torch._inductor import config

    from torch_diode.inductor.config_space import tma_offered

    aligned = Problem("mm", 1, 1024, 512, 768, "bfloat16", "bfloat16", "bfloat16", transpose_a=True)
    with config.patch({"triton.enable_persistent_tma_matmul": False}):
        assert not tma_offered(aligned, device_has_tma=True)
    with config.patch({"triton.enable_persistent_tma_matmul": True}):
        assert tma_offered(aligned, device_has_tma=True)
        assert not tma_offered(aligned, device_has_tma=False)
        # A stored transposed with 1,001 rows: its outer stride is 2,002 bytes
        assert not tma_offered(
            Problem("mm", 1, 1001, 512, 768, "float16", "float16", "float16", transpose_a=True), True
        )
        # K = 100 fp16 rows of A are 200 bytes; fp32 rows of K = 100 are 400 bytes (aligned)
        assert not tma_offered(Problem("mm", 1, 64, 64, 100, "float16", "float16", "float16"), True)
        assert tma_offered(Problem("mm", 1, 64, 64, 100, "float32", "float32", "float32"), True)
        assert not tma_offered(Problem("bmm", 4, 512, 512, 512, "float16", "float16", "float16"), True)
        assert tma_offered(Problem("addmm", 1, 512, 512, 512, "float16", "float16", "float16", bias_shape=(512,)), True)
        # recorded strides, padded rows: 520 elements of fp16 are 1,040 bytes
        padded = Problem("mm", 1, 64, 512, 500, "float16", "float16", "float16", strides_a=(520, 1))
        assert not tma_offered(padded, True)  # the inner extent, 500 x 2 bytes, is not
        # fast collector: TMA configs follow the DEFAULT list only where offered and the SM count is known
        p = Problem("mm", 1, 2048, 2048, 2048, "float16", "float16", "float16")
        with_tma = choices_for(p, 10, 0, num_sms=132, device_has_tma=True)
        tma = [c for c in with_tma if c.template_id == "triton::mm_persistent_tma"]
        assert 1 <= len(tma) <= 8 and with_tma[: -len(tma)] == choices_for(p, 10, 0)
        assert all(c.extras_dict["NUM_SMS"] == 132 and c.num_warps != 2 for c in tma)
        assert choices_for(p, 10, 0, num_sms=132, device_has_tma=False) == choices_for(p, 10, 0)


def test_tma_launch_binds_the_persistent_kernels_parameters():
    """The persistent TMA kernel: runtime parameters positionally, constexprs by name, one program
    per SM at most (fewer where there are fewer tiles), its own compiled variants."""
    from torch._inductor import config

    from torch_diode.collection.kernel_compiler import _meta_layout, variant_key
    from torch_diode.collection.kernel_spec import launch_spec
    from torch_diode.inductor.config_space import tma_configs

    runtime, constexpr = _kernel_params("_tma_mm_body")
    with config.patch({"triton.enable_persistent_tma_matmul": True}):
        for problem, tiles in [
            (Problem("addmm", 1, 4096, 4096, 1536, "bfloat16", "bfloat16", "bfloat16", transpose_b=True), 132),
            (Problem("mm", 1, 256, 256, 4096, "float16", "float16", "float16", transpose_a=True), 4),
        ]:
            cfg = tma_configs(problem, 132)[1]
            assert (cfg.block_m, cfg.block_n) == (128, 128)
            batched, grid, spec = launch_spec(*_meta_layout(problem), cfg)
            assert not batched and grid == (tiles, 1, 1)
            assert len(spec["args"]) == len(runtime)
            assert set(spec["meta"]) - {"num_stages", "num_warps"} == set(constexpr)
            assert spec["meta"]["A_ROW_MAJOR"] == (not problem.transpose_a)
            assert spec["meta"]["B_ROW_MAJOR"] == (not problem.transpose_b)
            assert spec["meta"]["HAS_BIAS"] == (problem.op == "addmm")
            mm = triton_configs(problem, "DEFAULT")[0]
            assert variant_key(problem, cfg) != variant_key(problem, mm)


def test_layout_hints_say_what_a_constant_stride_tells_the_compiler():
    """Inductor's kernels bake sizes and strides in; the fast path passes them at run time, where
    Triton knows only 1 and multiples of 16. The hints carry the power-of-two factor below 16 of
    the strides that start each contiguous run, and of the K and N bounds."""
    from torch_diode.collection.kernel_compiler import _meta_layout
    from torch_diode.collection.kernel_spec import bound_run, layout_hints, offsets_hint

    assert offsets_hint((1024, 72), (72, 1)) == (1, 8)  # rows of 72 fp16 start at multiples of 8
    assert offsets_hint((72, 1024), (1, 72)) == (0, 8)  # column-major: runs along dim 0
    assert offsets_hint((1024, 64), (64, 1)) == (-1, 16)  # Triton specialises 64 itself
    assert offsets_hint((197, 197), (197, 1)) == (-1, 16)  # odd: a runtime int says as much
    assert offsets_hint((1, 196), (196, 1)) == (-1, 16)  # one row: no stride between runs
    assert offsets_hint((12, 196, 64), (196 * 64, 64, 1)) == (-1, 16)
    assert offsets_hint((12, 98, 64), (98 * 72, 72, 1)) == (1, 8)  # padded rows
    assert offsets_hint((12, 64, 100), (6404, 1, 64)) == (0, 4)  # the batch stride counts too
    assert offsets_hint((8, 8), (16, 2)) == (-1, 16)  # no contiguous dim
    assert [bound_run(n) for n in (72, 700, 64, 197, 1)] == [8, 4, 0, 0, 0]
    aligned = Problem("mm", 1, 1024, 1024, 1024, "float16", "float16", "float16")
    hints = layout_hints(*_meta_layout(aligned)[:3])
    assert all(v == -1 for k, v in hints.items() if k.endswith("_DIM")) and hints["K_RUN"] == hints["N_RUN"] == 0
    odd_n = Problem("mm", 1, 1000, 700, 1024, "float16", "float16", "float16", transpose_b=True)
    hints = layout_hints(*_meta_layout(odd_n)[:3])
    assert (hints["C_HINT_DIM"], hints["C_HINT_DIV"], hints["N_RUN"], hints["K_RUN"]) == (1, 4, 4, 0)
    assert hints["B_HINT_DIM"] == -1  # B stored as 700 rows of K = 1024


def test_rotations_spread_the_exhaustive_sample_over_a_runs_problems():
    """--exhaustive-rotations R: each problem takes one of R draws by a hash of it, always the same
    one; one rotation is the single draw every problem shares; R draws time more of the list."""
    from torch_diode.collection.fast_sweep import sample_draw

    problems = [Problem("bmm", 8, 100 + 7 * i, 64, 300 + 5 * i, "float16", "float16", "float16") for i in range(40)]
    key = lambda c: (c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps, c.group_m)

    def timed(rotations: int) -> set:
        return {key(c) for p in problems for c in choices_for(p, 48, 0, rotations=rotations) if c.is_tiled}

    p = problems[0]
    # one rotation is the draw every collection before the option took: the seeded hash of each config
    import hashlib

    def rank(c) -> int:
        text = f"0:{c.block_m}:{c.block_n}:{c.block_k}:{c.num_stages}:{c.num_warps}:{c.group_m}"
        return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")

    default = set(triton_configs(p, "DEFAULT"))
    before = sorted((c for c in triton_configs(p, "EXHAUSTIVE") if c not in default), key=rank)[:48]
    assert [c for c in choices_for(p, 48, 0, rotations=1) if c.is_tiled][len(default) :] == before
    assert choices_for(p, 48, 0, rotations=1) == choices_for(p, 48, 0) and sample_draw(p, 0, 1) == 0
    assert choices_for(p, 48, 0, rotations=8) == choices_for(p, 48, 0, rotations=8)
    assert len(choices_for(p, 48, 0, rotations=8)) == len(choices_for(p, 48, 0))
    assert len({sample_draw(q, 0, 8) for q in problems}) > 4 and sample_draw(p, 0, 8) != sample_draw(p, 1, 8)
    one, eight, each = timed(1), timed(8), timed(0)
    assert len(eight) > 3 * len(one) and len(each) > len(eight)
    assert len({sample_draw(q, 0, 0) for q in problems}) == len(problems)

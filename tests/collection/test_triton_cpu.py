"""The fast path's Triton kernels on a machine without a GPU, where triton is installed (CPU
builds of torch do not bring it: skipped there; the same kernels run on the GPU in
tests/gpu/test_fast_sweep_gpu.py):

- the persistent TMA kernel under Triton's interpreter: the product, for Inductor's configs of
  that template, both majornesses of each operand, partial tiles, the addmm epilogue, more tiles
  than programs;
- the mm/bmm kernels compiled for an H100 (sm_90 PTX, no GPU needed): with the layout hints, the
  global loads and stores are as wide as those of the same kernel with every size and stride a
  constant, as Inductor's kernels have them;
- the persistent TMA kernel compiled for an H100: tensor-map bulk copies for every config;
- the mm/bmm kernels with ints held as constants (kernel_spec.CONSTANT_INTS): every size and
  stride a constant compiles to the PTX of the kernel given them as constants."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from torch_diode.types import Problem

pytest.importorskip("triton")
OLD_NUMPY = tuple(int(x) for x in np.__version__.split(".")[:2]) < (2, 3)

SCRIPT = textwrap.dedent("""
    import os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    from torch._inductor import config
    from torch_diode.collection import triton_mm
    from torch_diode.collection.operands import layout_tensors
    from torch_diode.inductor.config_space import tma_configs, tma_offered
    from torch_diode.types import Problem

    # the interpreter's bf16 tl.dot is wrong (its own float emulation): fp16 and fp32 only
    cases = [
        ("mm", 40, 48, 64, False, False, "float16"),
        ("mm", 48, 40, 72, True, False, "float16"),
        ("addmm", 40, 56, 64, False, True, "float16"),
        ("mm", 64, 24, 40, True, True, "float32"),
        ("addmm", 24, 32, 40, True, True, "float16"),
        ("mm", 160, 200, 64, False, True, "float16"),  # 2 x 2 tiles of 128 on 3 programs: the persistent loop
    ]
    checked = 0
    for op, m, n, k, ta, tb, dtype in cases:
        p = Problem(op, 1, m, n, k, dtype, dtype, dtype, transpose_a=ta, transpose_b=tb)
        with config.patch({"triton.enable_persistent_tma_matmul": True}):
            assert tma_offered(p, device_has_tma=True), p.short()
        a, b, out, bias = layout_tensors(p, "cpu")
        expected = a.float() @ b.float() + (bias.float() if bias is not None else 0)
        for c in tma_configs(p, num_sms=3)[:2]:
            out.zero_()
            triton_mm.make_launcher(a, b, out, bias, c)()
            torch.testing.assert_close(out.float(), expected, atol=2e-2, rtol=1e-2)
            checked += 1
    print("checked", checked)
""")


@pytest.mark.skipif(
    not OLD_NUMPY, reason="Triton 3.6's interpreter converts 1-element arrays to int, which NumPy 2.3 refuses"
)
def test_persistent_tma_kernel_computes_the_product_in_the_interpreter():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert done.stdout.split() == ["checked", "12"]


def _ptx(problem, config, constants: bool = False, hints: bool = True) -> str:
    """The sm_90 PTX of the fast path's kernel of ``config`` for ``problem`` (compiled without a
    GPU); ``constants``: every size and stride a constexpr (Inductor's kernels); ``hints``: the
    layout hints as the launch passes them."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from torch_diode.collection import triton_mm
    from torch_diode.collection.kernel_compiler import _meta_layout

    fn, _, spec = triton_mm.launch_args(*_meta_layout(problem), config)
    meta = {k: v for k, v in spec["meta"].items() if k not in ("num_stages", "num_warps")}
    if not hints:
        meta.update({k: -1 if k.endswith("_DIM") else 16 for k in meta if "_HINT_" in k}, K_RUN=0, N_RUN=0, M_RUN=0)
    args = dict(zip(fn.arg_names, spec["args"]))
    signature, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(fn.arg_names):
        value = meta.get(name, args.get(name))
        if isinstance(value, torch.Tensor):
            signature[name] = "*" + {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[value.dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif name in meta or value == 1 or fn.params[i].is_constexpr or (constants and name != "BATCH"):
            signature[name], constexprs[(i,)] = "constexpr", value
        else:  # as Triton specialises a runtime int
            signature[name] = "i32"
            if value % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    compiled = triton.compile(
        ASTSource(fn, signature, constexprs, attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": config.num_warps, "num_stages": config.num_stages},
    )
    return compiled.asm["ptx"]


def _access_widths(problem, config, constants: bool, hints: bool = True) -> list[str]:
    """The kinds and byte widths of the global loads and stores in :func:`_ptx`."""
    import re

    ptx = _ptx(problem, config, constants, hints)
    found = set(re.findall(r"(?:ld|st)\.global[.\w]*", ptx))
    found |= {f"cp.async:{m}" for m in re.findall(r"cp\.async\.\w+\.shared\.global[^;]*?,\s*(0x\w+|\d+)", ptx)}
    return sorted(found)


@pytest.mark.parametrize(
    "problem",
    [
        Problem("addmm", 1, 4096, 4096, 1536, "bfloat16", "bfloat16", "bfloat16", transpose_b=True),
        Problem("mm", 1, 1000, 704, 1024, "float16", "float16", "float16", transpose_a=True),
        Problem("mm", 1, 128, 256, 100, "float32", "float32", "float32"),
    ],
    ids=lambda p: p.short(),
)
def test_persistent_tma_kernel_compiles_to_tensor_map_loads(problem):
    """Each config of the persistent TMA template that Inductor offers compiles for an H100, its
    operands read by TMA bulk copies through tensor maps (and half precision multiplied by
    wgmma)."""
    from torch._inductor import config

    from torch_diode.inductor.config_space import tma_configs, tma_offered

    with config.patch({"triton.enable_persistent_tma_matmul": True}):
        assert tma_offered(problem, device_has_tma=True)
    for tma_config in tma_configs(problem, num_sms=132):
        ptx = _ptx(problem, tma_config)
        assert "cp.async.bulk.tensor" in ptx and "tensormap" in ptx, tma_config
        assert ("wgmma" in ptx) == (problem.dtype_a != "float32"), tma_config


@pytest.mark.parametrize(
    "problem",
    [
        Problem("mm", 1, 1024, 1024, 72, "float16", "float16", "float16"),
        Problem("mm", 1, 1000, 700, 1024, "float16", "float16", "float16", transpose_b=True),
        Problem("mm", 1, 512, 512, 100, "float32", "float32", "float32"),
        Problem("bmm", 12, 200, 64, 200, "bfloat16", "bfloat16", "bfloat16"),
        # N = 72 < BLOCK_N: B's columns wrap around (rn % N), contiguous in runs of 8
        Problem("bmm", 32, 4096, 72, 4096, "float16", "float16", "float16"),
    ],
    ids=lambda p: p.short(),
)
def test_layout_hints_make_the_kernels_access_memory_as_inductors_do(problem):
    from torch_diode.inductor.config_space import triton_configs

    configs = triton_configs(problem, "DEFAULT")
    config = next((c for c in configs if c.block_n > problem.N), configs[3])  # a wrapping tile where there is one
    inductor = _access_widths(problem, config, constants=True)
    assert _access_widths(problem, config, constants=False) == inductor
    assert _access_widths(problem, config, constants=False, hints=False) != inductor  # what they were without


@pytest.mark.parametrize(
    "problem",
    [
        Problem("mm", 1, 308, 320, 768, "float16", "float16", "float16", transpose_b=True),
        Problem("addmm", 1, 257, 768, 3072, "bfloat16", "bfloat16", "bfloat16", transpose_b=True),
        Problem("bmm", 12, 200, 64, 200, "bfloat16", "bfloat16", "bfloat16"),
    ],
    ids=lambda p: p.short(),
)
def test_constant_ints_compile_the_kernel_with_those_ints_baked_in(problem, monkeypatch):
    """With kernel_spec.CONSTANT_INTS every size and stride, the launch's kernel is the fast path's
    body with those parameters retyped (triton_mm.retyped_kernel), and it compiles to the PTX of
    the fast path's kernel compiled with the same ints as constants; K alone is a kernel of its
    own, between the two."""
    from torch_diode.collection import kernel_spec
    from torch_diode.inductor.config_space import triton_configs

    config = triton_configs(problem, "DEFAULT")[0]
    batched = problem.op in ("bmm", "baddbmm")
    every = tuple(n for n in kernel_spec.int_names(batched) if n != "BATCH")

    def body(ptx: str) -> str:
        """The PTX's instructions: no debug sections or source locations, no kernel name (the
        retyped kernel's file name carries its source's hash)."""
        import re

        code = ptx.split(".section\t.debug")[0]
        lines = [line.split("//")[0].rstrip() for line in code.splitlines()]
        lines = [line for line in lines if line and not line.lstrip().startswith((".loc", ".file"))]
        return re.sub(r"_(?:mm|bmm)_body\w*", "KERNEL", "\n".join(lines))

    baked = body(_ptx(problem, config, constants=True))
    runtime = body(_ptx(problem, config))
    monkeypatch.setattr(kernel_spec, "CONSTANT_INTS", every)
    assert body(_ptx(problem, config)) == baked != runtime
    monkeypatch.setattr(kernel_spec, "CONSTANT_INTS", ("K",))
    assert body(_ptx(problem, config)) not in (baked, runtime)


def test_retyped_kernels_specialise_their_other_ints_as_the_collectors_kernels_do():
    """The ints a retyped kernel does not hold as constants are specialised as variant_key counts
    them: the batch count never (it only sizes the grid), M, N and K as SPECIALIZE_SIZES says."""
    from torch_diode.collection import triton_mm

    def unspecialised(kernel) -> set[str]:
        return {kernel.arg_names[i] if isinstance(i, int) else i for i in kernel.do_not_specialize}

    assert unspecialised(triton_mm.retyped_kernel(True, ("K",))) == {"BATCH"}
    assert unspecialised(triton_mm.retyped_kernel(True, ("K", "BATCH"))) == set()
    assert unspecialised(triton_mm.retyped_kernel(False, ("K",), specialize_sizes=False)) == {"M", "N"}
    assert unspecialised(triton_mm._bmm_kernel_spec) == {"BATCH"}  # the kernel it stands beside

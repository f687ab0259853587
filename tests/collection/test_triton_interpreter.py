"""The fast path's persistent TMA kernel under Triton's interpreter (CPU): the product, for
Inductor's configs of that template, both majornesses of each operand, partial tiles and the addmm
epilogue, more tiles than programs. Skipped where triton is not installed (CPU builds of torch do not bring it); the
same kernels run on the GPU in tests/gpu/test_fast_sweep_gpu.py."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("triton")
if tuple(int(x) for x in np.__version__.split(".")[:2]) >= (2, 3):
    pytest.skip(
        "Triton 3.6's interpreter converts 1-element arrays to int, which NumPy 2.3 refuses", allow_module_level=True
    )

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


def test_persistent_tma_kernel_computes_the_product_in_the_interpreter():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert done.stdout.split() == ["checked", "12"]

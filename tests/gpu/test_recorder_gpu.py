"""The recorder on a GPU: Triton configs with every parameter, ATen choices, failures."""

import pytest
import torch
from torch._inductor import config as inductor_config

from torch_diode.collection import collect
from torch_diode.collection.inductor_sweep import inductor_settings, make_inputs, op_function
from torch_diode.dataset_io import load_dataset
from torch_diode.features import featurize
from torch_diode.types import Problem

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "problem",
    [
        Problem("addmm", 1, 200, 96, 72, "float16", "float16", "float16"),  # K=72: not a multiple of most BLOCK_K
        Problem("bmm", 4, 64, 48, 128, "bfloat16", "bfloat16", "bfloat16", transpose_b=True),
    ],
    ids=lambda p: p.short(),
)
def test_recorder_on_gpu(problem, tmp_path):
    path = tmp_path / "gpu.msgpack"
    inputs = make_inputs(problem, "cuda")
    torch._dynamo.reset()
    with collect(path) as collector, inductor_config.patch(inductor_settings("DEFAULT", "ATEN,TRITON")):
        out = torch.compile(op_function(problem.op))(*inputs)
    torch.testing.assert_close(out, op_function(problem.op)(*inputs), atol=2e-2, rtol=2e-2)
    assert collector.stats["errors"] == 0 and collector.stats["gemms"] == 1
    ((hw, recorded, timings),) = list(load_dataset(path).problems())
    assert hw.compute_capability is not None and hw.sm_count > 0 and hw.triton_version
    assert (recorded.op, recorded.B, recorded.M, recorded.N, recorded.K) == (
        problem.op,
        problem.B,
        problem.M,
        problem.N,
        problem.K,
    )
    assert recorded.transpose_b == problem.transpose_b and recorded.dtype_a == problem.dtype_a
    if problem.op == "addmm":
        assert recorded.bias_shape == (1, problem.N)
    triton = [t for t in timings if t.config.template_id.startswith("triton::")]
    aten = [t for t in timings if t.config.template_id.startswith("aten::")]
    assert len(triton) >= 10 and aten
    for t in triton:
        c = t.config
        assert c.block_m and c.block_n and c.block_k and c.num_stages and c.num_warps and c.group_m
        assert c.acc_type == "tl.float32"
        # EVEN_K is what Inductor derived for this K, never forced
        assert c.even_k == (problem.K % c.block_k == 0)
    assert all(t.time_us > 0 for t in timings if not t.failed)
    feats = featurize(recorded, [t.config for t in timings], hw)
    assert feats.shape[0] == len(timings)

"""The handler's dynamic decision replayed on the shipped models and their held-out real-model
data over config.dynamic_sizes (benchmarks.dynamic_replay): no Triton pick of a dynamic GEMM is
predicted slower than cuBLAS at any size by more than the margin, where the static decision at the
hint would pick such configs."""

import math

import pytest

from benchmarks.dynamic_replay import replays, summarize
from benchmarks.selection_replay import model_contract
from torch_diode.selection import DYNAMIC_MARGIN, Policy

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "model, data", [("NVIDIA-H100-matmul", "data/h100/realmodels"), ("NVIDIA-H200-matmul", "data/h200/realmodels")]
)
def test_no_dynamic_pick_is_predicted_slower_than_cublas_at_any_size(model, data):
    records = list(replays(model, [data], model_contract(model), Policy.from_config()))
    assert len(records) > 200
    for r in records:
        if not r["dynamic_pick_is_aten"]:
            assert r["predicted_over_aten_worst"] <= DYNAMIC_MARGIN * (1 + 1e-9), r["problem"]
            assert r["unsure"] is None
    summary = summarize(records)
    # the static decision at the hint picks configs that lose to cuBLAS at other sizes: the rule matters
    assert summary["static_triton_picks_predicted_slower_than_aten_at_some_size"] > 10
    assert summary["dynamic_triton_picks"] < summary["static_triton_picks"]
    ratio = summary["measured_triton_pick_over_aten_worst"]
    assert ratio is None or (math.isfinite(ratio) and ratio <= 1.0), summary

"""The decision of a GEMM with symbolic sizes (selection.dynamic): judged over the sizes it runs,
cuBLAS kept unless one Triton config is predicted to win at every one of them."""

import dataclasses
import math

import numpy as np
import pytest
from selection_policies import make_policy

from torch_diode.features import config_rows, featurize, is_extern
from torch_diode.selection import (
    DYNAMIC_MARGIN,
    Confidence,
    Pool,
    SizeRange,
    decide_range,
    judged_over_range,
    size_scenarios,
)
from torch_diode.types import Hardware, KernelConfig, Problem

H100 = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 << 30, 232448, "2.11.0", "3.6.0", "13.0")
CONFIGS = [
    KernelConfig("aten::mm"),
    KernelConfig("triton::mm", 64, 64, 64, 8, 3, 4),
    KernelConfig("triton::mm", 128, 128, 64, 8, 4, 8),
]
SIZES = (1, 8, 64, 512, 4096)


def sized(times_us: dict[int, list[float]]):
    """The problems (M over SIZES, the hint 64 first), their feature rows and predictions (one
    member, the given times of CONFIGS at each M)."""
    ms = [64] + [m for m in SIZES if m != 64]
    problems = [Problem("mm", 1, m, 4096, 4096, "bfloat16", "bfloat16", "bfloat16") for m in ms]
    features = [featurize(p, CONFIGS, H100) for p in problems]
    predictions = [np.log([times_us[m]]) for m in ms]
    pool = Pool(features[0], is_extern(config_rows(CONFIGS)))
    return problems, pool, predictions, features


def test_a_config_predicted_faster_at_every_size_is_picked_and_cublas_rides_along_with_two_picks():
    times = {m: [10.0 * m, 8.0 * m, 9.0 * m] for m in SIZES}
    problems, pool, predictions, features = sized(times)
    decision = decide_range(problems, pool, predictions, features, make_policy(top_k=1, extern_preference=1.1))
    assert decision.chosen == (1,) and decision.dynamic and not decision.extern_preferred
    assert decision.notes()["dynamic_decisions"] == 1 and decision.notes()["dynamic_kept_aten"] == 0
    two = decide_range(problems, pool, predictions, features, make_policy(top_k=2, extern_preference=1.1))
    assert two.chosen == (1, 0)


def test_cublas_is_kept_where_the_best_config_at_the_hint_loses_at_another_size():
    """Config 1 is 20% faster than cuBLAS at the hint and most sizes, 1% slower at M=1 (decode):
    the range keeps cuBLAS, and says so."""
    times = {m: [10.0, 8.0, 9.5] for m in SIZES}
    times[1] = [10.0, 10.1, 12.0]
    problems, pool, predictions, features = sized(times)
    decision = decide_range(problems, pool, predictions, features, make_policy(top_k=1, extern_preference=1.1))
    assert decision.chosen == (0,) and decision.extern_preferred
    assert decision.notes()["dynamic_kept_aten"] == 1
    # what the static rule would have picked at the hint: config 1
    times[1] = [10.0, 9.9, 12.0]
    problems, pool, predictions, features = sized(times)
    assert decide_range(problems, pool, predictions, features, make_policy(top_k=1)).chosen == (1,)


def test_a_win_within_the_extern_preference_on_the_range_keeps_cublas():
    times = {m: [10.0, 9.5, 12.0] for m in SIZES}  # 5% faster everywhere: within the 10% preference
    problems, pool, predictions, features = sized(times)
    assert decide_range(problems, pool, predictions, features, make_policy(top_k=1, extern_preference=1.1)).chosen == (
        0,
    )


def test_a_size_the_model_is_unsure_of_keeps_cublas_without_widening():
    """Out of the training data's range at M=4096: unsure, and for a dynamic GEMM that means the ATen
    choice alone (Inductor would benchmark a widened set at the hint only)."""
    times = {m: [10.0, 5.0, 9.0] for m in SIZES}
    problems, pool, predictions, features = sized(times)
    from torch_diode.features import FEATURE_NAMES
    from torch_diode.selection.contract import RANGE_FEATURES

    hint_rows = features[0]
    ranges = {
        name: (float(hint_rows[0, FEATURE_NAMES.index(name)]) - 3, float(hint_rows[0, FEATURE_NAMES.index(name)]) + 3)
        for name in RANGE_FEATURES
    }
    contract = Confidence(feature_ranges=ranges, feature_ranges_by_dtype={"bfloat16": ranges})
    decision = decide_range(problems, pool, predictions, features, make_policy(top_k=1), contract)
    assert decision.chosen == (0,) and decision.unsure == "out_of_range" and decision.widened == ()
    assert decision.notes()["unsure_out_of_range"] == 1 and decision.notes()["unsure_widened"] == 0
    assert decide_range(
        problems, pool, predictions, features, make_policy(top_k=1), unsure="hardware_family"
    ).chosen == (0,)


def test_the_margin_is_at_least_as_fast_as_cublas():
    assert DYNAMIC_MARGIN == 1.0


@pytest.mark.parametrize(
    "size_range, expected",
    [
        (SizeRange(hint=64, lower=2, upper=None), (64, 2, 8, 512, 4096)),
        (SizeRange(hint=100, lower=8, upper=1000), (100, 8, 1000, 64, 512)),
        (SizeRange(hint=7, lower=7, upper=7), (7,)),
    ],
)
def test_a_symbol_is_judged_at_its_hint_its_bounds_and_the_distribution_within_them(size_range, expected):
    assert size_range.sizes(SIZES) == expected


def test_scenarios_vary_one_symbol_at_a_time_the_hints_first():
    ranges = {"s0": SizeRange(4, 2, 16), "s1": SizeRange(100, 2, None)}
    scenarios = size_scenarios(ranges, (1, 8, 512))
    assert scenarios[0] == {"s0": 4, "s1": 100}
    assert {"s0": 16, "s1": 100} in scenarios and {"s0": 8, "s1": 100} in scenarios
    assert {"s0": 4, "s1": 512} in scenarios and {"s0": 4, "s1": 2} in scenarios
    assert {"s0": 512, "s1": 100} not in scenarios  # past s0's bound
    assert len(scenarios) == len({tuple(sorted(s.items())) for s in scenarios})


def test_the_problems_at_each_size_are_featurized_apart():
    """The features of a config differ with M (the same config, other sizes): what the range is judged on."""
    problems, _, _, features = sized({m: [1.0, 1.0, 1.0] for m in SIZES})
    assert not np.allclose(features[0], features[1])
    assert dataclasses.replace(problems[0], M=1) == problems[1]
    assert math.isfinite(float(features[1].sum()))


def test_only_the_aten_choices_and_the_templates_no_slower_at_the_hint_are_judged_beyond_it():
    """A template slower than cuBLAS at the hint can never win the range: the handler predicts it at
    the hint alone. Given NaN for it at the other sizes, the decision is the one of full predictions."""
    rng = np.random.default_rng(0)
    configs = [KernelConfig("aten::mm")] + [
        KernelConfig("triton::mm", 32 << (i % 3), 64, 32 << (i % 2), 8, 2 + i % 4, 4) for i in range(12)
    ]
    ms = [64, 1, 8, 512, 4096]
    problems = [Problem("mm", 1, m, 4096, 4096, "bfloat16", "bfloat16", "bfloat16") for m in ms]
    features = [featurize(p, configs, H100) for p in problems]
    pool = Pool(features[0], is_extern(config_rows(configs)))
    picks = set()
    for trial in range(40):
        predictions = [np.log(10.0) + rng.normal(0.0, 0.1, size=(3, len(configs))) for _ in ms]
        judged = judged_over_range(pool, predictions[0])
        hint = predictions[0].mean(axis=0)
        assert 0 in judged and set(judged[1:]) == {i for i in range(1, len(configs)) if hint[i] <= hint[0]}
        partial = [predictions[0]] + [
            np.where(np.isin(np.arange(len(configs)), judged), p, np.nan) for p in predictions[1:]
        ]
        for policy in (make_policy(top_k=1), make_policy(top_k=2, extern_preference=1.02)):
            full = decide_range(problems, pool, predictions, features, policy)
            got = decide_range(problems, pool, partial, features, policy)
            assert np.array_equal(got.order, full.order), trial
            picks.add(full.first)
            assert dataclasses.replace(got, order=None) == dataclasses.replace(full, order=None), trial
    assert 0 in picks and len(picks) > 1  # cuBLAS kept, and templates picked

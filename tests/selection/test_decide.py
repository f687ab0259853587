import math

import numpy as np
import pytest
from selection_policies import make_policy

from torch_diode.selection import NoUsableCandidate, selection_order
from torch_diode.types import KernelConfig, Problem


def test_plain_order_without_preference():
    t = np.log([5.0, 3.0, 4.0, 1.0])
    assert selection_order(t, [True, False, False, False]).tolist() == [3, 1, 2, 0]


def test_extern_goes_first_only_within_the_margin():
    # template 1.0 us, extern 1.08 us: within 10%, the extern leads
    t = np.log([1.08, 1.0, 2.0])
    extern = [True, False, False]
    assert selection_order(t, extern, 1.1).tolist() == [0, 1, 2]
    assert selection_order(t, extern, 1.0).tolist() == [1, 0, 2]
    # 20% slower: the template keeps the lead
    t2 = np.log([1.2, 1.0, 2.0])
    assert selection_order(t2, extern, 1.1).tolist() == [1, 0, 2]


def test_only_usable_candidates_and_the_best_extern_among_several():
    t = np.array([math.log(v) for v in (1.05, 1.02, 1.0, 0.5)])
    extern = np.array([True, True, False, False])
    # candidate 3 is not usable (e.g. too much shared memory); 2 is the best template
    order = selection_order(t, extern, 1.1, usable=np.array([0, 1, 2]))
    assert order.tolist() == [1, 2, 0]


def test_no_extern_candidates():
    t = np.log([2.0, 1.0])
    assert selection_order(t, [False, False], 1.5).tolist() == [1, 0]


def test_usable_candidates_leave_out_configs_that_cannot_compile_or_must_spill():
    """Real C++ features of the H100 validation problem where a model once picked a 350x slower
    kernel: 32x256x128 with 2 warps needs ~415 registers per thread (it spills); 128x128x64 with
    4 warps is ordinary; 256x256x128 with 5 stages needs more shared memory than the device has."""
    from torch_diode.features import FEATURE_NAMES, featurize
    from torch_diode.selection import SPILL_LOG2_REGS, usable_candidates
    from torch_diode.types import Hardware, KernelConfig, Problem

    h100 = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 << 30, 232448, "2.11.0", "3.6.0", "13.0")
    problem = Problem(
        op="bmm",
        B=8,
        M=464,
        N=152,
        K=2355,
        dtype_a="bfloat16",
        dtype_b="bfloat16",
        dtype_out="bfloat16",
        transpose_a=True,
    )

    def tiled(m, n, k, stages, warps):
        return KernelConfig(
            template_id="triton::bmm", block_m=m, block_n=n, block_k=k, group_m=8, num_stages=stages, num_warps=warps
        )

    configs = [
        KernelConfig(template_id="aten::bmm"),
        tiled(128, 128, 64, 3, 4),
        tiled(32, 256, 128, 2, 2),
        tiled(256, 256, 128, 5, 8),
    ]
    features = featurize(problem, configs, h100)
    regs = features[:, FEATURE_NAMES.index("log2_regs_per_thread")]
    assert regs[2] >= SPILL_LOG2_REGS > regs[1]
    assert features[3, FEATURE_NAMES.index("smem_exceeds")] == 1.0
    assert usable_candidates(features).tolist() == [0, 1]


def test_widen_takes_the_best_predicted():
    from torch_diode.selection import widen

    order = np.array([4, 2, 0, 3, 1])
    default = np.array([True, True, False, True, False])
    # without the extern mask nothing is guaranteed: the first top_k of the order, whatever their list
    assert widen(order, 3, default) == [4, 2, 0]
    assert widen(order, 1, default) == [4]
    assert widen(order, 0, default) == [4]
    assert widen(order, 10, default) == [4, 2, 0, 3, 1]
    assert widen(order, 3) == [4, 2, 0]


def test_beyond_default_list_marks_only_triton_configs_outside_inductors_list():
    from torch_diode.features import config_rows
    from torch_diode.inductor.config_space import beyond_default_list, triton_configs

    problem = Problem("addmm", 1, 2048, 512, 479, "float16", "float16", "float16", transpose_b=True)
    default = triton_configs(problem, "DEFAULT")
    exhaustive = triton_configs(problem, "EXHAUSTIVE")
    configs = exhaustive + [KernelConfig("aten::bias_addmm"), KernelConfig("aten::addmm")]
    marked = beyond_default_list(problem, config_rows(configs))
    assert marked.tolist() == [c.is_tiled and c not in default for c in configs]
    assert (~marked).sum() == len(default) + 2
    assert beyond_default_list(problem, config_rows([])).shape == (0,)


def _kind_features(kinds):
    from torch_diode.features import FEATURE_NAMES

    features = np.zeros((len(kinds), len(FEATURE_NAMES)), np.float32)
    for i, kind in enumerate(kinds):
        features[i, FEATURE_NAMES.index(f"template_is_{kind}")] = 1.0
    return features


def test_widen_always_holds_the_best_aten_choice_and_the_best_default_template():
    from torch_diode.selection import widen

    # order: a beyond-DEFAULT template first, then three ATen choices, then two DEFAULT templates
    order = np.array([0, 1, 2, 3, 4, 5])
    extern = np.array([False, True, True, True, False, False])
    default = np.array([False, True, True, True, True, True])
    assert widen(order, 3, default) == [0, 1, 2]  # without the extern mask: no DEFAULT template
    # the best DEFAULT template takes the last place (never more than top_k)
    assert widen(order, 3, default, extern) == [0, 1, 4]
    assert widen(order, 2, default, extern) == [0, 1]  # the ATen choice is never given up for it
    assert widen(order, 10, default, extern) == [0, 1, 2, 3, 4, 5]
    # templates fill the places: the best ATen choice takes the last one
    order = np.array([4, 5, 0, 1])
    assert widen(order, 3, default, extern) == [4, 5, 1]
    assert widen(order, 2, default, extern) == [4, 1]
    assert widen(order, 1, default, extern) == [4]  # unsure_top_k 1: nothing benchmarked
    # configs beyond the DEFAULT list fill the places too; the DEFAULT template and ATen take the last two
    order = np.array([0, 5, 4, 1])
    default = np.array([False, True, False, True, False, True])
    assert widen(order, 3, default, extern) == [0, 5, 1]
    assert widen(order, 4, default, extern) == [0, 5, 4, 1]
    assert widen(np.array([0, 4, 1, 5]), 3, default, extern) == [0, 1, 5]
    rng = np.random.default_rng(0)
    for _ in range(500):  # never more than top_k, order[0] first, the best ATen choice and DEFAULT template held
        n, k = int(rng.integers(1, 12)), int(rng.integers(1, 8))
        order, extern, default = rng.permutation(n), rng.random(n) < 0.3, rng.random(n) < 0.7
        got = widen(order, k, default, extern)
        assert len(got) <= k and got[0] == order[0] and len(set(got)) == len(got)
        assert got == sorted(got, key=order.tolist().index)
        atens, templates = order[extern[order]], order[~extern[order] & default[order]]
        if k > 1 and len(atens):
            assert atens[0] in got
        # the DEFAULT template: where there is room besides the first pick and the ATen choice
        template_held = len(templates) and (k > 2 or (k == 2 and extern[order[0]]))
        if template_held:
            assert templates[0] in got
        # every place is taken, and the places the two guarantees leave go to the best predicted
        assert len(got) == min(k, n)
        guaranteed = {int(atens[0])} if k > 1 and len(atens) else set()
        guaranteed |= {int(templates[0])} if template_held else set()
        rest = [i for i in got if i not in guaranteed]
        assert rest == [int(i) for i in order if int(i) not in guaranteed][: len(rest)]


def test_unknown_template_kinds_are_never_the_first_pick_nor_the_safety_net():
    """decompose_k predicted fastest, in a model whose training data held no decompose_k timing:
    the pick is the best known candidate; the ATen choice that rides along is aten::mm, not
    decompose_k; only an unsure, benchmarked decision takes it along."""
    from torch_diode.selection import Confidence, Pool, decide
    from torch_diode.selection.contract import KNOWN_BEFORE_V2

    problem = Problem("mm", 1, 4096, 4096, 4096, "float16", "float16", "float16")
    kinds = ["decompose_k", "aten_mm", "triton_mm", "triton_mm", "triton_tma"]
    features = _kind_features(kinds)
    features[:, 3] = 12.0  # log2_k; the other range features 0
    extern = np.array([False, True, False, False, False])  # features.is_extern: ATen kinds only
    pool = Pool(features, extern, np.zeros(5, dtype=bool))
    predicted = np.log([1.0, 3.0, 2.0, 2.5, 0.5])
    policy = make_policy()
    sure = decide(problem, pool, predicted, policy, Confidence(template_kinds=KNOWN_BEFORE_V2))
    assert sure.unsure is None and sure.chosen == (2, 3, 1) and sure.extern_added  # aten::mm, not decompose_k
    assert decide(problem, pool, predicted, policy).first == 4  # no contract: every kind is trusted
    unsure = decide(problem, pool, predicted, policy, Confidence(feature_ranges={"log2_k": (4.0, 8.0)}))
    assert unsure.unsure == "out_of_range"
    # at most unsure_top_k (3) benchmarked: the first pick, the best ATen choice and the best predicted unknown kind
    assert unsure.first == 2 and unsure.widened == (2, 1, 4)
    with pytest.raises(NoUsableCandidate):
        decide(problem, Pool(features[[0, 4]], extern[[0, 4]]), predicted[[0, 4]], policy, Confidence())


def test_a_decompose_k_candidate_is_a_template_never_the_aten_choice():
    """decompose_k (and the CPU's C++ template) have no block sizes but compile kernels: they are
    not extern choices. Once a model knows decompose_k and predicts it fastest, cuBLAS still rides
    along with a sure pick and is still in the set an unsure decision benchmarks."""
    from torch_diode.features import config_rows, is_aten, is_extern, template_kind_names
    from torch_diode.selection import Confidence, Pool, decide

    configs = [
        KernelConfig("decompose_k", extras={"k_split": 16}),
        KernelConfig("aten::mm"),
        KernelConfig("triton::mm", 64, 64, 32, 8, 3, 4),
        KernelConfig("cpp::CppGemmTemplate"),
        KernelConfig("aten::bias_addmm"),
    ]
    assert is_extern(config_rows(configs)).tolist() == [False, True, False, False, True]
    assert [is_aten(c) for c in configs] == [False, True, False, False, True]
    problem = Problem("mm", 1, 64, 64, 65536, "float16", "float16", "float16")
    extern = is_extern(config_rows(configs[:3]))
    pool = Pool(_kind_features(["decompose_k", "aten_mm", "triton_mm"]), extern, np.zeros(3, dtype=bool))
    predicted = np.log([0.5, 3.0, 2.0])
    policy = make_policy(unsure_top_k=2)
    every_kind = tuple(template_kind_names())
    sure = decide(problem, pool, predicted, policy, Confidence(template_kinds=every_kind))
    assert sure.unsure is None and sure.chosen == (0, 2, 1) and sure.extern_added
    ranges = {"log2_k": (4.0, 8.0)}  # log2 K is 0 in these rows: out of range
    unsure = decide(problem, pool, predicted, policy, Confidence(template_kinds=every_kind, feature_ranges=ranges))
    assert unsure.unsure == "out_of_range" and unsure.first == 0 and unsure.widened == (0, 1)


def test_known_kinds_of_a_contract_follow_its_version():
    from torch_diode.selection import Confidence
    from torch_diode.selection.contract import KNOWN_BEFORE_V2

    assert Confidence.from_dict({"confidence_version": 1}).template_kinds == KNOWN_BEFORE_V2
    with pytest.raises(ValueError, match="training_data.template_kinds"):
        Confidence.from_dict({"confidence_version": 2})
    with pytest.raises(ValueError, match="training_data.template_kinds"):
        Confidence.from_dict({"confidence_version": 2, "template_kinds": "aten_mm"})
    contract = Confidence(template_kinds=("aten_mm", "decompose_k"))
    assert Confidence.from_dict(contract.to_dict()).template_kinds == ("aten_mm", "decompose_k")


def test_loss_probability_reads_the_members_difference_as_normal():
    from torch_diode.selection import LOSS_MARGIN, LossCalibration, loss_probability

    members = np.log([[1.0, 1.3, 2.0], [1.0, 1.1, 2.0], [1.0, 1.2, 2.0]])  # 3 members, 3 candidates
    calibration = LossCalibration(spread_scale=2.0, residual=0.05, problems=30)
    difference = members[:, 1] - members[:, 0]
    sigma = math.hypot(2.0 * difference.std(ddof=1), 0.05)
    expected = 0.5 * math.erfc((math.log(LOSS_MARGIN) - difference.mean()) / (sigma * math.sqrt(2.0)))
    assert loss_probability(members, 1, 0, calibration) == pytest.approx(expected)
    assert 0.5 < expected < 1.0  # the pick is predicted ~20% slower
    assert loss_probability(members, 0, 0, calibration) == 0.0  # the pick is the safe choice
    assert loss_probability(members, 2, 0, None) is None and loss_probability(members, 2, None, calibration) is None
    # faster picks are less likely losses; a wider spread makes a predicted gain less certain
    assert loss_probability(members, 0, 2, calibration) < 1e-6
    wide = LossCalibration(spread_scale=2.0, residual=1.0, problems=30)
    assert loss_probability(members, 0, 2, wide) > loss_probability(members, 0, 2, calibration)


def test_a_risky_first_pick_is_unsure_over_its_threshold():
    from dataclasses import replace

    from torch_diode.selection import Confidence, LossCalibration, Pool, decide

    problem = Problem("mm", 1, 4096, 4096, 4096, "float16", "float16", "float16")
    features = _kind_features(["aten_mm", "triton_mm", "triton_mm"])
    pool = Pool(features, np.array([True, False, False]), np.zeros(3, dtype=bool))
    # the members agree that candidate 1 is 30% faster than ATen on average, but not on how much
    members = np.log([[1.0, 0.5, 2.0], [1.0, 0.95, 2.0]])
    policy = make_policy(top_k=1, extern_preference=1.1, unsure_loss_probability=0.1)
    contract = Confidence(loss_calibration=LossCalibration(1.0, 0.1, 30), template_kinds=("aten_mm", "triton_mm"))
    decision = decide(problem, pool, members, policy, contract)
    assert decision.first == 1 and 0.1 < decision.loss_risk < 0.2  # P(Z > 1.05)
    assert decision.unsure == "loss_risk" and set(decision.chosen) == {0, 1, 2}
    assert decide(problem, pool, members, replace(policy, unsure_loss_probability=0.2), contract).unsure is None
    # the default threshold 1.0 never fires; without a calibration there is no risk to judge
    assert decide(problem, pool, members, replace(policy, unsure_loss_probability=1.0), contract).unsure is None
    uncalibrated = decide(problem, pool, members, policy, replace(contract, loss_calibration=None))
    assert uncalibrated.loss_risk is None and uncalibrated.unsure is None
    # the mean of the members ranks: one member's view alone is another order
    assert decide(problem, pool, members[1], policy).first == 0


def test_a_misaligned_problems_risk_is_read_through_its_own_calibration():
    """A misaligned problem's loss risk is read through the calibration of the held-out misaligned
    problems where the model records one, an aligned problem's through the one of all problems;
    the held-out figure of misaligned problems (1.2x, over the 1.05 bar) still makes every
    misaligned problem unsure."""
    from dataclasses import replace

    from torch_diode.selection import Confidence, HeldoutSlowdown, LossCalibration, Pool, decide

    aligned = Problem("mm", 1, 256, 256, 256, "float16", "float16", "float16")
    misaligned = Problem("mm", 1, 256, 256, 196, "float16", "float16", "float16")  # 392-byte rows of A
    pool = Pool(_kind_features(["aten_mm", "triton_mm", "triton_mm"]), np.array([True, False, False]))
    members = np.log([[1.0, 0.7, 2.0], [1.0, 0.75, 2.0]])  # the template ~27% faster, the members close
    policy = make_policy(top_k=1, unsure_loss_probability=0.2)
    narrow, wide = LossCalibration(1.0, 0.05, 40), LossCalibration(1.0, 1.0, 40)
    contract = Confidence(
        misaligned_problems=30,
        loss_calibration=narrow,
        misaligned_loss_calibration=wide,
        template_kinds=("aten_mm", "triton_mm"),
    )
    assert contract.calibration_for(True) is wide and contract.calibration_for(False) is narrow
    decision = decide(misaligned, pool, members, policy, contract)
    assert decision.unsure == "loss_risk" and decision.loss_risk > 0.3
    assert decide(aligned, pool, members, policy, contract).unsure is None  # read through the narrow one
    assert decide(misaligned, pool, members, policy, replace(contract, misaligned_loss_calibration=None)).unsure is None
    slow = replace(
        contract, heldout_top1_slowdown={"misaligned": HeldoutSlowdown(1.2, 30)}, misaligned_loss_calibration=narrow
    )
    assert decide(misaligned, pool, members, policy, slow).unsure == "misaligned"
    assert decide(aligned, pool, members, policy, slow).unsure is None


def test_no_extern_preference_where_rows_are_misaligned():
    from torch_diode.features import FEATURE_NAMES
    from torch_diode.selection import Policy, Pool, decide, extern_preference_for

    # cuBLAS predicted 5% slower than the best template: kept first by the preference (1.1) on an
    # aligned problem, not on one whose rows are misaligned (K=196 halves: 392 bytes)
    aligned = Problem("mm", 1, 256, 256, 256, "float16", "float16", "float16")
    misaligned = Problem("mm", 1, 256, 256, 196, "float16", "float16", "float16")
    assert not aligned.misaligned_operands and misaligned.misaligned_operands
    policy = Policy.from_config(extern_preference=1.1)
    assert extern_preference_for(aligned, policy) == 1.1 and extern_preference_for(misaligned, policy) == 1.0
    pool = Pool(np.zeros((2, len(FEATURE_NAMES))), np.array([True, False]))
    predicted = np.log([1.05, 1.0])
    assert decide(aligned, pool, predicted, policy).first == 0
    assert decide(misaligned, pool, predicted, policy).first == 1

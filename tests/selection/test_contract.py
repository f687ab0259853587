"""The confidence contract between training and the handler."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from selection_policies import make_policy

from torch_diode.model_file import model_metadata
from torch_diode.selection import CONFIDENCE_VERSION, Confidence, HeldoutSlowdown, LossCalibration, Pool, decide
from torch_diode.types import Problem

SHIPPED = Path(__file__).resolve().parents[2] / "src" / "torch_diode" / "models" / "NVIDIA-H100-matmul.diode"
# the H100 model shipped before contract version 2: a version-1 record
VERSION_1 = Path(__file__).resolve().parents[1] / "data" / "format1_contract1.diode"


def test_a_version_1_record_reads():
    training = model_metadata(VERSION_1)["training_data"]
    contract = Confidence.from_dict(training)
    assert contract.version == 1 and "confidence_version" not in training  # written before the field
    assert contract.problems_by_dtype == training["problems_by_dtype"]
    assert contract.misaligned_problems == training["misaligned_problems"]
    assert contract.tf32_problems == training["tf32_problems"]
    for kind, figure in training["heldout_top1_slowdown"].items():
        assert contract.heldout_top1_slowdown[kind] == HeldoutSlowdown(
            figure["geomean"], figure["problems"], figure["extern_preference"]
        )
    assert contract.ranges_for("float16") == {
        k: tuple(v) for k, v in training["problem_feature_ranges_by_dtype"]["float16"].items()
    }
    assert contract.ranges_for("float64") is None  # never seen


def test_the_shipped_models_record_reads_and_is_calibrated():
    training = model_metadata(SHIPPED)["training_data"]
    contract = Confidence.from_dict(training)
    assert contract.version == training["confidence_version"] == CONFIDENCE_VERSION
    assert contract.loss_calibration is not None and contract.loss_calibration.problems > 0
    assert Confidence.from_dict(contract.to_dict()) == contract


def test_round_trip_and_an_empty_record():
    contract = Confidence.from_dict(model_metadata(VERSION_1)["training_data"])
    assert contract.loss_calibration is None
    calibrated = replace(
        contract,
        loss_calibration=LossCalibration(1.5, 0.2, 40),
        misaligned_loss_calibration=LossCalibration(2.0, 0.3, 25),
        version=CONFIDENCE_VERSION,
    )
    assert Confidence.from_dict(calibrated.to_dict()) == calibrated
    written = contract.to_dict()
    assert written["confidence_version"] == CONFIDENCE_VERSION
    assert Confidence.from_dict(written) == replace(contract, version=CONFIDENCE_VERSION)
    assert contract.template_kinds == ("aten_mm", "aten_addmm", "aten_bias_addmm", "triton_mm")  # a version-1 record
    empty = Confidence.from_dict(None)
    assert empty.problems_by_dtype is None and empty.misaligned_problems is None and empty.heldout_top1_slowdown == {}
    assert Confidence.from_dict(empty.to_dict()) == Confidence(feature_ranges_by_dtype={}, problems_by_dtype={})


@pytest.mark.parametrize(
    "record, field",
    [
        ({"confidence_version": CONFIDENCE_VERSION + 1}, "confidence_version"),
        ({"problems_by_dtype": {"float16": "many"}}, "problems_by_dtype.float16"),
        ({"problem_feature_ranges": {"log2_m": [1.0]}}, "problem_feature_ranges.log2_m"),
        (
            {"heldout_top1_slowdown": {"aligned": {"geomean": "x", "problems": 3}}},
            "heldout_top1_slowdown.aligned.geomean",
        ),
        ({"misaligned_problems": 1.5}, "misaligned_problems"),
        ({"loss_calibration": {"spread_scale": -1, "residual": 0.1, "problems": 3}}, "loss_calibration.spread_scale"),
        ({"loss_calibration": {"spread_scale": 1, "residual": 0.1}}, "loss_calibration.problems"),
        (
            {"misaligned_loss_calibration": {"spread_scale": 1, "residual": "x", "problems": 3}},
            "misaligned_loss_calibration.residual",
        ),
    ],
)
def test_malformed_fields_are_named(record, field):
    with pytest.raises(ValueError, match=f"training_data.{field}"):
        Confidence.from_dict(record)


def test_decide_without_a_contract_trusts_the_model_and_with_one_judges_it():
    from torch_diode.features import FEATURE_NAMES

    problem = Problem("mm", 1, 4096, 4096, 4096, "float16", "float16", "float16")
    features = np.zeros((3, len(FEATURE_NAMES)), np.float32)
    features[:, FEATURE_NAMES.index("log2_m")] = 12.0
    features[:2, FEATURE_NAMES.index("template_is_triton_mm")] = 1.0
    features[2, FEATURE_NAMES.index("template_is_aten_mm")] = 1.0
    pool = Pool(features, np.array([False, False, True]))
    policy = make_policy(top_k=1, min_dtype_problems=100)
    sure = decide(problem, pool, np.log([2.0, 1.0, 3.0]), policy)
    assert sure.chosen == (1,) and sure.unsure is None and sure.first == 1
    narrow = Confidence(feature_ranges={"log2_m": (4.0, 8.0)})
    unsure = decide(problem, pool, np.log([2.0, 1.0, 3.0]), policy, narrow)
    assert unsure.unsure == "out_of_range" and unsure.chosen == (1, 0, 2) and unsure.widened == (1, 0, 2)
    assert unsure.notes()["unsure_out_of_range"] == 1 and unsure.notes()["unsure_benchmarked"] == 1

"""validate-model / validate-max-autotune on a hand-made dataset whose right answers are known.

The model is one linear layer picking the feature log2_block_m: it predicts
ln(time_us) = log2(1 + BLOCK_M), so it ranks smaller blocks as faster."""

import json
import math
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from torch_diode.dataset_io import save_dataset
from torch_diode.evaluation import validate_max_autotune, validate_model
from torch_diode.features import FEATURE_NAMES, NUM_FEATURES
from torch_diode.model_file import ModelFile, write_model
from torch_diode.types import Dataset, Hardware, KernelConfig, Problem, TimedConfig

HW = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 * 2**30, 232448, "2.11.0", "3.6.0", "13.0")
P1 = Problem("mm", 1, 512, 512, 512, "float16", "float16", "float16")
P2 = Problem("mm", 1, 256, 1024, 64, "bfloat16", "bfloat16", "bfloat16")


def cfg(bm):
    return KernelConfig("triton::mm", bm, 64, 32, 8, 3, 4, even_k=True, acc_type="tl.float32")


@pytest.fixture
def files(tmp_path):
    w = np.zeros((1, NUM_FEATURES), np.float32)
    w[0, FEATURE_NAMES.index("log2_block_m")] = 1.0
    model = write_model(
        tmp_path / "m.diode",
        ModelFile(
            [(w, np.zeros(1, np.float32))],
            np.zeros(NUM_FEATURES, np.float32),
            np.ones(NUM_FEATURES, np.float32),
            0.0,
            1.0,
            {"model_family": "test"},
        ),
    )
    ds = Dataset()
    # P1: the model picks block 16 (30 us); the best is block 32 (10 us)
    ds.add(
        HW,
        P1,
        [
            TimedConfig(cfg(16), 30.0),
            TimedConfig(cfg(32), 10.0),
            TimedConfig(cfg(64), 20.0),
            TimedConfig.failure(cfg(128)),
        ],
    )
    # P2: the model's order is the measured order
    ds.add(HW, P2, [TimedConfig(cfg(16), 5.0), TimedConfig(cfg(32), 6.0), TimedConfig(cfg(64), 7.0)])
    data = save_dataset(ds, tmp_path / "d.json")
    return model, data, ds


def test_validate_model_known_answers(files):
    model, _, ds = files
    r = validate_model(model, ds, top_n_worst=2)
    pred = {16: math.log2(17), 32: math.log2(33), 64: math.log2(65)}
    errors = [
        pred[16] - math.log(30),
        pred[32] - math.log(10),
        pred[64] - math.log(20),
        pred[16] - math.log(5),
        pred[32] - math.log(6),
        pred[64] - math.log(7),
    ]
    mse = float(np.mean(np.square(errors)))
    assert r["num_problems"] == 2 and r["num_timed_configs"] == 6  # the failure takes no part
    assert r["mse"] == pytest.approx(mse, rel=1e-5)
    assert r["rmse"] == pytest.approx(math.sqrt(mse), rel=1e-5) and r["exp_rmse"] == pytest.approx(
        math.exp(math.sqrt(mse)), rel=1e-5
    )
    assert r["top1_perf_geomean"] == pytest.approx(math.sqrt(10 / 30 * 1.0))
    assert r["top5_perf_geomean"] == pytest.approx(1.0)
    assert r["kendall_tau_mean"] == pytest.approx((-1 / 3 + 1.0) / 2)
    assert r["within_5pct_fraction"] == 0.5 and r["worst_top1_slowdown"] == pytest.approx(3.0)
    worst = r["worst_predictions"][0]
    assert worst["measured_us"] == 7.0 and worst["config"].startswith("triton::mm 64x64x32")  # |6.02 - ln 7| = 4.08


def test_validate_max_autotune_known_answers(files, tmp_path):
    model, _, ds = files
    solution = _solution(tmp_path)
    r = validate_max_autotune(model, ds, solution=solution)
    assert r["num_problems"] == 2
    top1, top5 = r["top_n"]["1"], r["top_n"]["5"]
    # P1: max-autotune 20 us vs the model's pick 30 us (top-1) or the best 10 us (top-5); P2: 6 vs 5
    assert top1["ratio_geomean"] == pytest.approx(math.sqrt(20 / 30 * 6 / 5))
    assert top5["ratio_geomean"] == pytest.approx(math.sqrt(20 / 10 * 6 / 5))
    assert top1["better_pct"] == 50.0 and top1["worse_pct"] == 50.0
    assert top5["better_pct"] == 100.0 and top5["time_saved_us_total"] == pytest.approx(10 + 1)
    with pytest.raises(ValueError, match="configs"):
        solution.write_text('{"configs": [{"M": "x"}]}')
        validate_max_autotune(model, ds, solution=solution)


def test_cli_reports(files, tmp_path, diode_cli):
    model, data, _ = files
    report = tmp_path / "r.json"
    code, out, err = diode_cli(
        "validate-model", "--model", model, "--dataset", data, "--report-json", report, "--plot", tmp_path / "plots"
    )
    assert code == 0, err[-2000:]
    r = json.loads(report.read_text())
    for key in (
        "mse",
        "rmse",
        "exp_rmse",
        "top1_perf_geomean",
        "top5_perf_geomean",
        "kendall_tau_mean",
        "within_5pct_fraction",
        "worst_top1_slowdown",
        "num_problems",
    ):
        assert key in r
    # the evidence of a run: its command line and UTC date
    assert r["command"].startswith("diode validate-model --model ") and "--report-json" in r["command"]
    assert datetime.fromisoformat(r["date"]).tzinfo is not None
    assert "Validation RMSE (exp)" in out
    assert (tmp_path / "plots" / "predicted_vs_measured.png").stat().st_size > 1000
    assert (tmp_path / "plots" / "top1_slowdown_cdf.png").stat().st_size > 1000
    # derived mode (max-autotune = best of ATen + DEFAULT) needs such choices: the real sample has them
    sample = Path(__file__).resolve().parents[1] / "data" / "sample" / "h100_sample.json.gz"
    code, out, err = diode_cli(
        "validate-max-autotune", "--model", model, "--dataset", sample, "--report-json", tmp_path / "m.json"
    )
    assert code == 0 and "MODEL VS MAX-AUTOTUNE" in out, err[-2000:]
    assert set(json.loads((tmp_path / "m.json").read_text())["top_n"]) == {"1", "5", "10", "20", "50"}
    code, _, err = diode_cli("validate-model", "--model", "NVIDIA-A999-matmul", "--dataset", data)
    assert code == 2 and "known model name" in err and "NVIDIA-H100-matmul" in err


def test_validate_max_autotune_follows_the_handlers_extern_preference():
    """Top-1 is the handler's pick: with an overwhelming extern preference it is always an ATen
    choice, so the top-1 ratio is max-autotune's time over the predicted-best ATen time."""
    from torch_diode.dataset_io import load_dataset
    from torch_diode.features import config_rows
    from torch_diode.inductor.config_space import beyond_default_list
    from torch_diode.predict import load_model, predict_log_time_us

    sample = Path(__file__).resolve().parents[1] / "data" / "sample" / "h100_sample.json.gz"
    data = load_dataset(sample)
    plain = validate_max_autotune("NVIDIA-H100-matmul", data, extern_preference=1.0, top_ns=(1,))
    aten = validate_max_autotune("NVIDIA-H100-matmul", data, extern_preference=1e9, top_ns=(1,))
    assert plain["extern_preference"] == 1.0 and aten["extern_preference"] == 1e9
    model, expected = load_model("NVIDIA-H100-matmul"), []
    for hardware, problem, timings in data.problems():
        ok = [t for t in timings if not t.failed]
        externs = [t for t in ok if not t.config.is_tiled]
        predicted = predict_log_time_us(model, problem, [t.config for t in externs], hardware)
        mask = ~beyond_default_list(problem, config_rows([t.config for t in ok]))
        ma_time = min(t.time_us for t, m in zip(ok, mask) if m)
        expected.append(ma_time / externs[int(np.argmin(predicted))].time_us)
    assert aten["top_n"]["1"]["ratio_min"] == pytest.approx(min(expected))
    assert aten["top_n"]["1"]["ratio_max"] == pytest.approx(max(expected))


def test_by_op_reports_each_ops_problems_alone(files, tmp_path, diode_cli):
    model, _, ds = files
    # a bmm problem whose best is the model's pick: every op's figures are its own problems'
    p3 = Problem("bmm", 4, 128, 128, 64, "float16", "float16", "float16")
    ds.add(HW, p3, [TimedConfig(cfg(16), 4.0), TimedConfig(cfg(32), 8.0)])
    r = validate_model(model, ds, top_n_worst=2)
    assert set(r["by_op"]) == {"bmm", "mm"} and r["num_problems"] == 3
    mm, bmm = r["by_op"]["mm"], r["by_op"]["bmm"]
    assert mm["num_problems"] == 2 and mm["top1_perf_geomean"] == pytest.approx(math.sqrt(10 / 30))
    assert mm["worst_top1_slowdown"] == pytest.approx(3.0) and "per_problem" not in mm
    assert bmm["num_problems"] == 1 and bmm["top1_perf_geomean"] == pytest.approx(1.0)
    assert bmm["mse"] == pytest.approx(
        np.mean(np.square([math.log2(17) - math.log(4), math.log2(33) - math.log(8)])), rel=1e-5
    )
    data = save_dataset(ds, tmp_path / "d3.json")
    out = tmp_path / "model_performance_analysis_by_op.json"
    code, stdout, err = diode_cli(
        "validate-max-autotune",
        "--model",
        model,
        "--dataset",
        data,
        "--max-autotune-solution",
        _solution(tmp_path),
        "--by-op-json",
        out,
    )
    assert code == 0, err[-2000:]
    assert f"Comprehensive per-op statistics saved to: {out}" in stdout
    by_op = json.loads(out.read_text())
    assert set(by_op) <= {"mm", "addmm", "bmm", "baddbmm"}  # the per-op figures alone, keyed by op
    assert by_op["mm"]["num_problems"] == 2 and by_op["mm"]["top_n"]["1"]["ratio_geomean"] == pytest.approx(
        math.sqrt(20 / 30 * 6 / 5)
    )


def _solution(tmp_path):
    solution = tmp_path / "s.json"
    solution.write_text(
        json.dumps(
            {
                "name": "t",
                "configs": [
                    {"M": 512, "N": 512, "K": 512, "block_m": 64, "block_n": 64, "block_k": 32},
                    {"M": 256, "N": 1024, "K": 64, "op": "mm", "block_m": 32, "block_n": 64, "block_k": 32},
                ],
            }
        )
    )
    return solution


def test_validate_model_reports_the_calibration_of_its_loss_estimate(tmp_path, capsys):
    """Two members predicting the Triton config e^-1 times the ATen choice's time (their biases
    differ, their difference does not): with the recorded calibration (spread_scale 1, residual 1)
    the estimated probability of a > 5% loss is P(Z > 1 + ln 1.05) = 0.147 on both problems; one
    of them lost (20 us against ATen's 10 us)."""
    from torch_diode.selection import LOSS_MARGIN, Confidence, LossCalibration

    def member(bias):
        w = np.zeros((1, NUM_FEATURES), np.float32)
        w[0, FEATURE_NAMES.index("is_tiled")] = -1.0
        return [(w, np.array([bias], np.float32))]

    def two_members(name, contract):
        return write_model(
            tmp_path / name,
            ModelFile(
                member(0.1),
                np.zeros(NUM_FEATURES, np.float32),
                np.ones(NUM_FEATURES, np.float32),
                0.0,
                1.0,
                {"training_data": contract.to_dict()},
                [member(-0.1)],
            ),
        )

    contract = Confidence(loss_calibration=LossCalibration(1.0, 1.0, 50), template_kinds=("aten_mm", "triton_mm"))
    model = two_members("e.diode", contract)
    ds = Dataset()
    ds.add(HW, P1, [TimedConfig(KernelConfig("aten::mm"), 10.0), TimedConfig(cfg(64), 20.0)])
    ds.add(HW, P2, [TimedConfig(KernelConfig("aten::mm"), 10.0), TimedConfig(cfg(64), 5.0)])
    c = validate_model(model, ds)["calibration"]
    estimate = 0.5 * math.erfc((math.log(LOSS_MARGIN) + 1.0) / math.sqrt(2.0))
    assert c["problems"] == 2 and c["aten_first_picks"] == 0 and c["observed_loss_fraction"] == 0.5
    assert c["estimate_mean"] == pytest.approx(estimate, rel=1e-4)
    assert c["brier"] == pytest.approx(((estimate - 1) ** 2 + estimate**2) / 2, rel=1e-4)
    (used,) = [b for b in c["bins"] if b["problems"]]
    assert (used["estimate_from"], used["estimate_to"], used["problems"]) == (0.1, 0.2, 2)
    assert c["by_kind"]["aligned"]["problems"] == 2 and c["by_kind"]["misaligned"]["problems"] == 0
    # a misaligned problem's estimate is read through the misaligned problems' own calibration
    # (residual 3: P(Z > (1 + ln 1.05) / 3) = 0.363), the aligned ones' through the other
    model = two_members("m.diode", replace(contract, misaligned_loss_calibration=LossCalibration(0.0, 3.0, 30)))
    odd = Problem("mm", 1, 512, 512, 500, "float16", "float16", "float16")  # 1000-byte rows of A
    ds.add(HW, odd, [TimedConfig(KernelConfig("aten::mm"), 10.0), TimedConfig(cfg(64), 20.0)])
    c = validate_model(model, ds)["calibration"]
    assert c["misaligned_calibration"] == {"spread_scale": 0.0, "residual": 3.0, "problems": 30}
    assert c["by_kind"]["aligned"]["estimate_mean"] == pytest.approx(estimate, rel=1e-4)
    assert c["by_kind"]["misaligned"] == {
        "problems": 1,
        "estimate_mean": pytest.approx(
            0.5 * math.erfc((math.log(LOSS_MARGIN) + 1.0) / (3.0 * math.sqrt(2.0))), rel=1e-4
        ),
        "observed_loss_fraction": 1.0,
    }
    from torch_diode.cli import main
    from torch_diode.dataset_io import save_dataset

    data = save_dataset(ds, tmp_path / "calibration.json")
    assert main(["validate-model", "--model", str(model), "--dataset", str(data)]) == 0
    printed = capsys.readouterr().out
    assert "  aligned:    2 problems, mean estimate 0.147, observed 0.500" in printed
    assert "  misaligned (its own calibration):    1 problems, mean estimate 0.363, observed 1.000" in printed
    # a model whose contract records no calibration reports none
    plain = write_model(
        tmp_path / "p.diode",
        ModelFile(member(0.0), np.zeros(NUM_FEATURES, np.float32), np.ones(NUM_FEATURES, np.float32), 0.0, 1.0, {}),
    )
    assert validate_model(plain, ds)["calibration"] is None

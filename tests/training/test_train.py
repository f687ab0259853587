"""Training end to end on the real sample, from the library and from the CLI."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from torch_diode.dataset_io import load_dataset
from torch_diode.model_file import model_metadata, read_model
from torch_diode.training.data import build_arrays, split_groups
from torch_diode.training.model import Regressor
from torch_diode.training.train import TrainConfig, clipped_targets, train_model

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "h100_sample.json.gz"


def test_split_is_by_problem_and_deterministic():
    a, b = split_groups(100, 0.2, 3), split_groups(100, 0.2, 3)
    assert np.array_equal(a, b) and a.sum() == 20 and not np.array_equal(a, split_groups(100, 0.2, 4))
    arrays = build_arrays(load_dataset(SAMPLE))
    mask = split_groups(arrays.num_problems, 0.25, 0)[arrays.group]
    train_problems, val_problems = set(arrays.group[~mask]), set(arrays.group[mask])
    assert train_problems and val_problems and not train_problems & val_problems


def test_arrays_leave_failures_out_and_use_log_time():
    ds = load_dataset(SAMPLE)
    arrays = build_arrays(ds)
    ok = [t for _, _, ts in ds.problems() for t in ts if not t.failed]
    assert len(arrays.log_time_us) == len(ok)
    np.testing.assert_allclose(np.exp(arrays.log_time_us), [t.time_us for t in ok], rtol=1e-5)
    assert build_arrays(ds, op_name="bmm").num_problems == 2
    with pytest.raises(ValueError, match="no usable problems"):
        build_arrays(ds, hardware_name="MI300")


def test_training_learns_and_is_deterministic():
    ds = load_dataset(SAMPLE)
    cfg = TrainConfig(model_type="base", num_epochs=150, patience=150, validation_fraction=0.0, seed=7)
    model, report = train_model(ds, cfg, progress=False)
    again, _ = train_model(ds, cfg, progress=False)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(model.layers, again.layers))
    arrays = build_arrays(ds)
    baseline = float(np.var(arrays.log_time_us))  # predicting the mean
    assert report.train_mse < 0.25 * baseline, (report.train_mse, baseline)
    with torch.no_grad():
        pred = Regressor.from_model_file(model)(torch.from_numpy(arrays.features)).numpy()
    assert float(np.mean((pred - arrays.log_time_us) ** 2)) == pytest.approx(report.train_mse, rel=1e-4)
    meta = model.metadata
    assert meta["hardware"]["sm_count"] == 132 and meta["training_data"]["problems"] == 12
    assert meta["feature_names"][0] == "log2_batch" and meta["model_family"] == "base"


def test_training_records_held_out_first_picks_by_alignment():
    """The handler reads these figures: per category (misaligned rows or not), the geometric mean
    over the held-out problems of the measured time of the model's first pick (configs exceeding
    shared memory left out, ATen preferred within extern_preference, as the handler orders) over
    the problem's best time."""
    import math

    from torch_diode import config
    from torch_diode.selection import Policy, extern_preference_for, selection_order

    ds = load_dataset(SAMPLE)
    # seed 2 holds out both of the sample's misaligned problems (mm 1000x700x1024, K=1000 TN)
    model, report = train_model(ds, TrainConfig(num_epochs=30, validation_fraction=0.5, seed=2), progress=False)
    figures = model.metadata["training_data"]["heldout_top1_slowdown"]
    arrays = build_arrays(ds)
    held = np.flatnonzero(split_groups(arrays.num_problems, 0.5, 2))
    regressor = Regressor.from_model_file(model)
    names = model.metadata["feature_names"]
    expected: dict[str, list[float]] = {}
    for g in held:
        rows = arrays.group == g
        features = arrays.features[rows]
        with torch.no_grad():
            predicted = regressor(torch.from_numpy(features)).numpy()
        usable = np.flatnonzero(features[:, names.index("smem_exceeds")] == 0)
        preference = extern_preference_for(arrays.problems[g][1], Policy.from_config())
        pick = selection_order(predicted, features[:, names.index("is_tiled")] == 0, preference, usable)[0]
        times = np.exp(arrays.log_time_us[rows].astype(np.float64))
        kind = "misaligned" if arrays.problems[g][1].misaligned_operands else "aligned"
        expected.setdefault(kind, []).append(times[pick] / times[usable].min())
    assert sum(f["problems"] for f in figures.values()) == report.validation_problems == len(held) == 6
    assert set(figures) == set(expected) == {"aligned", "misaligned"} and figures["misaligned"]["problems"] == 2
    for kind, slowdowns in expected.items():
        assert figures[kind]["problems"] == len(slowdowns)
        assert figures[kind]["geomean"] == pytest.approx(math.exp(np.mean(np.log(slowdowns))), rel=1e-4)
        assert figures[kind]["extern_preference"] == (config.extern_preference if kind == "aligned" else 1.0)
    # without held-out problems there is nothing to record
    unsplit, _ = train_model(ds, TrainConfig(num_epochs=2, validation_fraction=0.0), progress=False)
    assert unsplit.metadata["training_data"]["heldout_top1_slowdown"] == {}


def test_train_cli_then_validate_and_predict(tmp_path, diode_cli):
    model = tmp_path / "m.diode"
    code, _, err = diode_cli(
        "train",
        "--dataset",
        SAMPLE,
        "--model",
        model,
        "--model-type",
        "deep",
        "--hidden-dim",
        "32",
        "--num-layers",
        "2",
        "--num-epochs",
        "20",
        "--seed",
        "1",
        "--validation-fraction",
        "0.25",
    )
    assert code == 0, err[-2000:]
    meta = model_metadata(model)
    assert meta["hidden_dim"] == 32 and meta["num_layers"] == 2 and meta["training"]["seed"] == 1
    assert read_model(model).dims == [meta["feature_version"] and len(meta["feature_names"]), 32, 32, 1]
    out = tmp_path / "pred.msgpack"
    code, _, err = diode_cli("predict", "--model", model, "--dataset", SAMPLE, "--output", out)
    assert code == 0, err[-2000:]
    pred, src = load_dataset(out), load_dataset(SAMPLE)
    assert [(p, [t.config for t in ts]) for _, p, ts in pred.problems()] == [
        (p, [t.config for t in ts]) for _, p, ts in src.problems()
    ]
    assert all(t.time_us > 0 and not t.failed for _, _, ts in pred.problems() for t in ts)


def test_log_dir_writes_tensorboard_scalars(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = TrainConfig(num_epochs=5, patience=10, validation_fraction=0.25, seed=0)
    train_model(load_dataset(SAMPLE), cfg, log_dir=str(tmp_path / "tb"), progress=False)
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert {"mse/train", "mse/validation"} <= set(acc.Tags()["scalars"])
    assert len(acc.Scalars("mse/train")) == 5


def test_learning_rate_schedules():
    """Cosine (the default) and constant rates train different, each deterministic, models; an
    unknown schedule is refused before any work."""
    ds = load_dataset(SAMPLE)
    runs = {}
    for schedule in ("cosine", "constant"):
        cfg = TrainConfig(num_epochs=20, patience=20, validation_fraction=0.0, seed=1, lr_schedule=schedule)
        runs[schedule] = [train_model(ds, cfg, progress=False)[0] for _ in range(2)]
        a, b = runs[schedule]
        assert all(np.array_equal(x[0], y[0]) for x, y in zip(a.layers, b.layers))
        assert a.metadata["training"]["lr_schedule"] == schedule
    assert not np.array_equal(runs["cosine"][0].layers[0][0], runs["constant"][0].layers[0][0])
    assert TrainConfig().lr_schedule == "cosine"
    with pytest.raises(ValueError, match="lr_schedule"):
        train_model(ds, TrainConfig(lr_schedule="step"), progress=False)


def test_train_refuses_data_holding_a_heldout_problem(tmp_path, diode_cli):
    """`diode train` on data holding a problem of realmodels_heldout exits 2 naming the file and the
    problem; --drop-heldout trains without it."""
    from torch_diode.collection.shapes import load_shapeset
    from torch_diode.dataset_io import save_dataset
    from torch_diode.types import Dataset

    data = tmp_path / "data"
    data.mkdir()
    sample = load_dataset(SAMPLE)
    save_dataset(sample, data / "a_clean.json.gz")
    hardware, _, timings = next(sample.problems())
    held = load_shapeset("realmodels_heldout")[0].problem
    bad = Dataset()
    bad.add(hardware, held, timings)
    save_dataset(bad, data / "b_held.json.gz")
    cmd = ["train", "--data-dir", data, "--model", tmp_path / "m.diode", "--num-epochs", "2"]
    code, _, err = diode_cli(*cmd)
    assert code == 2 and not (tmp_path / "m.diode").exists()
    assert len(err.strip().splitlines()) == 1
    assert "b_held.json.gz" in err and held.short() in err and "realmodels_heldout" in err
    code, out, err = diode_cli(*cmd, "--drop-heldout")
    assert code == 0, err[-2000:]
    assert "1 problems of held-out shapesets left out" in out
    assert model_metadata(tmp_path / "m.diode")["training_data"]["problems"] == sample.num_problems


def test_train_exclude_leaves_out_the_problems_of_the_named_datasets(tmp_path, diode_cli):
    """--exclude FILE: the problems that FILE holds are not trained on where measured on FILE's GPU
    (the model's contract counts the rest); a path that is neither a file nor a shapeset is one
    line naming it (exit 2)."""
    from torch_diode.dataset_io import save_dataset
    from torch_diode.types import Dataset

    sample = load_dataset(SAMPLE)
    hardware, problem, timings = next(sample.problems())
    cmd = ["train", "--dataset", SAMPLE, "--num-epochs", "2"]

    def train_excluding(device_name: str, name: str) -> int:
        """Trains with --exclude a file holding ``problem`` measured on ``device_name``; the
        number of problems the model was trained on."""
        excluded = Dataset()
        excluded.add(replace(hardware, device_name=device_name), problem, timings)
        save_dataset(excluded, tmp_path / f"{name}.json.gz")
        model = tmp_path / f"{name}.diode"
        code, out, err = diode_cli(*cmd, "--model", model, "--exclude", tmp_path / f"{name}.json.gz")
        assert code == 0, err[-2000:]
        left_out = sample.num_problems - model_metadata(model)["training_data"]["problems"]
        assert f"{left_out} problems of the training data left out (--exclude)" in out
        return left_out

    assert train_excluding(hardware.device_name, "here") == 1
    # the same problem measured on another GPU: that GPU's timings say nothing of these
    assert train_excluding("NVIDIA H200", "elsewhere") == 0
    code, _, err = diode_cli(*cmd, "--model", tmp_path / "n.diode", "--exclude", tmp_path / "absent.json")
    assert code == 2 and not (tmp_path / "n.diode").exists()
    assert len(err.strip().splitlines()) == 1 and "absent.json" in err, err


def test_an_ensemble_and_the_listwise_loss_train_and_the_engine_predicts_the_same():
    """--ensemble 3: three members (their own seeds) in one file, whose mean the engine predicts;
    --loss listwise trains, deterministically, and differs from the MSE fit (the default)."""
    from torch_diode.model_file import write_model
    from torch_diode.predict import load_model
    from torch_diode.training.model import Ensemble

    ds = load_dataset(SAMPLE)
    cfg = TrainConfig(num_epochs=30, patience=30, validation_fraction=0.0, seed=3, ensemble=3, loss="mse")
    model, report = train_model(ds, cfg, progress=False)
    assert len(model.members) == 3 and not np.array_equal(model.members[0][0][0], model.members[1][0][0])
    arrays = build_arrays(ds)
    with torch.no_grad():
        members = Ensemble.from_model_file(model).members(torch.from_numpy(arrays.features)).numpy()
    assert float(np.mean((members.mean(axis=0) - arrays.log_time_us) ** 2)) == pytest.approx(report.train_mse, rel=1e-4)
    first, _ = train_model(
        ds, TrainConfig(num_epochs=30, patience=30, validation_fraction=0.0, seed=3, loss="mse"), progress=False
    )
    assert np.array_equal(first.layers[0][0], model.members[0][0][0])  # member 0 is the single model of the seed
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        engine = load_model(write_model(Path(d) / "e.diode", model))
        np.testing.assert_allclose(engine.predict_members(arrays.features), members, rtol=1e-4, atol=1e-4)
    listwise = TrainConfig(num_epochs=30, patience=30, validation_fraction=0.0, seed=3, loss="listwise")
    assert TrainConfig().loss == "mse"
    a, b = train_model(ds, listwise, progress=False)[0], train_model(ds, listwise, progress=False)[0]
    assert np.array_equal(a.layers[0][0], b.layers[0][0]) and not np.array_equal(a.layers[0][0], first.layers[0][0])
    with pytest.raises(ValueError, match="loss must be one of"):
        train_model(ds, TrainConfig(loss="pairwise"), progress=False)


def test_bootstrap_members_fit_resamples_of_the_problems():
    """--bootstrap: each member fits its own resample of whole problems (drawn with replacement,
    as many as there are; one drawn twice counts twice), deterministically per seed, and differs
    from the member of the same seed fitted on every problem."""
    from torch_diode.training.train import _resample

    group = torch.repeat_interleave(torch.arange(8), torch.tensor([2, 1, 3, 1, 2, 4, 1, 2]))
    draws = []
    for seed in range(6):
        rows, groups = _resample(group, seed)
        drawn = [int(group[rows[groups == g]][0]) for g in range(8)]
        for g, problem in enumerate(drawn):  # each drawn problem is one whole problem's rows
            assert sorted(rows[groups == g].tolist()) == torch.nonzero(group == problem).flatten().tolist()
        draws.append(drawn)
        again = _resample(group, seed)
        assert torch.equal(rows, again[0]) and torch.equal(groups, again[1])
    assert any(len(set(d)) < 8 for d in draws)  # with replacement: some problem twice, another left out
    assert len({tuple(d) for d in draws}) > 1  # each seed (member) its own resample
    with pytest.raises(ValueError, match="ensemble of 2"):
        TrainConfig(bootstrap=True).resolved()

    ds = load_dataset(SAMPLE)
    cfg = TrainConfig(num_epochs=20, patience=20, validation_fraction=0.0, seed=3, ensemble=2, loss="mse")
    plain = train_model(ds, cfg, progress=False)[0]
    boot = train_model(ds, replace(cfg, bootstrap=True), progress=False)[0]
    boot2 = train_model(ds, replace(cfg, bootstrap=True), progress=False)[0]
    assert np.array_equal(boot.members[1][0][0], boot2.members[1][0][0])
    assert not np.array_equal(boot.members[0][0][0], plain.members[0][0][0])


def test_the_listwise_loss_is_the_cross_entropy_of_softmaxes_within_each_problem():
    from torch_diode.training.train import LISTWISE_TEMPERATURE, _listwise

    target = torch.tensor([0.0, 0.1, 1.0, 2.0, 2.0])
    group = torch.tensor([4, 4, 4, 9, 9])
    predicted = torch.tensor([0.2, 0.0, 0.5, 1.0, 3.0])
    expected = 0.0
    for rows in ([0, 1, 2], [3, 4]):
        p = torch.softmax(-target[rows] / LISTWISE_TEMPERATURE, 0)
        expected += -(p * torch.log_softmax(-predicted[rows] / LISTWISE_TEMPERATURE, 0)).sum() / 2
    assert float(_listwise(predicted, target, group)) == pytest.approx(float(expected), rel=1e-5)
    # shifting a problem's predictions changes nothing; reordering them does
    assert float(_listwise(predicted + torch.tensor([1.0, 1.0, 1.0, -2.0, -2.0]), target, group)) == pytest.approx(
        float(expected), rel=1e-5
    )
    assert float(_listwise(predicted[[1, 0, 2, 3, 4]], target, group)) != pytest.approx(float(expected), rel=1e-3)


def test_the_loss_calibration_recovers_a_known_noise():
    """Cases drawn with the true difference normal around the predicted one (sd 0.2): the fitted
    residual is near 0.2; too few cases give none."""
    from torch_diode.selection import LOSS_MARGIN
    from torch_diode.training.confidence import fit_loss_calibration

    rng = np.random.default_rng(0)
    mean = rng.uniform(-0.6, 0.4, 4000)
    lost = (mean + rng.normal(0, 0.2, 4000) > np.log(LOSS_MARGIN)).astype(float)
    fitted = fit_loss_calibration(np.stack([mean, np.zeros(4000), lost], axis=1))
    assert fitted.problems == 4000 and fitted.residual == pytest.approx(0.2, abs=0.03)
    assert fit_loss_calibration(np.zeros((19, 3))) is None
    # four losses among 290 cases: no fit (it would be a residual of 0.01, sure of every pick)
    few = np.stack([rng.uniform(-0.6, -0.1, 290), np.full(290, 0.05), np.zeros(290)], axis=1)
    few[:4, 2] = 1.0
    assert fit_loss_calibration(few) is None
    few[4, 2] = 1.0
    assert fit_loss_calibration(few) is not None


def test_prior_data_adds_the_problems_the_gpus_own_data_lacks(tmp_path, diode_cli):
    """`diode train --prior-data`: another GPU's problems that the training data lacks are trained on
    as measured on the training data's GPU (the model is that GPU's), the GPU's own timings win
    where both hold a problem, and the model records what was added; a held-out problem in the
    prior data is refused like one in the training data."""
    from dataclasses import replace

    from torch_diode.collection.shapes import load_shapeset
    from torch_diode.dataset_io import save_dataset
    from torch_diode.training.train import with_prior_data
    from torch_diode.types import Dataset, problem_key

    sample = load_dataset(SAMPLE)
    problems = list(sample.problems())
    h200 = replace(problems[0][0], device_name="NVIDIA H200")
    own, prior = Dataset(), Dataset()
    for hardware, problem, timings in problems[: len(problems) // 2]:
        own.add(h200, problem, [replace(t, time_us=t.time_us / 2) for t in timings])
    for hardware, problem, timings in problems:
        prior.add(hardware, problem, timings)
    merged, record, added = with_prior_data(own, prior)
    # --hardware-name picks the GPU as training does (training.data.matches_hardware)
    assert with_prior_data(own, prior, "h200")[1] == record
    assert record == {
        "device_name": "NVIDIA H200",
        "device_names": [problems[0][0].device_name],
        "problems": len(problems) - len(problems) // 2,
    }
    assert {hw.device_name for hw, _, _ in merged.problems()} == {"NVIDIA H200"}
    assert merged.num_problems == len(problems)
    assert added == {problem_key(p) for _, p, _ in problems[len(problems) // 2 :]}
    mine = {p: ts for _, p, ts in own.problems()}
    for _, problem, timings in merged.problems():  # the H200's own halved timings were kept
        assert timings == mine.get(problem, timings)
        if problem in mine:
            assert timings[0].time_us == next(ts for _, p, ts in prior.problems() if p == problem)[0].time_us / 2

    save_dataset(own, tmp_path / "own.json.gz")
    save_dataset(prior, tmp_path / "prior.json.gz")
    cmd = ["train", "--dataset", tmp_path / "own.json.gz"]
    cmd += ["--model", tmp_path / "m.diode", "--num-epochs", "2", "--prior-data", tmp_path / "prior.json.gz"]
    code, _, err = diode_cli(*cmd)
    assert code == 0, err[-2000:]
    meta = model_metadata(tmp_path / "m.diode")
    assert meta["hardware"]["device_name"] == "NVIDIA H200"
    assert meta["training_data"]["problems"] == len(problems)
    assert meta["training_data"]["prior_data"] == record

    held = load_shapeset("realmodels_heldout")[0].problem
    prior.add(problems[0][0], held, problems[0][2])
    save_dataset(prior, tmp_path / "prior_held.json.gz")
    cmd[-1] = tmp_path / "prior_held.json.gz"
    code, _, err = diode_cli(*cmd)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "prior_held.json.gz" in err and held.short() in err


def test_the_contract_of_a_model_with_prior_data_is_judged_on_its_own_gpus_problems():
    """The held-out first picks the handler's unsure rule reads come from the problems measured on
    the model's GPU: --prior-data's held-out problems are another GPU's times (which a model adapted
    from that GPU's model has already fit), so they do not count; without prior problems, every
    held-out problem does."""
    from dataclasses import replace

    from torch_diode.training.train import with_prior_data
    from torch_diode.types import Dataset, problem_key

    problems = list(load_dataset(SAMPLE).problems())
    h200 = replace(problems[0][0], device_name="NVIDIA H200")
    own, prior = Dataset(), Dataset()
    for hardware, problem, timings in problems:
        prior.add(hardware, problem, timings)
    for _, problem, timings in problems[::2]:
        own.add(h200, problem, [replace(t, time_us=t.time_us / 2) for t in timings])
    merged, _, added = with_prior_data(own, prior)
    config = TrainConfig(num_epochs=2, validation_fraction=0.5, seed=0, prior_share=0.5)
    arrays = build_arrays(merged)
    held = np.flatnonzero(split_groups(arrays.num_problems, 0.5, 0))
    mine = [g for g in held if problem_key(arrays.problems[g][1]) not in added]
    assert 0 < len(mine) < len(held)  # held-out problems of both GPUs

    def judged(prior_problems) -> int:
        model, _ = train_model(merged, config, progress=False, prior_problems=prior_problems)
        return sum(k["problems"] for k in model.metadata["training_data"]["heldout_top1_slowdown"].values())

    assert judged(added) == len(mine)
    assert judged(None) == len(held)


def test_extern_weight_fits_the_aten_rows_closer():
    """--extern-weight: the squared error of ATen rows counts that many times; at a large weight the
    fitted ATen times are closer to the measured ones than at 1 (the same seed, the same data)."""
    from torch_diode.features import config_rows, is_extern

    ds = load_dataset(SAMPLE)
    arrays = build_arrays(ds)
    extern = is_extern(config_rows(arrays.configs))
    assert 0 < extern.sum() < len(extern) / 10  # few ATen rows among many Triton rows

    def aten_mse(weight: float) -> float:
        cfg = TrainConfig(num_epochs=40, patience=40, validation_fraction=0.0, seed=5, extern_weight=weight)
        model = Regressor.from_model_file(train_model(ds, cfg, progress=False)[0])
        with torch.no_grad():
            pred = model(torch.from_numpy(arrays.features)).numpy()
        return float(np.mean((pred[extern] - arrays.log_time_us[extern]) ** 2))

    assert aten_mse(50.0) < 0.8 * aten_mse(1.0)  # ignored, the weight would give about 1.0
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="extern_weight"):
            TrainConfig(extern_weight=bad).resolved()


def test_clip_slowdown_caps_each_problems_slow_rows_and_trains_on_them():
    """--clip-slowdown C: a row measured over C times its problem's best is trained as C times the
    best; the other rows, and each problem's best, keep their measured times; the model records it."""
    ds = load_dataset(SAMPLE)
    arrays = build_arrays(ds)
    clipped = clipped_targets(arrays, 3.0)
    for g in range(arrays.num_problems):
        rows = arrays.group == g
        measured, capped = arrays.log_time_us[rows], clipped[rows]
        best = measured.min()
        np.testing.assert_allclose(capped.max(initial=best), min(measured.max(), best + np.log(3.0)), rtol=1e-5)
        slow = measured > best + np.log(3.0)
        np.testing.assert_array_equal(capped[~slow], measured[~slow])
        np.testing.assert_allclose(capped[slow], best + np.log(3.0), rtol=1e-5)
    assert (clipped < arrays.log_time_us).any()  # the sample has rows over 3x their best

    cfg = TrainConfig(num_epochs=30, patience=30, validation_fraction=0.0, seed=3, clip_slowdown=3.0)
    model_file = train_model(ds, cfg, progress=False)[0]
    assert model_file.metadata["training"]["clip_slowdown"] == 3.0
    for bad in (1.0, 0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="clip_slowdown"):
            TrainConfig(clip_slowdown=bad).resolved()


def test_training_fits_a_loss_calibration_of_the_misaligned_problems_alone():
    """diode train records two loss calibrations: one of every held-out problem, and one of the
    held-out problems with a misaligned operand alone, which the handler reads for those."""
    from torch_diode.selection import Policy
    from torch_diode.training.confidence import fit_loss_calibration, loss_cases
    from torch_diode.training.model import Ensemble
    from torch_diode.types import Dataset, Hardware, KernelConfig, Problem, TimedConfig

    hardware = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 * 2**30, 232448, "2.11.0", "3.6.0", "13.0")
    rng = np.random.default_rng(0)
    ds = Dataset()
    for i in range(200):
        k = 256 + 16 * i if i % 2 else 257 + 2 * i  # every other K odd: rows of A of 2K bytes, misaligned
        base_us = 0.01 * k
        aten_us = base_us * (rng.uniform(0.8, 1.3) if k % 2 else rng.uniform(1.3, 1.8))  # aligned: templates win
        timings = [TimedConfig(KernelConfig("aten::mm"), aten_us)]
        for block_m in (16, 32, 64, 128):
            config = KernelConfig("triton::mm", block_m, 64, 32, 8, 3, 4, even_k=True, acc_type="tl.float32")
            timings.append(TimedConfig(config, base_us * rng.uniform(0.7, 1.5)))
        ds.add(hardware, Problem("mm", 1, 512, 512, k, "float16", "float16", "float16"), timings)
    config = TrainConfig(num_epochs=5, validation_fraction=0.5, seed=0, ensemble=2)
    model, _ = train_model(ds, config, progress=False)
    training = model.metadata["training_data"]
    arrays = build_arrays(ds)
    held = np.flatnonzero(split_groups(arrays.num_problems, 0.5, 0))
    misaligned = np.array([g for g in held if arrays.problems[g][1].misaligned_operands])
    assert 0 < len(misaligned) < len(held)
    ensemble, policy = Ensemble.from_model_file(model), Policy.from_config()
    expected = fit_loss_calibration(loss_cases(ensemble, arrays, misaligned, policy))
    assert expected is not None and expected.problems < training["loss_calibration"]["problems"]
    assert training["misaligned_loss_calibration"] == expected.to_dict()


def test_the_summary_says_how_the_members_were_fitted():
    assert TrainConfig().fitted(1) == "1 member"
    assert TrainConfig(ensemble=3, bootstrap=True).fitted(3) == "3 members (bootstrap)"
    adapted = TrainConfig(init_model="NVIDIA-H100-matmul", trainable_layers=1)
    assert adapted.fitted(4) == "4 members, from NVIDIA-H100-matmul (last 1 layer(s) fitted)"
    assert replace(adapted, trainable_layers=None).fitted(4).endswith("(every layer fitted)")

"""Adapting a model to another GPU: training from a shipped model's members (--init-model), fitting
its last layers (--trainable-layers) and drawing the prior data's share (--prior-share)."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from torch_diode.dataset_io import load_dataset
from torch_diode.model_file import model_metadata, read_model
from torch_diode.registry import resolve_model
from torch_diode.training.train import TrainConfig, train_model

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "h100_sample.json.gz"


def test_init_model_starts_from_the_models_members_and_keeps_its_form(tmp_path):
    """`diode train --init-model`: the members start from the given model's weights (an epoch at a
    vanishing learning rate leaves them as they were), with its dims, member count, normalisation
    and feature version (the shipped H100 model reads an older version's features)."""

    data = load_dataset(SAMPLE)
    start = read_model(resolve_model("NVIDIA-H100-matmul"))
    config = TrainConfig(init_model="NVIDIA-H100-matmul", num_epochs=1, learning_rate=1e-12, loss="listwise")
    model, _ = train_model(data, config, progress=False)
    assert model.dims == start.dims and len(model.members) == len(start.members)
    assert model.feature_version == start.feature_version
    assert model.metadata["feature_names"] == start.metadata["feature_names"]
    np.testing.assert_array_equal(model.feature_mean, start.feature_mean)
    for mine, theirs in zip(model.members, start.members):
        for (w, b), (w0, b0) in zip(mine, theirs):
            np.testing.assert_allclose(w, w0, atol=1e-6)
            np.testing.assert_allclose(b, b0, atol=1e-6)
    assert model.metadata["training"]["init_model"] == "NVIDIA-H100-matmul"
    assert model.metadata["training"]["ensemble"] == len(start.members)
    moved, _ = train_model(data, replace(config, learning_rate=1e-2, num_epochs=3), progress=False)
    assert not np.allclose(moved.members[0][0][0], start.members[0][0][0], atol=1e-4)  # it does train


def test_trainable_layers_fits_the_last_layers_and_keeps_the_others(tmp_path, diode_cli):
    """`diode train --init-model M --trainable-layers 1`: each member's output layer moves and its
    hidden layers keep M's weights; with 2, the last hidden layer moves too."""
    start = read_model(resolve_model("NVIDIA-H100-matmul"))
    for layers in (1, 2):
        out = tmp_path / f"last{layers}.diode"
        code, _, err = diode_cli(
            "train", "--dataset", SAMPLE, "--init-model", "NVIDIA-H100-matmul", "--trainable-layers", str(layers),
            "--num-epochs", "3", "--learning-rate", "1e-2", "--model", out,
        )  # fmt: skip
        assert code == 0, err
        model = read_model(out)
        assert model_metadata(out)["training"]["trainable_layers"] == layers
        for mine, theirs in zip(model.members, start.members):
            kept = len(mine) - layers
            for (w, b), (w0, b0) in zip(mine[:kept], theirs[:kept]):
                np.testing.assert_array_equal(w, w0)
                np.testing.assert_array_equal(b, b0)
            for (w, _), (w0, _) in zip(mine[kept:], theirs[kept:]):
                assert not np.allclose(w, w0, atol=1e-4)


@pytest.mark.parametrize(
    ("extra", "needs"),
    [([], "--init-model"), (["--init-model", "NVIDIA-H100-matmul", "--trainable-layers", "4"], "3 layers")],
)
def test_trainable_layers_that_cannot_work_are_refused_before_the_data_is_read(tmp_path, diode_cli, extra, needs):
    missing = tmp_path / "missing.msgpack.gz"
    args = extra if "--trainable-layers" in extra else [*extra, "--trainable-layers", "1"]
    code, _, err = diode_cli("train", "--dataset", missing, "--model", tmp_path / "m.diode", *args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--trainable-layers" in err and needs in err and str(missing) not in err, err


def test_prior_share_draws_every_own_problem_and_a_share_of_the_prior_each_epoch():
    from torch_diode.training.train import _epoch_problems, _Rows

    prior = torch.tensor([False] * 10 + [True] * 90)
    rows = _Rows(torch.zeros(1), torch.zeros(1), torch.zeros(1), prior=prior)
    generator = torch.Generator().manual_seed(0)
    first, second = (_epoch_problems(rows, 0.5, generator) for _ in range(2))
    for drawn in (first, second):
        assert set(range(10)) <= set(drawn.tolist()) and len(drawn) == 20 and len(set(drawn.tolist())) == 20
    assert set(first.tolist()) != set(second.tolist())  # a fresh draw of the prior each epoch
    assert _epoch_problems(rows, None, generator) is None


@pytest.mark.parametrize(
    ("extra", "option"),
    [(["--prior-share", "0.5"], "--prior-share"), (["--init-model", "NVIDIA-B300-matmul"], "--init-model")],
)
def test_adapt_options_that_cannot_work_are_refused_naming_the_option(tmp_path, diode_cli, extra, option):
    code, _, err = diode_cli("train", "--dataset", SAMPLE, "--model", tmp_path / "m.diode", *extra)
    assert code == 2 and option in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "m.diode").exists()


def test_prior_share_without_prior_data_is_refused_before_the_data_is_read(tmp_path, diode_cli):
    """An option error is found from the options alone: the dataset named here does not exist, and
    the error is the option's, naming --prior-share and what it needs."""
    missing = tmp_path / "missing.msgpack.gz"
    code, _, err = diode_cli("train", "--dataset", missing, "--model", tmp_path / "m.diode", "--prior-share", "0.5")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--prior-share" in err and "--prior-data" in err and str(missing) not in err, err


@pytest.mark.parametrize(
    ("extra", "option", "given", "model_s"),
    [
        (["--model-type", "deep"], "--model-type", "deep", "base"),
        (["--hidden-dim", "64"], "--hidden-dim", "64", "48"),
        (["--num-layers", "3"], "--num-layers", "3", "2"),
        (["--ensemble", "2"], "--ensemble", "2", "4"),
        (["--bootstrap"], "--bootstrap", "on", "off"),
    ],
)
def test_init_model_refuses_a_form_option_that_differs_from_the_models(
    tmp_path, diode_cli, extra, option, given, model_s
):
    """An option of the members' form given with --init-model must be the init model's (the shipped
    H100 model: base, 4 members of 2 hidden layers 48 wide, no bootstrap): one that differs is
    refused in one line naming it and both values, from the options alone (the dataset named here
    does not exist)."""
    missing = tmp_path / "missing.msgpack.gz"
    code, _, err = diode_cli(
        "train", "--dataset", missing, "--model", tmp_path / "m.diode", "--init-model", "NVIDIA-H100-matmul", *extra
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{option}: {given} contradicts --init-model NVIDIA-H100-matmul" in err and f" is {model_s}:" in err, err


def test_init_model_options_left_out_follow_the_init_models_form(tmp_path, diode_cli):
    """The form options left out (and one given as the init model has it) follow the init model:
    a model adapted from a deep model of 2 members is a deep model of 2 members, and says so."""
    start, adapted = tmp_path / "deep.diode", tmp_path / "adapted.diode"
    common = ["--dataset", SAMPLE, "--num-epochs", "1", "--patience", "1"]
    form = ["--model-type", "deep", "--hidden-dim", "8", "--num-layers", "1", "--ensemble", "2"]
    assert diode_cli("train", *common, *form, "--model", start)[0] == 0
    code, out, err = diode_cli("train", *common, "--init-model", start, "--hidden-dim", "8", "--model", adapted)
    assert code == 0, err
    assert out.startswith("trained deep ")
    model, meta = read_model(adapted), model_metadata(adapted)
    assert model.dims == read_model(start).dims and len(model.members) == 2
    assert meta["model_family"] == "deep"
    assert {k: meta["training"][k] for k in ("model_type", "hidden_dim", "num_layers", "ensemble", "bootstrap")} == {
        "model_type": "deep",
        "hidden_dim": 8,
        "num_layers": 1,
        "ensemble": 2,
        "bootstrap": False,
    }

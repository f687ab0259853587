"""Model files: C++ engine = PyTorch, strict loading, clear errors on corrupt files."""

import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from torch_diode import _C
from torch_diode.dataset_io import load_dataset
from torch_diode.features import NUM_FEATURES, featurize
from torch_diode.model_file import ModelFormatError, read_model, write_model
from torch_diode.predict import load_model, predict_log_time_us
from torch_diode.training.model import MLP, Regressor

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "h100_sample.json.gz"


def random_model(seed=0, hidden=32, layers=3) -> Regressor:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    mlp = MLP(NUM_FEATURES, hidden, layers)
    return Regressor(
        mlp,
        rng.normal(size=NUM_FEATURES).astype(np.float32),
        rng.uniform(0.5, 2, NUM_FEATURES).astype(np.float32),
        3.0,
        1.5,
    )


@pytest.fixture
def model_path(tmp_path) -> Path:
    return write_model(tmp_path / "m.diode", random_model().to_model_file({"model_family": "test", "note": "ü"}))


def test_engine_equals_pytorch_on_real_features(model_path):
    reg = random_model()
    engine = load_model(model_path)
    ds = load_dataset(SAMPLE)
    for hw, problem, timings in ds.problems():
        configs = [t.config for t in timings]
        x = featurize(problem, configs, hw)
        with torch.no_grad():
            expected = reg(torch.from_numpy(x)).numpy()
        got = predict_log_time_us(engine, problem, configs, hw)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(engine.predict_features(x), expected, rtol=1e-4, atol=1e-5)


def test_a_model_of_an_older_feature_version_reads_the_first_features(tmp_path):
    """A version-2 model (no decompose_k split features) runs on this build's longer feature rows,
    in the engine and in PyTorch alike, and keeps its version through a rewrite."""
    old_nf = _C.features_of_version(_C.OLDEST_FEATURE_VERSION)
    assert _C.OLDEST_FEATURE_VERSION < _C.FEATURE_VERSION and 0 < old_nf < NUM_FEATURES
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    reg = Regressor(MLP(old_nf, 16, 2), rng.normal(size=old_nf), rng.uniform(0.5, 2, old_nf), 3.0, 1.5)
    mf = reg.to_model_file({"model_family": "test"})
    mf.feature_version = _C.OLDEST_FEATURE_VERSION
    path = write_model(tmp_path / "v2.diode", mf)
    engine = load_model(path)
    assert (engine.feature_version, engine.num_features) == (_C.OLDEST_FEATURE_VERSION, old_nf)
    x = np.random.default_rng(2).normal(size=(7, NUM_FEATURES)).astype(np.float32)
    with torch.no_grad():
        expected = reg(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(engine.predict_features(x), expected, rtol=1e-4, atol=1e-5)
    x[:, old_nf:] += 5.0  # the features it was not trained on change nothing
    np.testing.assert_allclose(engine.predict_features(x), expected, rtol=1e-4, atol=1e-5)
    back = read_model(path)
    assert back.feature_version == _C.OLDEST_FEATURE_VERSION
    assert load_model(write_model(tmp_path / "again.diode", back)).feature_version == _C.OLDEST_FEATURE_VERSION
    mf.feature_version = _C.FEATURE_VERSION  # 62 inputs do not make a version-3 model
    with pytest.raises(ModelFormatError, match=r"dims\[0\]"):
        write_model(tmp_path / "bad.diode", mf)
    assert not (tmp_path / "bad.diode").exists()


def test_round_trip_is_exact_and_strict(model_path):
    mf = read_model(model_path)
    assert mf.metadata == {"model_family": "test", "note": "ü"}
    back = Regressor.from_model_file(mf)
    orig = random_model()
    for a, b in zip(back.state_dict().values(), orig.state_dict().values()):
        assert torch.equal(a, b)
    with pytest.raises(RuntimeError):  # strict: a state of another shape never loads
        MLP(NUM_FEATURES, 16, 3).load_state_dict(orig.mlp.state_dict(), strict=True)


def _corrupt(path: Path, offset: int, value: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(value)] = value
    path.write_bytes(bytes(raw))


def test_corrupt_and_mismatched_files(model_path, tmp_path):
    raw = model_path.read_bytes()
    cases = {
        "magic": (0, b"NOTAMODL"),
        "format_version": (8, struct.pack("<I", 99)),
        "feature_version": (12, struct.pack("<I", 12345)),
        "num_members": (16, struct.pack("<I", 0)),
        "num_layers": (20, struct.pack("<I", 0)),
        "dims[0]": (24, struct.pack("<I", NUM_FEATURES + 1)),
        "checksum": (len(raw) - 20, b"\x01\x02\x03\x04"),  # a weight byte flipped
    }
    for field, (offset, value) in cases.items():
        bad = tmp_path / f"bad_{field}.diode"
        bad.write_bytes(raw)
        _corrupt(bad, offset, value)
        with pytest.raises(ModelFormatError) as info:
            load_model(bad)
        assert f"field '{field}'" in str(info.value) and str(bad) in str(info.value), str(info.value)
    truncated = tmp_path / "t.diode"
    truncated.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelFormatError, match="truncated"):
        _C.Model.load(str(truncated))
    with pytest.raises(ModelFormatError, match="cannot open"):
        _C.Model.load(str(tmp_path / "missing.diode"))
    assert issubclass(ModelFormatError, ValueError)


def test_writer_refuses_inconsistent_models(tmp_path):
    mf = random_model().to_model_file({})
    w, b = mf.layers[1]
    mf.layers[1] = (w[:, :-1], b)
    with pytest.raises(ValueError, match="do not chain"):
        write_model(tmp_path / "x.diode", mf)
    mf = random_model().to_model_file({})
    mf.feature_std[3] = 0.0
    with pytest.raises(ModelFormatError, match="feature_std"):
        write_model(tmp_path / "y.diode", mf)
    assert not (tmp_path / "y.diode").exists()


def test_predict_rejects_bad_shapes(model_path):
    engine = load_model(model_path)
    with pytest.raises(ValueError, match="columns"):
        engine.predict_features(np.zeros((3, NUM_FEATURES - 1), np.float32))
    with pytest.raises(ValueError, match="problem"):
        engine.predict(np.zeros(5, np.int64), np.zeros((1, 10), np.int64), np.array([132, 1000]))


def test_generic_and_avx2_kernels_agree(model_path):
    """The engine's dense kernel is built twice (AVX2+FMA and baseline); both must predict alike."""
    import subprocess
    import sys

    code = (
        "import numpy as np, sys; from torch_diode import _C; m = _C.Model.load(sys.argv[1]); "
        "x = np.random.default_rng(0).normal(size=(1001, m.num_features)).astype(np.float32); "
        "np.save(sys.argv[2], m.predict_features(x))"
    )
    outs = []
    for env in ({}, {"DIODE_GENERIC_KERNEL": "1"}):
        out = model_path.with_suffix(f".{len(outs)}.npy")
        subprocess.run(
            [sys.executable, "-c", code, str(model_path), str(out)], check=True, env={**__import__("os").environ, **env}
        )
        outs.append(np.load(out))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)


def test_an_ensemble_round_trips_and_the_engine_predicts_every_member(tmp_path):
    """Format version 2: K members of the same dims; the engine's prediction is their mean and
    predict_members gives each, equal to the PyTorch members'."""
    from torch_diode.training.model import Ensemble

    torch.manual_seed(1)
    members = [random_model(seed=k) for k in range(3)]
    for m in members[1:]:  # one normalisation for all
        m.feature_mean, m.feature_std = members[0].feature_mean, members[0].feature_std
    ensemble = Ensemble(members).eval()
    path = write_model(tmp_path / "e.diode", ensemble.to_model_file({"family": "test"}))
    engine = load_model(path)
    assert engine.num_members == 3 and engine.dims == members[0].to_model_file({}).dims
    x = np.random.default_rng(0).normal(size=(300, NUM_FEATURES)).astype(np.float32)
    with torch.no_grad():
        expected = ensemble.members(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(engine.predict_members(x), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(engine.predict_features(x), expected.mean(axis=0), rtol=1e-4, atol=1e-4)
    again = read_model(path)
    assert len(again.members) == 3 and np.array_equal(
        again.members[2][0][0], members[2].mlp.linears()[0].weight.detach().numpy()
    )
    with pytest.raises(ValueError, match="member 3 out of range"):
        engine.weight(0, 3)


def test_a_version_1_file_is_one_member():
    """A file of format version 1 (the H100 model shipped before ensembles) loads as a single member."""
    old = Path(__file__).resolve().parent / "data" / "format1_contract1.diode"
    assert struct.unpack("<I", old.read_bytes()[8:12])[0] == 1
    engine = load_model(old)
    assert engine.num_members == 1
    x = np.zeros((4, NUM_FEATURES), np.float32)
    np.testing.assert_array_equal(engine.predict_members(x)[0], engine.predict_features(x))

"""Each shipped model's recipe (``models/<name>.recipe.json``) against what the model records, and
`diode rebuild-model` end to end on a small repository of its own."""

import json
import shutil
import subprocess
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from torch_diode.cli.model import train_config, training_data
from torch_diode.cli.rebuild import find_recipe, recipe_options
from torch_diode.dataset_io import load_dataset, save_dataset
from torch_diode.errors import UserError
from torch_diode.model_file import model_metadata
from torch_diode.registry import shipped_models
from torch_diode.training.data import build_arrays, matches_hardware
from torch_diode.training.recipe import extract_at_commit, load_recipe, repository_root, resolve_commit
from torch_diode.training.train import TrainConfig
from torch_diode.types import Dataset, Hardware

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "h100_sample.json.gz"
SHIPPED = sorted(shipped_models())


def test_every_shipped_model_has_a_recipe():
    assert SHIPPED, "no shipped model"
    for name, path in shipped_models().items():
        assert find_recipe(name).model_path == path


@pytest.mark.parametrize("name", SHIPPED)
def test_the_recipes_options_are_the_ones_the_shipped_model_records(name):
    """Every TrainConfig field (the recipe's options with `diode train`'s defaults) equals the model's
    ``training``; its GPU, op and prior data are the model's; its data folders are in the repository.
    The data folders, --exclude and data_commit are not in the metadata: the slow test below reads
    the data at data_commit and counts what the model records it was trained on. A field the model
    does not record is one added to TrainConfig after it was trained: its default is what it ran."""
    recipe = find_recipe(name)
    meta = model_metadata(recipe.model_path)
    args = recipe_options(recipe, ROOT, "unused.diode")
    recorded = {k: v for k, v in meta["training"].items() if k != "report"}
    options = asdict(train_config(args))
    if options["init_model"]:  # the model records the recipe's path, relative to the repository
        options["init_model"] = Path(options["init_model"]).relative_to(ROOT).as_posix()
    assert set(recorded) <= set(options)
    assert options == {k: recorded.get(k, TrainConfig.__dataclass_fields__[k].default) for k in options}
    assert matches_hardware(Hardware.from_dict(meta["hardware"]), args.hardware_name)
    assert args.op_name == meta["op"]
    assert bool(args.prior_data) == ("prior_data" in meta["training_data"])
    for path in recipe.paths():
        assert (ROOT / path).exists(), path


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_the_recipes_data_at_its_commit_is_what_the_shipped_model_was_trained_on(name, tmp_path):
    """The recipe's data folders at its data_commit, less what it excludes and with its prior data,
    hold the problems, rows and prior problems that the shipped model records."""
    recipe = find_recipe(name)
    try:
        commit = resolve_commit(repository_root(ROOT), recipe)
    except UserError as e:
        pytest.skip(f"no history to read the data from: {e}")
    extract_at_commit(ROOT, recipe, commit, tmp_path)
    args = recipe_options(recipe, tmp_path, str(tmp_path / "unused.diode"))
    dataset, prior, _ = training_data(args)
    arrays = build_arrays(dataset, args.hardware_name, args.op_name)
    recorded = model_metadata(recipe.model_path)["training_data"]
    assert arrays.num_problems == recorded["problems"]
    assert len(arrays.log_time_us) == recorded["rows"]
    assert prior == recorded.get("prior_data")


def _git(repo: Path, *words: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *words],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def rebuild(diode_cli, monkeypatch):
    """``rebuild(cwd, words...)``: `diode rebuild-model words` run in ``cwd`` (in this process); its
    exit code, stdout and stderr."""

    def run(cwd: Path, *words) -> tuple[int, str, str]:
        monkeypatch.chdir(cwd)
        return diode_cli("rebuild-model", *words)

    return run


def _recipe_repo(tmp_path: Path, train: dict, files: dict | None = None) -> tuple[Path, Path]:
    """A git repository whose one commit holds the sample as data/s/ (and copies of ``files``:
    {path in the repository: source}), with a recipe of ``train`` naming that commit; (the
    repository, the recipe)."""
    repo = tmp_path / "repo"
    (repo / "data" / "s").mkdir(parents=True)
    shutil.copy(SAMPLE, repo / "data" / "s" / SAMPLE.name)
    for path, source in (files or {}).items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, repo / path)
    _git(repo, "init", "-q")
    _git(repo, "add", "data", *(files or {}))
    _git(repo, "commit", "-q", "-m", "data")
    recipe = repo / "models" / "M.recipe.json"
    recipe.parent.mkdir(exist_ok=True)
    recipe.write_text(json.dumps({"data_commit": _git(repo, "rev-parse", "HEAD"), "train": train}))
    return repo, recipe


@pytest.mark.slow
def test_rebuild_model_trains_the_recipe_on_the_data_of_its_commit(tmp_path, rebuild):
    """The rebuild reads the data as committed, not the files added since (unless --current-data),
    writes a new file, and trains the same weights again (the table shows no difference)."""
    train = {"data-dir": "data/s", "drop-heldout": True, "hidden-dim": 8, "num-epochs": 2, "seed": 3}
    repo, recipe = _recipe_repo(tmp_path, train)
    sample = load_dataset(SAMPLE)
    added = Dataset()
    for hardware, problem, timings in sample.problems():
        added.add(hardware, replace(problem, M=problem.M + 3), timings)
    save_dataset(added, repo / "data" / "s" / "added.json.gz")  # not committed

    code, out, err = rebuild(repo, recipe, "-o", recipe.with_name("M.diode"))  # the "shipped" model, asked for
    assert code == 0, err[-2000:]
    assert "data/s in " in out and "differ from" in out and "(1 files" in out
    committed = model_metadata(recipe.with_name("M.diode"))["training_data"]["problems"]
    assert committed == sample.num_problems

    code, out, err = rebuild(repo / "data", recipe)  # from a subfolder: the default output is M.diode there
    assert code == 0, err[-2000:]
    assert model_metadata(repo / "data" / "M.diode")["training_data"]["problems"] == committed
    table = out[out.index("shipped") :]
    assert "weights: largest difference" in table and "differs" not in table, table

    code, out, err = rebuild(repo, recipe, "--current-data", "-o", tmp_path / "current.diode")
    assert code == 0, err[-2000:]
    assert model_metadata(tmp_path / "current.diode")["training_data"]["problems"] > committed
    assert "training_data.problems" in out and "differs" in out


@pytest.mark.slow
def test_a_recipe_adapting_another_model_reads_it_at_the_data_commit(tmp_path, rebuild):
    """--init-model names a model file of the repository: the rebuild starts from it as committed
    (a file changed since is not read) and the model records the recipe's path."""
    shipped = ROOT / "src" / "torch_diode" / "models" / f"{SHIPPED[0]}.diode"
    train = {"data-dir": "data/s", "drop-heldout": True, "init-model": "models/start.diode", "num-epochs": 2}
    repo, recipe = _recipe_repo(tmp_path, train, {"models/start.diode": shipped})
    (repo / "models" / "start.diode").write_bytes(b"changed since the commit")
    code, out, err = rebuild(repo, recipe, "-o", tmp_path / "adapted.diode")
    assert code == 0, err[-2000:]
    assert "models/start.diode" in out and "differ from" in out
    recorded = model_metadata(tmp_path / "adapted.diode")["training"]
    assert recorded["init_model"] == "models/start.diode"
    assert recorded["hidden_dim"] == model_metadata(shipped)["hidden_dim"]
    recipe.write_text(
        json.dumps(
            {"data_commit": _git(repo, "rev-parse", "HEAD"), "train": {**train, "init-model": "models/none.diode"}}
        )
    )
    code, _, err = rebuild(repo, recipe, "-o", tmp_path / "none.diode")
    assert code == 2 and "field 'train.init-model': models/none.diode is not in commit" in err


def test_rebuild_model_refuses_a_bad_recipe_in_one_line(tmp_path, rebuild):
    """A recipe's bad field, an unknown commit and the shipped file as the default output are each
    one line naming the recipe's field or the option (exit 2), before any training."""
    repo, recipe = _recipe_repo(tmp_path, {"data-dir": "data/s", "hidden-dim": 0})
    shutil.copy(ROOT / "src" / "torch_diode" / "models" / f"{SHIPPED[0]}.diode", recipe.with_name("M.diode"))
    cases = [
        ({"data-dir": "data/s", "hidden-dim": 0}, repo, "field 'train': argument --hidden-dim: must be >= 1"),
        ({"data-dir": "data/s", "hidden-size": 48}, repo, "field 'train.hidden-size': not an option"),
        ({"data-dir": "data/s", "model": "x.diode"}, repo, "field 'train.model'"),
        ({"exclude": ["data/x"]}, repo, "field 'train': names no data"),
        ({"data-dir": "data/s"}, recipe.parent, "--output: the default M.diode is the shipped model"),
    ]
    for train, cwd, message in cases:
        recipe.write_text(json.dumps({"data_commit": _git(repo, "rev-parse", "HEAD"), "train": train}))
        code, _, err = rebuild(cwd, recipe)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (train, err)
    recipe.write_text(json.dumps({"data_commit": "0123456789abcdef", "train": {"data-dir": "data/s"}}))
    code, _, err = rebuild(repo, recipe)
    assert code == 2 and "field 'data_commit': 0123456789abcdef is not in the history" in err
    assert list(repo.glob("*.diode")) == []
    with pytest.raises(UserError, match="field 'data_commit'"):
        recipe.write_text(json.dumps({"data_commit": "HEAD", "train": {"data-dir": "data/s"}}))
        load_recipe(recipe)

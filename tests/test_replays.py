"""The handler's replays on measured data and the studies built on them, on the shipped sample and
held-out data (no GPU needed)."""

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


# the subcommands of the studies that replay the handler; the others are benchmarks.selection_replay's
REPLAY_STUDIES = {
    **dict.fromkeys(("extern-preference", "spread-penalty"), "selection_rules"),
    **dict.fromkeys(
        ("uncertainty", "learned-risk", "misaligned-groups", "config-coverage", "deciding-configs"), "slow_picks"
    ),
}


def selection_replay(command, *args) -> None:
    """``python -m benchmarks.selection_replay COMMAND ARGS`` (``benchmarks.studies.selection_rules``
    or ``slow_picks`` for a study's COMMAND), run in this process (main's argv: no interpreter and
    torch to start again); it must succeed."""
    import importlib

    study = REPLAY_STUDIES.get(command)
    replay = importlib.import_module(f"benchmarks.studies.{study}" if study else "benchmarks.selection_replay")
    assert replay.main([command, *map(str, args)]) == 0


def test_heldout_selection_judges_the_handlers_order_on_measured_data(tmp_path):
    """benchmarks/selection_replay.py heldout on the shipped sample: the widened set holds the first
    pick, so its best is never slower; both are ratios to the best measured time."""
    out = tmp_path / "sel.json"
    selection_replay(
        "heldout",
        "--model",
        "NVIDIA-H100-matmul",
        "--data",
        str(ROOT / "data" / "sample" / "h100_sample.json.gz"),
        "--out",
        str(out),
    )
    (row,) = json.loads(out.read_text())["rows"]
    assert row["problems"] == 12
    assert (
        1.0 <= row["widened"]["geomean"] <= row["first"]["geomean"] and row["widened"]["worst"] <= row["first"]["worst"]
    )
    # unsure_top_k (5), plus the best ATen choice and the best DEFAULT template where those lack them
    assert 1.0 <= row["kept_mean"] <= 7.0


def named_shapeset(data: Path | str, path: Path) -> Path:
    """A shapeset at ``path`` naming each problem of ``data`` as layer fc of its own model (model0, model1, ...)."""
    from torch_diode.dataset_io import load_dataset

    entries = []
    for i, (_, problem, _) in enumerate(load_dataset(data).problems()):
        entry = {k: v for k, v in problem.to_dict().items() if k not in ("strides_a", "strides_b", "bias_shape")}
        entries.append({"model": f"model{i}", "layer": "fc", **entry})
    path.write_text(json.dumps({"name": "named", "entries": entries}))
    return path


def test_extern_preference_replay_picks_aten_more_often_the_stronger_the_preference(tmp_path):
    """benchmarks/studies/selection_rules.py extern-preference on the shipped sample: an overwhelming
    preference picks ATen on every aligned problem, none at all picks it no more often than 1.0
    does, and the misaligned problems' first picks do not depend on it (the handler applies it to
    aligned problems alone)."""
    from torch_diode.dataset_io import load_datasets

    sample = ROOT / "data" / "sample" / "h100_sample.json.gz"
    out = tmp_path / "pref.json"
    selection_replay("extern-preference", "--data", sample, "--preferences", "1.0", "1.1", "1e9", "--out", out)
    rows = json.loads(out.read_text())["rows"]
    assert [r["extern_preference"] for r in rows] == [1.0, 1.1, 1e9]
    picks = [r["extern_picks"] for r in rows]
    aligned = sum(not problem.misaligned_operands for _, problem, _ in load_datasets([str(sample)]).problems())
    assert 0 < aligned < rows[-1]["problems"] == 12
    assert picks == sorted(picks) and picks[-1] >= aligned
    misaligned = [r["first_pick_misaligned"] for r in rows]
    assert len({json.dumps(m, sort_keys=True) for m in misaligned}) == 1


def test_realmodels_replay_names_each_problem_by_its_layers_and_judges_the_handlers_outcome(tmp_path):
    """benchmarks/selection_replay.py realmodels on the shipped sample with a shapeset naming its
    problems: every problem is matched to its layer, the outcome (the pick, or the best of what an
    unsure decision hands Inductor) is never slower than the first pick, and the fraction is a fraction."""
    sample = ROOT / "data" / "sample" / "h100_sample.json.gz"
    shapeset = named_shapeset(sample, tmp_path / "named.json")
    out = tmp_path / "realmodels.json"
    selection_replay("realmodels", "--data", str(sample), "--shapeset", str(shapeset), "--out", str(out))
    report = json.loads(out.read_text())
    assert report["num_problems"] == 12 and report["unmatched_problems"] == 0
    assert all(r["layers"] == [f"model{i}: fc"] for i, r in enumerate(report["rows"]))
    assert 1.0 <= report["outcome_geomean"] <= report["first_pick_geomean"]
    assert report["outcome_worst"] <= report["first_pick_worst"] and 0.0 <= report["unsure_fraction"] <= 1.0


def test_cross_gpu_carries_the_first_gpus_best_config_to_the_second(tmp_path):
    """benchmarks.studies.cross_gpu: a second GPU twice as fast, where on one problem another config beats
    the first GPU's best by 1.5x: that problem's ratio is 1.5, the others' 1."""
    from dataclasses import replace

    from benchmarks.studies.cross_gpu import compare
    from torch_diode.dataset_io import load_dataset, save_dataset
    from torch_diode.types import Dataset

    sample = load_dataset(ROOT / "data" / "sample" / "h100_sample.json.gz")
    second = Dataset()
    changed = None
    for hardware, problem, timings in sample.problems():
        timings = [replace(t, time_us=t.time_us / 2) for t in timings]
        ok = sorted((t for t in timings if not t.failed), key=lambda t: t.time_us)
        if changed is None and len(ok) > 1:
            faster = replace(ok[1], time_us=ok[0].time_us / 1.5)
            timings = [faster if t is ok[1] else t for t in timings]
            changed = problem
        second.add(replace(hardware, device_name="NVIDIA H200"), problem, timings)
    save_dataset(second, tmp_path / "second.json.gz")
    report = compare([str(ROOT / "data" / "sample" / "h100_sample.json.gz")], [str(tmp_path / "second.json.gz")])
    assert report["num_problems"] == sample.num_problems and report["second"]["device"] == "NVIDIA H200"
    groups = report["first_best_on_second_over_second_best"]
    assert max(g["worst"] for g in groups.values()) == pytest.approx(1.5)
    assert groups["unaligned" if changed.misaligned_operands else changed.op]["worst"] == pytest.approx(1.5)
    assert sum(g["problems"] for g in groups.values()) == sample.num_problems
    assert report["first_best_over_second_best_geomean"] > 1.9


def test_collector_fault_reads_problem_labels_and_refuses_a_bad_one():
    from benchmarks.studies.collector_fault import parse_problem

    p = parse_problem("addmm 384x1442x1595 float16 TN")
    assert (p.op, p.B, p.M, p.N, p.K, p.dtype_a, p.transpose_a, p.transpose_b) == (
        "addmm",
        1,
        384,
        1442,
        1595,
        "float16",
        True,
        False,
    )
    assert parse_problem(p.short()) == p and parse_problem("bmm 16x100x32x950 float32 NN").B == 16
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.studies.collector_fault", "--problem", "addmm 384x1442 float16 TN"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "--problem 'addmm 384x1442 float16 TN'" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_uncertainty_replay_gives_each_signal_an_auc(tmp_path):
    """benchmarks/studies/slow_picks.py uncertainty on the shipped sample: one row per kind of
    problem present, each signal's AUC a probability (None where no first pick, or every one, is slow)."""
    out = tmp_path / "unc.json"
    sample = str(ROOT / "data" / "sample" / "h100_sample.json.gz")
    selection_replay("uncertainty", "--data", sample, "--slow", "1.0001", "--out", str(out))
    report = json.loads(out.read_text())
    assert report["signals"] == ["regret_mean", "regret_spread", "disagreement", "near_ties"]
    assert sum(r["problems"] for r in report["rows"]) == 12
    for r in report["rows"]:
        assert 0 <= r["slow"] <= r["problems"]
        assert set(r["auc"]) == set(report["signals"])
        assert all(v is None or 0.0 <= v <= 1.0 for v in r["auc"].values())
    assert any(v is not None for r in report["rows"] for v in r["auc"].values())


def test_bias_replay_splits_every_timed_candidate_by_kind_and_regime(tmp_path, monkeypatch):
    """benchmarks/selection_replay.py bias: each timed candidate counted once, in its kind (ATen or
    Triton) and its measured time's regime (a regime holds its lower bound), each ratio the geomean
    of the members' mean prediction over the measured time there; --model and --data pair up."""
    from benchmarks import selection_replay
    from torch_diode.selection import Pool

    extern = np.array([True, False, False, False, True, False])
    measured = np.array([9.99, 10.0, 29.0, 30.0, 40.0, 5.0])
    # two members; their mean over measured: 1.1, 2.0, 0.5, 1.0, 1.25, 4.0
    mean = measured * np.array([1.1, 2.0, 0.5, 1.0, 1.25, 4.0])
    members = np.log(np.stack([mean * 1.2, mean / 1.2]))
    pool = Pool(np.zeros((6, 1)), extern)
    monkeypatch.setattr(selection_replay, "replays", lambda model, data: iter([(None, pool, members, measured)]))
    out = tmp_path / "bias.json"
    selection_replay.bias(argparse.Namespace(model=["m"], data=["d"], out=str(out)))
    rows = json.loads(out.read_text())["rows"]
    assert [r["measured_us"] for r in rows] == [[0.0, 10.0], [10.0, 30.0], [30.0, None]]
    got = [
        (r["aten_candidates"], r["aten_predicted_over_measured"], r["triton_candidates"], r["triton_over_aten"])
        for r in rows
    ]
    mean_gm = np.exp(members.mean(axis=0) - np.log(measured))  # the members' ln mean, as the handler ranks
    assert got[0][:3] == (1, pytest.approx(mean_gm[0]), 1) and got[0][3] == pytest.approx(mean_gm[5] / mean_gm[0])
    assert got[1] == (0, None, 2, None)
    assert rows[1]["triton_predicted_over_measured"] == pytest.approx(np.sqrt(mean_gm[1] * mean_gm[2]))
    assert got[2][:3] == (1, pytest.approx(mean_gm[4]), 1) and got[2][3] == pytest.approx(mean_gm[3] / mean_gm[4])
    with pytest.raises(SystemExit, match="pair up"):
        selection_replay.bias(argparse.Namespace(model=["m", "n"], data=["d"], out=str(out)))


def test_spread_penalty_replay_ranks_by_mean_plus_penalty_times_the_members_spread(tmp_path, monkeypatch):
    """benchmarks/studies/selection_rules.py spread-penalty: without a penalty the handler picks the template
    the members predict fastest on average; with one, the template they agree on, predicted a little
    slower, goes first (and runs faster here); the outcome is never slower than the first pick."""
    from benchmarks.studies import selection_rules
    from torch_diode.features import FEATURE_NAMES
    from torch_diode.selection import Confidence, Pool
    from torch_diode.types import Problem

    features = np.zeros((3, len(FEATURE_NAMES)), np.float32)
    for i, kind in enumerate(["aten_mm", "triton_mm", "triton_mm"]):
        features[i, FEATURE_NAMES.index(f"template_is_{kind}")] = 1.0
    pool = Pool(features, np.array([True, False, False]), np.zeros(3, dtype=bool))
    problem = Problem("mm", 1, 512, 512, 512, "float16", "float16", "float16")
    # candidate 1: mean ln time ln(1.06), spread 0.28; candidate 2: ln(1.2), no spread
    members = np.log([[3.0, 0.8, 1.2], [3.0, 1.4, 1.2]])
    measured = np.array([3.0, 2.0, 1.0])
    monkeypatch.setattr(
        selection_rules, "replays", lambda model, data, with_tf32: iter([(problem, pool, members, measured, False)])
    )
    contract = Confidence(template_kinds=("aten_mm", "triton_mm"))
    monkeypatch.setattr(selection_rules, "model_contract", lambda model: contract)
    out = tmp_path / "penalty.json"
    selection_rules.spread_penalty(argparse.Namespace(model="m", data=["d"], penalties=[0.0, 1.0], out=str(out)))
    rows = json.loads(out.read_text())["rows"]
    assert [(r["penalty"], r["problems"], r["first_pick"]["worst"]) for r in rows] == [(0.0, 1, 2.0), (1.0, 1, 1.0)]
    assert all(r["outcome"]["worst"] <= r["first_pick"]["worst"] for r in rows)
    assert rows[0]["first_pick"]["over_1.10"] == 1 and rows[1]["first_pick"]["over_1.10"] == 0


def test_auc_counts_ties_half_and_needs_both_classes():
    from benchmarks.studies.slow_picks import _auc

    assert _auc(np.array([3.0, 1.0, 2.0]), np.array([True, False, False])) == 1.0
    assert _auc(np.array([1.0, 3.0, 2.0]), np.array([True, False, False])) == 0.0
    assert _auc(np.array([2.0, 2.0, 1.0]), np.array([True, False, False])) == 0.75
    assert _auc(np.array([1.0, 2.0]), np.array([True, True])) is None
    assert _auc(np.array([1.0, 2.0]), np.array([False, False])) is None


def test_misaligned_groups_replay_partitions_the_misaligned_problems_by_each_grouping(tmp_path):
    """benchmarks/studies/slow_picks.py misaligned-groups on the shipped sample (two of its twelve
    problems are misaligned): each grouping's groups hold every misaligned problem once, the aligned
    row the other ten, and each group's first picks are ratios to the best measured time."""
    out = tmp_path / "groups.json"
    sample = ROOT / "data" / "sample" / "h100_sample.json.gz"
    selection_replay("misaligned-groups", "--data", sample, "--out", out)
    rows = json.loads(out.read_text())["rows"]
    by_grouping: dict[str, int] = {}
    for r in rows:
        by_grouping[r["grouping"]] = by_grouping.get(r["grouping"], 0) + r["problems"]
        assert r["first"]["geomean"] >= 1.0 and 0 <= r["slow"] <= r["problems"]
    assert by_grouping.pop("aligned problems") == 10
    assert len(by_grouping) == 8 and set(by_grouping.values()) == {2}
    operands = {r["group"] for r in rows if r["grouping"] == "misaligned operands"}
    assert operands == {"a", "out"}
    margins = {r["group"] for r in rows if r["grouping"] == "predicted margin over ATen (ln)"}
    assert margins and margins <= {
        "ATen first",
        "no ATen choice",
        "[-inf, 0.1)",
        "[0.1, 0.2)",
        "[0.2, 0.4)",
        "[0.4, inf)",
    }


def test_misaligned_groups_of_data_without_aligned_problems_has_no_aligned_row(tmp_path):
    """A set of misaligned problems alone (as data/h100/odd) gets its groups and no aligned row."""
    from torch_diode.dataset_io import load_dataset, save_dataset

    sample = load_dataset(ROOT / "data" / "sample" / "h100_sample.json.gz")
    only = save_dataset(sample.subset(lambda _, problem: bool(problem.misaligned_operands)), tmp_path / "odd.json")
    out = tmp_path / "groups.json"
    selection_replay("misaligned-groups", "--data", only, "--out", out)
    rows = json.loads(out.read_text())["rows"]
    assert rows and "aligned problems" not in {r["grouping"] for r in rows}
    assert all(r["problems"] == 2 for r in rows if r["grouping"] == "op")


def test_config_coverage_groups_first_picks_by_how_often_training_timed_the_fastest_config(tmp_path):
    """benchmarks/studies/slow_picks.py config-coverage on the shipped sample: judged against itself as
    the training data, every fastest Triton config was timed at least by its own problem (never under
    2% of a dozen); against the sample's ATen choices alone, none was timed."""
    from torch_diode.dataset_io import load_dataset, save_dataset
    from torch_diode.types import Dataset

    sample_path = ROOT / "data" / "sample" / "h100_sample.json.gz"
    sample = load_dataset(sample_path)
    aten_only = Dataset()
    for hardware, problem, timings in sample.problems():
        aten_only.add(hardware, problem, [t for t in timings if not t.config.is_tiled])
    save_dataset(aten_only, tmp_path / "aten.json")
    from benchmarks.studies.slow_picks import config_coverage

    groups = {}
    for train in (sample_path, tmp_path / "aten.json"):
        out = tmp_path / "coverage.json"
        args = {"model": ["NVIDIA-H100-matmul"], "data": [str(sample_path)], "train_data": [str(train)]}
        config_coverage(argparse.Namespace(**args, slow=1.1, out=str(out)))
        rows = json.loads(out.read_text())["results"]
        assert sum(r["problems"] for r in rows) == sample.num_problems
        assert all(r["first_pick"]["geomean"] >= 1.0 and 0 <= r["slow_first_picks"] <= r["problems"] for r in rows)
        groups[train] = {r["group"]: r["problems"] for r in rows}
    rare = "fastest config timed in [0%, 2%) of the op's training problems"
    tiled = sample.num_problems - groups[sample_path].get("ATen fastest", 0)
    assert tiled > 0 and rare not in groups[sample_path]
    assert groups[tmp_path / "aten.json"] == {"ATen fastest": sample.num_problems - tiled, rare: tiled}


def test_deciding_configs_keeps_what_decides_the_first_pick_and_the_replay_decides_alike(tmp_path):
    """benchmarks/studies/slow_picks.py deciding-configs on the shipped sample: each problem keeps its
    ATen choices, its fastest recorded config and the handler's first pick with their recorded
    times, and fewer configs than it had; replayed on that subset the handler picks as before."""
    from torch_diode.dataset_io import load_dataset

    sample = ROOT / "data" / "sample" / "h100_sample.json.gz"
    out = tmp_path / "deciding.json"

    def replay(data):
        report = tmp_path / "r.json"
        selection_replay("realmodels", "--data", data, "--out", report)
        return {r["problem"]: r["first_pick"] for r in json.loads(report.read_text())["rows"]}

    selection_replay("deciding-configs", "--data", sample, "--top", 2, "--others", 1, "--out", out)
    full = {p: ts for _, p, ts in load_dataset(sample).problems()}
    kept = {p: ts for _, p, ts in load_dataset(out).problems()}
    assert kept.keys() == full.keys()
    for problem, timings in kept.items():
        ok = [t for t in full[problem] if not t.failed]
        assert len(timings) < len(ok) and set(timings) <= set(ok)
        assert {t.config for t in ok if not t.config.is_tiled} <= {t.config for t in timings}
        assert min(ok, key=lambda t: t.time_us) in timings
    assert replay(out) == pytest.approx(replay(sample))


def test_retimed_dataset_holds_every_pass_and_fails_what_no_pass_timed(tmp_path, monkeypatch):
    """benchmarks/collector_fidelity.py --retimed-out: a config's time is the fastest of the passes,
    each pass a sample; a config that no pass timed is a failure; the passes' spread counts the
    configs over 10%."""
    # the module sets these on import: restored after the test
    for name, value in (("DIODE_FIDELITY_TRITON_CACHE", tmp_path), ("TRITON_CACHE_DIR", tmp_path)):
        monkeypatch.setenv(name, str(value))
    monkeypatch.setenv("TORCH_DIODE_NO_AUTOREGISTER", "1")
    from benchmarks.collector_fidelity import pass_to_pass, retimed_dataset
    from torch_diode.dataset_io import load_dataset

    reference = load_dataset(ROOT / "data" / "sample" / "h100_sample.json.gz")
    _, problem, timings = next(reference.problems())
    fast_ms = {(problem, t.config): [0.012, 0.010, None] for t in timings[1:]}
    fast_ms[problem, timings[2].config] = [0.010, 0.030]
    out = {p: ts for _, p, ts in retimed_dataset(reference, fast_ms).problems()}[problem]
    assert out[0].failed and [t.config for t in out] == [t.config for t in timings]
    assert out[1].time_us == pytest.approx(10.0) and sorted(out[1].samples_us) == pytest.approx([10.0, 12.0])
    spread = pass_to_pass(fast_ms)
    assert spread["configs"] == 1 and spread["max"] == pytest.approx(2.0) and spread["over_10_percent"] == 1


def test_margin_groups_bound_the_predicted_gain_of_the_first_pick_over_aten():
    from benchmarks.studies.slow_picks import _margin_group

    members = np.log([[10.0, 10.0 * np.exp(0.25), 11.0], [10.0, 10.0 * np.exp(0.25), 11.0]])
    assert _margin_group(members, 0, 1) == "[0.2, 0.4)"
    assert _margin_group(members, 2, 1) == "[0.1, 0.2)"  # ln(12.84 / 11) = 0.155
    assert _margin_group(np.log([[1.0, 1.05]]), 0, 1) == "[-inf, 0.1)"
    assert _margin_group(np.log([[1.0, 2.0]]), 0, 1) == "[0.4, inf)"
    assert _margin_group(members, 1, 1) == "ATen first" and _margin_group(members, 0, None) == "no ATen choice"


def test_learned_risk_replay_judges_a_classifier_against_the_shipped_rules(tmp_path):
    """benchmarks/studies/slow_picks.py learned-risk on the shipped sample: trusting every first pick
    benchmarks nothing; a threshold of 0 benchmarks every problem, whose outcome is then never worse;
    the shipped rules' row is what the realmodels replay of the handler says."""
    sample = str(ROOT / "data" / "sample" / "h100_sample.json.gz")
    out = tmp_path / "risk.json"
    selection_replay(
        "learned-risk", "--fit-data", sample, "--judge-data", sample, "--thresholds", "0", "0.5", "--out", str(out)
    )
    report = json.loads(out.read_text())
    rows = {(r["role"], r["variant"]): r for r in report["rows"]}
    assert len(rows) == 2 * 4 and len(report["weights_per_unit"]) == 23
    assert report["sets"]["judge"]["problems"] == 12
    for role in ("fit", "judge"):
        trusting, everything = rows[role, "none"], rows[role, "learned > 0"]
        assert trusting["unsure_fraction"] == 0.0 and everything["unsure_fraction"] == 1.0
        assert 1.0 <= everything["geomean"] <= trusting["geomean"] and everything["worst"] <= trusting["worst"]
    # the shipped rules' row is the handler's outcome, as the realmodels replay of the same data has it
    named = named_shapeset(sample, tmp_path / "named.json")
    selection_replay("realmodels", "--data", sample, "--shapeset", named, "--out", tmp_path / "real.json")
    real = json.loads((tmp_path / "real.json").read_text())
    shipped = rows["judge", "shipped rules"]
    assert shipped["geomean"] == pytest.approx(real["outcome_geomean"]) and shipped["worst"] == pytest.approx(
        real["outcome_worst"]
    )
    assert shipped["unsure_fraction"] == pytest.approx(real["unsure_fraction"])


def test_sample_rotation_counts_kernels_and_untimed_configs_per_number_of_draws():
    """benchmarks/studies/sample_rotation.py: more draws never compile fewer kernels nor leave more of the
    EXHAUSTIVE list untimed; with a draw per problem, a part of odd-sized problems times more of it
    and compiles no fewer kernels than with one draw."""
    from benchmarks.studies.sample_rotation import part_rows
    from torch_diode.types import Problem

    problems = [Problem("bmm", 4, 101 + 6 * i, 64, 203 + 10 * i, "float16", "float16", "float16") for i in range(12)]
    rows = {r["rotations"]: r for r in part_rows("odd", problems, 24, 0, (1, 4, 0))}
    assert rows[1]["list_configs"] == rows[0]["list_configs"] > 0
    assert rows[1]["kernel_variants"] <= rows[4]["kernel_variants"] <= rows[0]["kernel_variants"]
    assert (
        rows[1]["list_configs_never_timed"] > rows[4]["list_configs_never_timed"] > rows[0]["list_configs_never_timed"]
    )
    assert 0 <= rows[0]["rare_pair_share"] < rows[1]["rare_pair_share"] <= 1


def test_an_adaptation_curve_starts_from_no_model_that_saw_the_new_gpu():
    """The H200's shipped model trained on H100 problems as prior data: a curve from it to the
    H100 is refused, naming --source-model; a model of one GPU's data alone is taken as it is."""
    from benchmarks import adapt_curve

    alone = str(ROOT / "tests" / "data" / "format1_contract1.diode")  # an H100 model, no prior data
    assert adapt_curve.source_model("h100", "h200", alone) == alone
    with pytest.raises(SystemExit, match=r"--source-model: NVIDIA-H200-matmul trained on \d+ problems measured on"):
        adapt_curve.source_model("h200", "h100")
    assert adapt_curve.source_models(["h200=x.diode"]) == {"h200": "x.diode"}
    with pytest.raises(SystemExit, match="--source-model: expected GPU=FILE"):
        adapt_curve.source_models(["a100=x.diode"])


def test_an_adaptation_curve_refuses_an_adapted_source(tmp_path):
    """A model adapted from another (--init-model) may have seen the new GPU through it: refused."""
    from benchmarks import adapt_curve
    from torch_diode.model_file import read_model, write_model

    alone = read_model(ROOT / "tests" / "data" / "format1_contract1.diode")
    metadata = {
        **alone.metadata,
        "training": {**alone.metadata.get("training", {}), "init_model": "NVIDIA-H200-matmul"},
    }
    write_model(tmp_path / "adapted.diode", dataclasses.replace(alone, metadata=metadata))
    with pytest.raises(SystemExit, match="was adapted from NVIDIA-H200-matmul"):
        adapt_curve.source_model("h100", "h200", str(tmp_path / "adapted.diode"))


def test_graph_timing_rows_compare_each_methods_pick_under_the_graph():
    """benchmarks.studies.graph_timing: a problem where the collector's method finds cuBLAS
    fastest and the graph a Triton config counts as a different pick, with the collector's pick's
    cost under the graph and cuBLAS over the best Triton config each way; a choice that failed
    either way is left out."""
    from types import SimpleNamespace

    from benchmarks.studies.graph_timing import compare, summarise

    def timing(name: str, tiled: bool, recorded_us: float):
        return SimpleNamespace(config=SimpleNamespace(short=lambda: name, is_tiled=tiled), time_us=recorded_us)

    problem = SimpleNamespace(short=lambda: "mm 308x320x768 float16 NT")
    timings = [timing("aten::mm", False, 6.6), timing("triton::mm a", True, 6.6), timing("triton::mm b", True, 7.0)]
    row = compare(problem, timings, [(6.2, 4.14), (6.4, 4.04), (None, 3.0)])
    assert (row["collector_pick"], row["graph_pick"]) == ("aten::mm", "triton::mm a")
    assert row["collector_pick_graph_slowdown"] == pytest.approx(4.14 / 4.04)
    assert row["aten_over_triton_collector"] == pytest.approx(6.2 / 6.4)
    assert row["aten_over_triton_graph"] == pytest.approx(4.14 / 4.04)
    assert [c["choice"] for c in row["choices"]] == ["aten::mm", "triton::mm a"]
    summary = summarise([row])
    assert summary["different_pick"] == 1 and summary["aten_faster_collector_not_graph"] == 1
    assert compare(problem, timings[:1], [(6.2, 4.14)]) is None  # no Triton config: nothing to compare


def test_kernel_gap_summary_reads_each_constant_variant_against_the_collectors_kernel():
    """benchmarks.studies.kernel_gap: the collector's time over each constant variant's, over the
    configs timed both ways (a report without a variant's column gives no figure for it)."""
    from benchmarks.studies.kernel_gap import CONSTANTS, summarise

    rows = [
        {"collector_us": 6.6, "k_constexpr_us": 6.0, "all_constexpr_us": 6.3},
        {"collector_us": 8.0, "k_constexpr_us": None, "all_constexpr_us": 8.0},
    ]
    summary = summarise([{"rows": rows}])
    assert set(summary) == {f"collector_over_{v}" for v in CONSTANTS}
    assert summary["collector_over_k_constexpr"]["configs"] == 1
    assert summary["collector_over_k_constexpr"]["median"] == pytest.approx(1.1)
    assert summary["collector_over_all_constexpr"]["median"] == pytest.approx((6.6 / 6.3 + 1.0) / 2)
    assert summary["collector_over_sizes_constexpr"] == {"configs": 0, "median": None, "p10": None, "p90": None}

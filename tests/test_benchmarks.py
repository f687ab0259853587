"""The end-to-end benchmark's report handling, on the shipped H100 report (no GPU needed)."""

import argparse
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "benchmarks" / "results" / "e2e_h100.json"


@pytest.fixture
def combine(run_main):
    """``python -m benchmarks.e2e --combine REPORTS --out OUT`` run in this process (conftest's
    run_main): a callable ``combine(*reports, out=OUT)`` returning its exit code, stdout and stderr."""
    from benchmarks import e2e

    def run(*reports, out) -> subprocess.CompletedProcess:
        argv = ["--combine", *map(str, reports), "--out", str(out)]
        return subprocess.CompletedProcess(argv, *run_main(e2e.main, *argv))

    return run


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


def test_combine_merges_rows_by_label(tmp_path, combine):
    shipped = json.loads(REPORT.read_text())
    done = combine(REPORT, REPORT, out=tmp_path / "twice.json")
    assert done.returncode == 0, done.stderr
    twice = json.loads((tmp_path / "twice.json").read_text())
    assert len(twice["rows"]) == len(shipped["rows"])  # the same rows once, not twice
    apart = twice["summary"].pop("gemm_rows_default_and_diode_top1_from_different_runs")
    assert apart == 0  # every row's timings from the later run
    assert twice["summary"] == pytest.approx(shipped["summary"], nan_ok=True)
    assert twice["summary"]["rows_compared"] == sum(
        1 for r in shipped["rows"] if {"diode_top1", "max_autotune"} <= set(r["methods"])
    )


def test_combine_keeps_how_each_run_decided_pad_mm(tmp_path, combine):
    """Runs that decided Inductor's pad_mm differently keep their own description; the report
    says they differ."""
    shipped = json.loads(REPORT.read_text())
    other = {k: v for k, v in shipped.items() if k != "runs"} | {"pad_mm": "another way", "command": "x"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    done = combine(REPORT, tmp_path / "other.json", out=tmp_path / "both.json")
    assert done.returncode == 0, done.stderr
    both = json.loads((tmp_path / "both.json").read_text())
    assert both["pad_mm"].startswith("differs") and both["runs"][-1]["pad_mm"] == "another way"
    assert all("pad_mm" in run for run in both["runs"])


def test_combine_refuses_reports_of_other_devices(tmp_path, combine):
    other = json.loads(REPORT.read_text()) | {"device": "NVIDIA H200"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    done = combine(REPORT, tmp_path / "other.json", out=tmp_path / "mixed.json")
    assert done.returncode != 0 and "differ in 'device'" in done.stderr


def test_combine_says_which_run_timed_default_mode_and_diode(tmp_path, combine):
    """Each method's timings keep the run that measured them; GEMM rows whose default mode and
    diode_top1 come from different runs are counted and named, through a second combine too."""
    shipped = json.loads(REPORT.read_text())
    one_run = {k: v for k, v in shipped.items() if k != "runs"} | {"command": "one run"}

    def only(*methods):
        rows = [{**r, "methods": {m: t for m, t in r["methods"].items() if m in methods}} for r in shipped["rows"]]
        return one_run | {"rows": rows}

    for name, methods in (("default", ("default",)), ("diode", ("diode_top1",)), ("both", ("default", "diode_top1"))):
        (tmp_path / f"{name}.json").write_text(json.dumps(only(*methods)))
    gemms = sum(
        1
        for r in shipped["rows"]
        if r["kind"] == "gemm" and all("runtime_us" in r["methods"].get(m, {}) for m in ("default", "diode_top1"))
    )
    assert gemms > 0

    done = combine(tmp_path / "default.json", tmp_path / "diode.json", out=tmp_path / "apart.json")
    assert done.returncode == 0, done.stderr
    apart = json.loads((tmp_path / "apart.json").read_text())
    assert apart["summary"]["gemm_rows_default_and_diode_top1_from_different_runs"] == gemms
    assert f"{gemms} GEMM rows compare diode_top1 with default mode timed in another run" in done.stdout
    row = next(r for r in apart["rows"] if "diode_top1" in r["methods"] and "default" in r["methods"])
    assert (row["methods"]["default"]["run"], row["methods"]["diode_top1"]["run"]) == (0, 1)

    # a combined report combined again keeps its tags, offset by the runs before it
    done = combine(tmp_path / "both.json", tmp_path / "apart.json", out=tmp_path / "again.json")
    assert done.returncode == 0, done.stderr
    again = json.loads((tmp_path / "again.json").read_text())
    row = next(r for r in again["rows"] if r["label"] == row["label"])
    assert (row["methods"]["default"]["run"], row["methods"]["diode_top1"]["run"]) == (1, 2)
    assert len(again["runs"]) == 3

    # a report that joined two runs without saying which timed what: none of its rows is vouched for
    (tmp_path / "untold.json").write_text(json.dumps(only("default", "diode_top1") | {"runs": [{}, {}]}))
    done = combine(tmp_path / "untold.json", out=tmp_path / "untold_again.json")
    assert done.returncode == 0, done.stderr
    untold = json.loads((tmp_path / "untold_again.json").read_text())
    assert untold["summary"]["gemm_rows_default_and_diode_top1_from_different_runs"] == gemms

    # both timed in one run, the later one: nothing apart, nothing said
    done = combine(tmp_path / "apart.json", tmp_path / "both.json", out=tmp_path / "together.json")
    assert done.returncode == 0, done.stderr
    together = json.loads((tmp_path / "together.json").read_text())
    assert together["summary"]["gemm_rows_default_and_diode_top1_from_different_runs"] == 0
    assert "timed in another run" not in done.stdout


def test_combine_refuses_to_join_runtimes_over_input_copies_with_one_copy_runtimes(tmp_path, combine):
    shipped = json.loads(REPORT.read_text())  # timed on one copy
    copied = json.loads(REPORT.read_text())
    for row in copied["rows"]:
        for record in row["methods"].values():
            if "runtime_cudagraph_us" in record:
                record["input_copies"] = 3
    (tmp_path / "copied.json").write_text(json.dumps(copied))
    done = combine(REPORT, tmp_path / "copied.json", out=tmp_path / "mixed.json")
    assert done.returncode != 0 and "input copies" in done.stderr
    done = combine(tmp_path / "copied.json", tmp_path / "copied.json", out=tmp_path / "same.json")
    assert done.returncode == 0, done.stderr
    same = json.loads((tmp_path / "same.json").read_text())
    assert len(same["rows"]) == len(shipped["rows"]) and "over input copies" in same["runtime"]


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


def test_a_report_of_a_stopped_run_says_so_and_enters_no_table(tmp_path, combine):
    """The report written after each worker is marked incomplete until the last; combined with a
    complete one it stays incomplete, and the results table refuses it."""
    from benchmarks import results_table
    from benchmarks.e2e_report import write_report

    shipped = json.loads(REPORT.read_text())
    head = {k: v for k, v in shipped.items() if k not in ("rows", "summary")}
    diode_only = [r | {"methods": {"diode_top1": r["methods"]["diode_top1"]}} for r in shipped["rows"]]
    write_report(dict(head), diode_only, tmp_path / "stopped.json", complete=False)
    stopped = json.loads((tmp_path / "stopped.json").read_text())
    assert stopped["complete"] is False and len(stopped["rows"]) == len(shipped["rows"])
    assert stopped["summary"]["rows_compared"] == 0  # no stock method measured yet
    done = combine(REPORT, tmp_path / "stopped.json", out=tmp_path / "both.json")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "both.json").read_text())["complete"] is False
    with pytest.raises(SystemExit, match="incomplete run"):
        list(results_table.e2e(stopped))
    done = combine(REPORT, REPORT, out=tmp_path / "whole.json")
    assert done.returncode == 0 and json.loads((tmp_path / "whole.json").read_text())["complete"] is True


def test_readme_results_table_is_what_the_results_files_give():
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.results_table", "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr


def test_results_table_check_fails_on_a_stale_table_and_the_generator_repairs_it(tmp_path, monkeypatch):
    from benchmarks import results_table

    copies = []
    for target in results_table.TARGETS:
        copy = tmp_path / target.name
        copy.write_text(target.read_text().replace(" | `e2e_h100.json` |", " | `e2e_h100.json` (edited) |", 1))
        copies.append(copy)
    monkeypatch.setattr(results_table, "TARGETS", tuple(copies))
    assert results_table.main(["--check"]) == 1
    assert results_table.main([]) == 0
    assert results_table.main(["--check"]) == 0
    assert all(
        copy.read_text() == target.read_text()
        for copy, target in zip(copies, (ROOT / "README.md", ROOT / "docs" / "results.md"))
    )


def test_results_table_rows_name_their_source_device_and_date():
    from benchmarks import results_table

    rows = results_table.rows()
    assert {r.source for r in rows} >= {
        "e2e_h100.json",
        "heldout_selection_cpu.json",
        "validate_model_h100.json",
        "engine_latency_cpu.json",
        "compile_breakdown_h100.json",
    }
    for r in rows:
        assert (RESULTS := ROOT / "benchmarks" / "results" / r.source).exists(), RESULTS
        assert r.device and re.fullmatch(r"\d{4}-\d{2}-\d{2}", r.date), r


def test_dynamic_shapes_row_names_what_the_reports_rows_measured():
    """The dynamic-shapes row says what its diode figures are over: the GEMMs and the decoder block
    with a diode row that is no error (default mode's rows alone do not count)."""
    from benchmarks.results_table import e2e_dynamic

    whole = json.loads((ROOT / "benchmarks" / "results" / "e2e_dynamic_h100.json").read_text())
    rows = [r for r in whole["rows"] if r["method"] in ("default", "diode")]
    block = [{**r, "method": "diode"} for r in rows if r["label"].startswith("decoder block")]
    gemms = [r for r in rows if not r["label"].startswith("decoder block")]
    assert block and len({r["label"] for r in gemms if r["method"] == "diode"}) == 5

    def said(rows):
        ((result, _),) = e2e_dynamic({**whole, "rows": rows})
        return result.split(", each compiled")[0]

    assert said(gemms + block) == "dynamic shapes, 5 held-out GEMMs and a decoder block"
    assert said(gemms) == "dynamic shapes, 5 held-out GEMMs"
    assert said(gemms + [{**r, "error": "timed out"} for r in block]) == "dynamic shapes, 5 held-out GEMMs"
    assert said([{**r, "method": "default"} for r in gemms] + block) == "dynamic shapes, a decoder block"
    one = [r for r in gemms if r["label"] == gemms[0]["label"]]
    assert said(one) == "dynamic shapes, 1 held-out GEMM"


def test_readme_is_short_and_states_no_figure_outside_the_generated_table():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    begin, end = text.index("<!-- results:begin"), text.index("<!-- results:end -->")
    outside = text[:begin] + text[end:]
    figures = [m.group(0) for m in re.finditer(r"\b\d[\d,.]*\s?(x|us|ms|s|%)(?!\w)", outside) if m.group(0) != "1x"]
    assert figures == [], figures


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


def test_e2e_draws_one_gemm_of_each_model_of_a_shapeset():
    from benchmarks.common import SHAPES, load_shapes
    from torch_diode.collection.shapes import load_shapeset

    models = {e.model for e in load_shapeset("realmodels_heldout")}
    drawn = load_shapes("realmodels_heldout", 1, 0)
    assert len(drawn) == len(models) and {label for label, _, _ in drawn} <= {
        f"{e.model} {e.layer}" for e in load_shapeset("realmodels_heldout")
    }
    assert {next(m for m in models if label.startswith(m + " ")) for label, _, _ in drawn} == models
    assert drawn == load_shapes("realmodels_heldout", 1, 0)  # the draw is the seed's
    assert [label for label, _, _ in drawn] != [label for label, _, _ in load_shapes("realmodels_heldout", 1, 1)]
    assert len(load_shapes("realmodels_heldout", None, 0)) == len(load_shapeset("realmodels_heldout"))
    assert load_shapes(SHAPES, 1, 0) == load_shapes(SHAPES)  # a shapes file is read whole


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
    monkeypatch.setattr(selection_rules, "_contract", lambda model: contract)
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


def test_every_benchmark_imports():
    """Every script under benchmarks/, benchmarks/studies/ included, imports (their GPU work starts
    in main): a renamed function of the package breaks a benchmark before it reaches the device.
    Those that import triton at the top are imported where triton is installed."""
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "benchmarks").rglob("*.py")
        if p.stem != "__init__"
    )
    script = (
        "import importlib, sys\n"
        "for m in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except ModuleNotFoundError as e:\n"
        "        if e.name != 'triton':\n"
        "            raise\n"
        "        print('needs triton:', m)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *modules], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(modules) >= 15 and done.stdout.count("needs triton") <= 3, done.stdout


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


def test_compile_breakdown_counts_triton_compiles_by_thread_and_takes_the_median_of_repeats(monkeypatch):
    """compile_breakdown's record of the Triton compiles a compile ran in its own process (the
    main thread's apart from other threads'), with a stand-in triton module (this machine has
    none; the GPU run wraps the real one), and its median over --repeats runs."""
    import threading
    import types

    monkeypatch.setenv("TORCH_DIODE_NO_AUTOREGISTER", "1")  # the module sets it on import: restored after the test
    from benchmarks import compile_breakdown

    fake = types.ModuleType("triton")
    fake.compile = lambda *a, **k: "binary"
    monkeypatch.setitem(sys.modules, "triton", fake)
    original = fake.compile
    with compile_breakdown.TritonCompiles() as compiles:
        assert fake.compile("src") == "binary"
        fake.compile("src")
        worker = threading.Thread(target=fake.compile, args=("src",))
        worker.start()
        worker.join()
    assert fake.compile is original  # unwrapped again
    record = compiles.record()
    assert (record["main_thread_calls"], record["other_threads_calls"]) == (2, 1)
    assert record["main_thread_s"] >= 0 and record["other_threads_s"] >= 0

    runs = [
        [{"label": "a", "compile_s": 3.0, "picks": [1]}, {"label": "b", "compile_s": 1.0}],
        [{"label": "a", "compile_s": 1.0, "picks": [2]}, {"label": "b", "compile_s": 2.0}],
        [{"label": "a", "compile_s": 2.0, "picks": [3]}],  # stopped before b
    ]
    rows = compile_breakdown.median_rows(runs)
    assert [r["compile_s"] for r in rows] == [2.0, 1.5]
    assert rows[0]["compile_s_runs"] == [3.0, 1.0, 2.0] and rows[0]["picks"] == [1]
    assert compile_breakdown.median_rows(runs[:1]) == runs[0]


def test_margin_groups_bound_the_predicted_gain_of_the_first_pick_over_aten():
    from benchmarks.studies.slow_picks import _margin_group

    members = np.log([[10.0, 10.0 * np.exp(0.25), 11.0], [10.0, 10.0 * np.exp(0.25), 11.0]])
    assert _margin_group(members, 0, 1) == "[0.2, 0.4)"
    assert _margin_group(members, 2, 1) == "[0.1, 0.2)"  # ln(12.84 / 11) = 0.155
    assert _margin_group(np.log([[1.0, 1.05]]), 0, 1) == "[-inf, 0.1)"
    assert _margin_group(np.log([[1.0, 2.0]]), 0, 1) == "[0.4, inf)"
    assert _margin_group(members, 1, 1) == "ATen first" and _margin_group(members, 0, None) == "no ATen choice"


def test_parts_cover_the_draw_once_in_order():
    """--part I/N: N slices that together are the drawn GEMMs, each once, sizes within one."""
    from benchmarks.e2e_report import part_arg, part_of

    items = list(range(42))
    for n in (1, 2, 5, 42, 50):
        slices = [part_of(items, (i, n)) for i in range(1, n + 1)]
        assert [x for s in slices for x in s] == items
        assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert part_arg("2/3") == (2, 3)
    for bad in ("0/2", "3/2", "2", "a/b"):
        with pytest.raises(argparse.ArgumentTypeError, match=bad):
            part_arg(bad)


def test_compile_repeats_alternate_new_workers_and_report_the_median_compile_time(monkeypatch):
    """--compile-repeats N (models only): default mode and diode_top1 each in a worker of its own in
    every round, N-1 more rounds in alternating order; each model's compile_s becomes the median of
    its rounds' compile times, its runtimes those of the first round that compiled it."""
    from benchmarks.e2e import main, worker_plan
    from benchmarks.e2e_report import merge_compile_repeats

    args = argparse.Namespace(methods=["default", "diode_top1", "max_autotune"], only="models", compile_repeats=3)
    plan = worker_plan(args, [90.0, 400.0, 240.0, 330.0])
    assert [(m, limit) for m, limit, _ in plan] == [
        (("pad_mm",), 240.0),
        (("diode_top1",), 90.0),
        (("default",), 400.0),
        (("max_autotune",), 400.0),
        (("default",), 400.0),
        (("diode_top1",), 90.0),
        (("diode_top1",), 90.0),
        (("default",), 400.0),
    ]
    assert {only for _, _, only in plan} == {"models"}
    once = worker_plan(argparse.Namespace(**{**vars(args), "compile_repeats": 1}), [90.0, 400.0, 240.0])
    assert [m for m, _, _ in once] == [("pad_mm",), ("diode_top1",), ("default", "max_autotune")]

    def rec(compile_s, runtime_us):
        return {"compile_s": compile_s, "runtime_us": runtime_us}

    rows = [
        {"kind": "gemm", "label": "g", "methods": {"diode_top1": rec(0.2, 5.0)}},
        {"kind": "model", "label": "m", "methods": {"diode_top1": rec(3.0, 100.0)}},
        {"kind": "model", "label": "n", "methods": {"diode_top1": {"error": "stopped at its time limit"}}},
        {"kind": "model", "label": "m", "methods": {"default": rec(2.0, 110.0)}},
        {"kind": "model", "label": "m", "methods": {"max_autotune": rec(90.0, 99.0)}},
        {"kind": "model", "label": "m", "methods": {"default": rec(2.4, 120.0)}},
        {"kind": "model", "label": "m", "methods": {"diode_top1": rec(2.1, 130.0)}},
        {"kind": "model", "label": "n", "methods": {"diode_top1": rec(2.0, 50.0)}},
        {"kind": "model", "label": "m", "methods": {"diode_top1": {"error": "stopped"}}},
        {"kind": "model", "label": "n", "methods": {"diode_top1": rec(4.0, 60.0)}},
        {"kind": "model", "label": "m", "methods": {"default": rec(1.9, 140.0)}},
    ]
    merged = merge_compile_repeats(rows)
    assert [r["label"] for r in merged] == ["g", "m", "n", "m", "m"] and merged[0] == rows[0]
    diode, n = merged[1]["methods"]["diode_top1"], merged[2]["methods"]["diode_top1"]
    default = merged[3]["methods"]["default"]
    assert (diode["compile_s"], diode["compile_s_repeats"], diode["runtime_us"]) == (2.55, [3.0, 2.1], 100.0)
    assert (n["compile_s"], n["compile_s_repeats"], n["runtime_us"]) == (3.0, [2.0, 4.0], 50.0)  # round 1 failed
    assert (default["compile_s"], default["compile_s_repeats"], default["runtime_us"]) == (2.0, [2.0, 2.4, 1.9], 110.0)
    assert merged[4]["methods"]["max_autotune"] == rec(90.0, 99.0)
    assert rows[1]["methods"]["diode_top1"] == rec(3.0, 100.0)  # the input rows are left as they were

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for bad in (["--only", "gemms", "--compile-repeats", "3"], ["--compile-repeats", "3"], ["--compile-repeats", "0"]):
        monkeypatch.setattr(sys, "argv", ["e2e", "--out", "x.json", *bad])
        with pytest.raises(SystemExit, match="--compile-repeats"):
            main()


def test_input_copies_fill_twice_the_l2_cache_with_copies_laid_out_as_the_inputs():
    """e2e's runtime replays calls over copies of the inputs so that no call finds its operands in
    L2: each copy in a storage of its own, with the original's sizes, strides, offset and values."""
    import torch

    from benchmarks.common import input_copies

    base = torch.randn(3 * 64 * 40 + 5)
    a = base[5:].as_strided((3, 64, 40), (2560, 1, 64), 5)  # transposed batches, at an offset
    bias, scale = torch.randn(40), 2
    inputs = (bias, a, scale)
    footprint = base.untyped_storage().nbytes() + bias.untyped_storage().nbytes()
    copies = input_copies(inputs, l2_bytes=10 * footprint)
    assert copies[0] is inputs and len(copies) == 21  # ceil(2 * 10) + 1
    pointers = {x.untyped_storage().data_ptr() for c in copies for x in c if isinstance(x, torch.Tensor)}
    assert len(pointers) == 2 * len(copies)
    for c in copies[1:]:
        assert c[2] == scale
        for x, y in zip(c[:2], inputs[:2]):
            assert (x.size(), x.stride(), x.storage_offset()) == (y.size(), y.stride(), y.storage_offset())
            assert torch.equal(x, y)
    assert len(input_copies(inputs, l2_bytes=footprint // 2)) == 1  # over twice L2 already: not copied
    assert len(input_copies(inputs, l2_bytes=10**9, max_copies=7)) == 7
    assert input_copies((scale,), l2_bytes=1 << 20) == [(scale,)]


def test_combine_joins_the_parts_of_one_draw(tmp_path, combine):
    """Reports of --part 1/2 and 2/2 combine into one of the whole draw; each run keeps its part."""
    shipped = json.loads(REPORT.read_text())
    shapes = {"shapes": "realmodels_heldout", "per_model": 1, "seed": 0}
    rows = shipped["rows"]
    for i, half in ((1, rows[: len(rows) // 2]), (2, rows[len(rows) // 2 :])):
        part = {k: v for k, v in shipped.items() if k != "runs"} | {"command": f"part {i}", "rows": half}
        (tmp_path / f"p{i}.json").write_text(json.dumps(part | {"shapes": shapes | {"part": f"{i}/2"}}))
    done = combine(tmp_path / "p1.json", tmp_path / "p2.json", out=tmp_path / "both.json")
    assert done.returncode == 0, done.stderr
    both = json.loads((tmp_path / "both.json").read_text())
    assert both["shapes"] == shapes and [r["shapes"]["part"] for r in both["runs"]] == ["1/2", "2/2"]
    assert len(both["rows"]) == len(rows)
    # slices that do not cover the draw do not name it
    (tmp_path / "third.json").write_text((tmp_path / "p1.json").read_text().replace('"1/2"', '"1/3"'))
    done = combine(tmp_path / "p1.json", tmp_path / "third.json", out=tmp_path / "short.json")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "short.json").read_text())["shapes"].startswith("differs")


def test_draw_of_names_the_draw_only_where_its_slices_cover_it():
    from benchmarks.e2e_report import draw_of

    draw = {"shapes": "realmodels_heldout", "per_model": 1, "seed": 0}
    sliced = [draw | {"part": f"{i}/3"} for i in (1, 2, 3)]
    assert draw_of(sliced) == draw and draw_of([*sliced, draw]) == draw  # with a run of the models
    assert draw_of(sliced[:2]).startswith("differs") and draw_of([sliced[0], draw]).startswith("differs")
    assert draw_of([draw, draw | {"seed": 1}]).startswith("differs") and draw_of([draw, None]).startswith("differs")
    assert draw_of([None, None]) is None


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


def test_e2e_combine_refuses_to_write_over_a_report_it_reads(tmp_path, combine):
    report = tmp_path / "a.json"
    report.write_bytes(REPORT.read_bytes())
    done = combine(report, out=report)
    assert done.returncode == 2 and "--out" in done.stderr, done.stderr
    assert report.read_bytes() == REPORT.read_bytes()


def test_e2e_dynamic_reports_hold_the_summary_of_their_rows():
    """Every dynamic report's summary is what summarize computes from its rows (the figures the
    docs quote), and each max-autotune method's graphs are counted with diode's figures on them."""
    from benchmarks.e2e_dynamic import summarize

    reports = sorted((ROOT / "benchmarks" / "results").glob("e2e_dynamic*.json"))
    assert reports
    for path in reports:
        report = json.loads(path.read_text())
        computed = summarize(report["rows"])
        assert {k: computed[k] for k in report["summary"]} == pytest.approx(report["summary"], rel=1e-12), path.name
    multi = summarize(
        json.loads((ROOT / "benchmarks" / "results" / "e2e_dynamic_multi_kernel_h100.json").read_text())["rows"]
    )
    assert multi["max_autotune_hints_graphs"] == 3 < multi["rows_vs_default"]
    assert (
        multi["diode_on_max_autotune_hints_graphs_runtime_ratio_vs_default_worst"]
        <= multi["dynamic_runtime_ratio_vs_default_worst"]
    )


def test_e2e_dynamic_combine_refuses_to_write_over_a_report_it_reads(tmp_path):
    report = tmp_path / "a.json"
    report.write_text((ROOT / "benchmarks" / "results" / "e2e_dynamic_h100.json").read_text())
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.e2e_dynamic", "--combine", str(report), "--out", str(report)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2 and "--out" in result.stderr.strip().splitlines()[-1], result.stderr
    assert report.read_text() == (ROOT / "benchmarks" / "results" / "e2e_dynamic_h100.json").read_text()


def test_e2e_dynamic_combine_joins_runs_of_other_methods_and_refuses_what_does_not_join(tmp_path, capsys):
    """Two calls' reports (default mode and diode in one, max-autotune in the other) make the report
    one run would have written: the same rows and summary; a method measured twice, or other
    sizes, is refused."""
    from benchmarks.e2e_dynamic import combine

    whole = json.loads((ROOT / "benchmarks" / "results" / "e2e_dynamic_h100.json").read_text())
    paths = []
    for name, methods in (("a", ("default", "diode")), ("b", ("max_autotune",))):
        part = {**whole, "rows": [r for r in whole["rows"] if r["method"] in methods]}
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(part))
    joined = combine([str(p) for p in paths], str(tmp_path / "joined.json"))
    assert joined["rows"] == whole["rows"]
    assert {k: joined["summary"][k] for k in whole["summary"]} == pytest.approx(whole["summary"], rel=1e-12)
    assert len(joined["runs"]) == 2 and joined["sizes"] == whole["sizes"]
    with pytest.raises(SystemExit, match="again"):
        combine([str(paths[0]), str(paths[0])], str(tmp_path / "joined.json"))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(paths[1].read_text()), "sizes": [1, 2]}))
    with pytest.raises(SystemExit, match="'sizes'"):
        combine([str(paths[0]), str(other)], str(tmp_path / "joined.json"))


def test_e2e_dynamic_ratios_to_default_mode_use_the_workers_paired_timing():
    """A row with default mode's timing from its own worker (``default_runtime_us``) is compared
    with that, not with the default worker's (another process, minutes apart); its compile time
    with the default worker's; a row without one with the default worker's runtime."""
    from benchmarks.e2e_dynamic import summarize

    default = {"label": "g", "way": "dynamic", "method": "default", "compile_s": 2.0, "runtime_us": {"1": 10.0}}
    paired = {**default, "method": "diode", "compile_s": 3.0, "runtime_us": {"1": 10.2}}
    summary = summarize([default, {**paired, "default_runtime_us": {"1": 10.2}}])
    assert summary["dynamic_runtime_ratio_vs_default_worst"] == pytest.approx(1.0)
    assert summary["dynamic_compile_ratio_vs_default_geomean"] == pytest.approx(1.5)
    assert summarize([default, paired])["dynamic_runtime_ratio_vs_default_worst"] == pytest.approx(1.02)


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


def test_e2e_dynamic_takes_attention_scores_whose_tokens_are_dynamic(monkeypatch):
    """--attention adds the drawn models' q @ k^T bmms (batch x heads, tokens x tokens, head size);
    the item's graph, compiled with dynamic sizes, gives eager's scores at every token count."""
    import torch

    from benchmarks import e2e_dynamic

    args = argparse.Namespace(shapes="realmodels_heldout", per_model=1, seed=0, gemms=2, attention=2, decoder=False)
    chosen = e2e_dynamic.items(args)
    scores = [(label, p) for label, p in chosen if p.op == "bmm"]
    assert len(chosen) == 4 and len(scores) == 2
    assert all("q @ k^T" in label and p.M == p.N and p.transpose_b for label, p in scores)
    monkeypatch.setattr(e2e_dynamic, "DEVICE", "cpu")
    module = e2e_dynamic.AttentionScores(dataclasses.replace(scores[0][1], B=2, dtype_a="float32"))
    compiled = torch.compile(module, dynamic=True)
    for tokens in (7, 33):
        q, k = module.rows(tokens)
        assert q.shape == (2, tokens, scores[0][1].K)
        torch.testing.assert_close(compiled(q, k), q @ k.transpose(1, 2))


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

"""The end-to-end benchmark's report handling, on the shipped H100 report (no GPU needed)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "benchmarks" / "results" / "e2e_h100.json"


def combine(*reports, out):
    return subprocess.run([sys.executable, "-m", "benchmarks.e2e", "--combine", *map(str, reports), "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT)


def test_combine_merges_rows_by_label(tmp_path):
    shipped = json.loads(REPORT.read_text())
    done = combine(REPORT, REPORT, out=tmp_path / "twice.json")
    assert done.returncode == 0, done.stderr
    twice = json.loads((tmp_path / "twice.json").read_text())
    assert len(twice["rows"]) == len(shipped["rows"])  # the same rows once, not twice
    assert twice["summary"] == pytest.approx(shipped["summary"], nan_ok=True)
    assert twice["summary"]["rows_compared"] == sum(
        1 for r in shipped["rows"] if {"diode_top1", "max_autotune"} <= set(r["methods"]))


def test_combine_refuses_reports_of_other_devices(tmp_path):
    other = json.loads(REPORT.read_text()) | {"device": "NVIDIA H200"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    done = combine(REPORT, tmp_path / "other.json", out=tmp_path / "mixed.json")
    assert done.returncode != 0 and "differ in 'device'" in done.stderr


def test_heldout_selection_judges_the_handlers_order_on_measured_data(tmp_path):
    """benchmarks/selection_replay.py heldout on the shipped sample: the widened set holds the first
    pick, so its best is never slower; both are ratios to the best measured time."""
    out = tmp_path / "sel.json"
    run = subprocess.run([sys.executable, "-m", "benchmarks.selection_replay", "heldout", "--model", "NVIDIA-H100-matmul",
                          "--data", str(ROOT / "data" / "sample" / "h100_sample.json.gz"), "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    (row,) = json.loads(out.read_text())["rows"]
    assert row["problems"] == 12
    assert 1.0 <= row["widened"]["geomean"] <= row["first"]["geomean"] and row["widened"]["worst"] <= row["first"]["worst"]
    # unsure_top_k (5), plus the best ATen choice and the best DEFAULT template where those lack them
    assert 1.0 <= row["kept_mean"] <= 7.0


def test_extern_preference_replay_picks_aten_more_often_the_stronger_the_preference(tmp_path):
    """benchmarks/selection_replay.py extern-preference on the shipped sample: an overwhelming
    preference picks ATen on every problem, none at all picks it no more often than 1.0 does."""
    out = tmp_path / "pref.json"
    run = subprocess.run([sys.executable, "-m", "benchmarks.selection_replay", "extern-preference",
                          "--data", str(ROOT / "data" / "sample" / "h100_sample.json.gz"), "--preferences", "1.0", "1.1", "1e9",
                          "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    picks = [r["extern_picks"] for r in report["rows"]]
    assert picks == sorted(picks) and picks[-1] == report["problems"] == 12
    assert all(0 < r["top1_perf_geomean"] <= 1.0 for r in report["rows"])

"""The end-to-end benchmark's report handling, on the shipped H100 report (no GPU needed)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
E2E = ROOT / "benchmarks" / "e2e.py"
REPORT = ROOT / "benchmarks" / "results" / "e2e_h100.json"


def combine(*reports, out):
    return subprocess.run([sys.executable, str(E2E), "--combine", *map(str, reports), "--out", str(out)],
                          capture_output=True, text=True)


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

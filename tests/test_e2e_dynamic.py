"""The dynamic-shapes benchmark's reports (benchmarks/e2e_dynamic.py) and their results-table rows,
on the shipped reports (no GPU needed)."""

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_dynamic_shapes_row_names_what_the_reports_rows_measured():
    """The dynamic-shapes row says what its diode figures are over: the GEMMs and the decoder block
    with a diode row that is no error (default mode's rows alone do not count)."""
    from benchmarks.results_table import e2e_dynamic

    whole = json.loads((ROOT / "benchmarks" / "results" / "e2e_dynamic_h100.json").read_text())
    rows = [r for r in whole["rows"] if r["method"] in ("default", "diode")]
    block = [{**r, "method": "diode"} for r in rows if r["label"].startswith("decoder block")]
    gemms = [r for r in rows if not r["label"].startswith("decoder block")]
    n = len({r["label"] for r in gemms if r["method"] == "diode"})
    assert block and n > 1

    def said(rows):
        ((result, _),) = e2e_dynamic({**whole, "rows": rows})
        return result.split(", each compiled")[0]

    assert said(gemms + block) == f"dynamic shapes, {n} held-out GEMMs and a decoder block"
    assert said(gemms) == f"dynamic shapes, {n} held-out GEMMs"
    assert said(gemms + [{**r, "error": "timed out"} for r in block]) == f"dynamic shapes, {n} held-out GEMMs"
    assert said([{**r, "method": "default"} for r in gemms] + block) == "dynamic shapes, a decoder block"
    one = [r for r in gemms if r["label"] == gemms[0]["label"]]
    assert said(one) == "dynamic shapes, 1 held-out GEMM"


def test_dynamic_shapes_row_without_stock_max_autotune_gives_the_figures_against_default_mode():
    """A report of default mode and diode alone (the H200's) has no stock max-autotune figure: its
    row says so and gives the runtime against default mode and the compile ratio; the H100's, with
    max-autotune's rows joined, gives its worst size too."""
    from benchmarks.results_table import e2e_dynamic

    results = ROOT / "benchmarks" / "results"
    alone = json.loads((results / "e2e_dynamic_h200.json").read_text())
    assert alone["summary"]["dynamic_runtime_ratio_vs_max_autotune_worst"] is None
    ((name, value),) = e2e_dynamic(alone)
    s = alone["summary"]
    assert "(stock max-autotune not timed)" in name and "diode / stock max-autotune" not in name
    assert value == "; ".join(
        f"{s[k]:.3f}x"
        for k in (
            "dynamic_runtime_ratio_vs_default_geomean",
            "dynamic_runtime_ratio_vs_default_worst",
            "dynamic_compile_ratio_vs_default_geomean",
        )
    )
    ((name, value),) = e2e_dynamic(json.loads((results / "e2e_dynamic_h100.json").read_text()))
    assert "not timed" not in name and "diode / stock max-autotune's dynamic graph" in name
    assert len(value.split("; ")) == 4


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


def test_e2e_dynamic_ratios_use_the_workers_paired_timing():
    """A row with default mode's timing from its own worker (``default_runtime_us``) is compared
    with that, not with the default worker's (another process, minutes apart); its compile time
    with the default worker's; a row without one with the default worker's runtime. Diode against
    max-autotune: the quotient of their ratios to default mode, each over the default timing it has."""
    from benchmarks.e2e_dynamic import summarize

    default = {"label": "g", "way": "dynamic", "method": "default", "compile_s": 2.0, "runtime_us": {"1": 10.0}}
    paired = {**default, "method": "diode", "compile_s": 3.0, "runtime_us": {"1": 10.2}}
    summary = summarize([default, {**paired, "default_runtime_us": {"1": 10.2}}])
    assert summary["dynamic_runtime_ratio_vs_default_worst"] == pytest.approx(1.0)
    assert summary["dynamic_compile_ratio_vs_default_geomean"] == pytest.approx(1.5)
    assert summarize([default, paired])["dynamic_runtime_ratio_vs_default_worst"] == pytest.approx(1.02)
    # another machine's max-autotune worker, its clock 5% faster: the two workers' ratios to their
    # own default timings are divided, not their times
    tuned = {**default, "method": "max_autotune", "compile_s": 40.0, "runtime_us": {"1": 9.5}}
    rows = [default, {**paired, "default_runtime_us": {"1": 10.2}}, {**tuned, "default_runtime_us": {"1": 9.69}}]
    assert summarize(rows)["dynamic_runtime_ratio_vs_max_autotune_worst"] == pytest.approx(9.69 / 9.5)
    unpaired = summarize([default, paired, tuned])
    assert unpaired["dynamic_runtime_ratio_vs_max_autotune_worst"] == pytest.approx(10.2 / 9.5)
    # diode paired, max-autotune not: each over the default timing it has, as e2e.py's reports compare
    mixed = summarize([default, {**paired, "default_runtime_us": {"1": 10.2}}, tuned])
    assert mixed["dynamic_runtime_ratio_vs_max_autotune_worst"] == pytest.approx((10.2 / 10.2) / (9.5 / 10.0))
    # the faster of default mode and max-autotune at each size, over default mode: the tuned size
    # at its paired ratio, a size where max-autotune runs slower at 1
    tuned["runtime_us"] = {"1": 9.5, "8": 30.0}
    both = summarize([{**default, "runtime_us": {"1": 10.0, "8": 20.0}}, {**tuned, "default_runtime_us": {"1": 9.69}}])
    assert both["faster_of_default_and_max_autotune_runtime_ratio_vs_default_geomean"] == pytest.approx(
        (9.5 / 9.69) ** 0.5
    )


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

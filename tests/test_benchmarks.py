"""The end-to-end benchmark's report handling, on the shipped H100 report (no GPU needed)."""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "benchmarks" / "results" / "e2e_h200_input_copies_part1of2.json"  # one run, three methods


@pytest.fixture
def combine(run_main):
    """``python -m benchmarks.e2e --combine REPORTS --out OUT`` run in this process (conftest's
    run_main): a callable ``combine(*reports, out=OUT)`` returning its exit code, stdout and stderr."""
    from benchmarks import e2e

    def run(*reports, out) -> subprocess.CompletedProcess:
        argv = ["--combine", *map(str, reports), "--out", str(out)]
        return subprocess.CompletedProcess(argv, *run_main(e2e.main, *argv))

    return run


def test_combine_merges_rows_by_label(tmp_path, combine):
    from benchmarks.e2e_report import summarize

    shipped = json.loads(REPORT.read_text())
    done = combine(REPORT, REPORT, out=tmp_path / "twice.json")
    assert done.returncode == 0, done.stderr
    twice = json.loads((tmp_path / "twice.json").read_text())
    assert len(twice["rows"]) == len(shipped["rows"])  # the same rows once, not twice
    apart = twice["summary"].pop("gemm_rows_default_and_diode_top1_from_different_runs")
    assert apart == 0  # every row's timings from the later run
    assert twice["summary"] == pytest.approx(summarize(shipped["rows"]), nan_ok=True)
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
    other = json.loads(REPORT.read_text()) | {"device": "another GPU"}
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
    shipped = json.loads(REPORT.read_text())  # timed over input copies
    one_copy = json.loads(REPORT.read_text())
    for row in one_copy["rows"]:
        for record in row["methods"].values():
            record.pop("input_copies", None)
    one_copy.pop("runtime", None)
    (tmp_path / "one_copy.json").write_text(json.dumps(one_copy))
    done = combine(tmp_path / "one_copy.json", REPORT, out=tmp_path / "mixed.json")
    assert done.returncode != 0 and "input copies" in done.stderr
    done = combine(REPORT, REPORT, out=tmp_path / "same.json")
    assert done.returncode == 0, done.stderr
    same = json.loads((tmp_path / "same.json").read_text())
    assert len(same["rows"]) == len(shipped["rows"]) and "over input copies" in same["runtime"]


def test_a_report_of_a_stopped_run_says_so_and_enters_no_table(tmp_path, combine):
    """The report written after each worker is marked incomplete until the last; combined with a
    complete one it stays incomplete, and the results table refuses it."""
    from benchmarks import results_table
    from benchmarks.e2e_report import write_e2e_report

    shipped = json.loads(REPORT.read_text())
    head = {k: v for k, v in shipped.items() if k not in ("rows", "summary")}
    diode_only = [r | {"methods": {"diode_top1": r["methods"]["diode_top1"]}} for r in shipped["rows"]]
    write_e2e_report(dict(head), diode_only, tmp_path / "stopped.json", complete=False)
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


def test_e2e_runtimes_from_other_runs_compare_through_the_default_timing_each_was_paired_with():
    """Stock max-autotune timed on another machine whose clock runs 5% fast, beside default mode's
    graph in its worker: against diode it counts at its ratio to that paired default timing, not at
    its raw time; a row without the pairing compares raw times."""
    from benchmarks.e2e_report import summarize

    def gemm(**methods):
        return {"kind": "gemm", "label": "g", "methods": methods}

    default, diode = {"runtime_us": 10.0}, {"runtime_us": 10.2}
    paired = {"runtime_us": 9.5, "default_runtime_us": 9.69}
    summary = summarize([gemm(default=default, diode_top1=diode, max_autotune=paired)])
    assert summary["runtime_ratio_vs_best_of_default_and_max_autotune_worst"] == pytest.approx(1.02 / (9.5 / 9.69))
    assert summary["runtime_ratio_vs_max_autotune_worst"] == pytest.approx(1.02 / (9.5 / 9.69))
    assert summary["runtime_ratio_max_autotune_vs_default_geomean"] == pytest.approx(9.5 / 9.69)
    raw = summarize([gemm(default=default, diode_top1=diode, max_autotune={"runtime_us": 9.5})])
    assert raw["runtime_ratio_vs_best_of_default_and_max_autotune_worst"] == pytest.approx(10.2 / 9.5)
    slower = summarize(
        [gemm(default=default, diode_top1=diode, max_autotune={"runtime_us": 11.0, "default_runtime_us": 10.4})]
    )
    assert slower["runtime_ratio_vs_best_of_default_and_max_autotune_worst"] == pytest.approx(1.02)


def test_e2e_summary_counts_the_compile_of_triton_and_aten_picks_apart():
    """The compile ratios of the GEMMs whose one choice is a Triton config and of those whose one
    choice is an ATen call are each their own; an unsure decision that handed Inductor several
    choices (and its benchmark) counts in neither."""
    from benchmarks.e2e_report import summarize

    def gemm(chosen: list[str], compile_s: float) -> dict:
        decision = {"diode": {"decisions": [{"chosen": chosen}]}}
        return {
            "kind": "gemm",
            "label": chosen[0],
            "methods": {"default": {"compile_s": 0.1}, "diode_top1": {"compile_s": compile_s, **decision}},
        }

    rows = [
        gemm(["aten::mm"], 0.1),
        gemm(["triton::mm 64x64x32 g8 s3 w4"], 0.9),
        gemm(["aten::bmm"], 0.12),
        gemm(["triton::bmm 64x32x64 g8 s1 w4", "aten::bmm"], 3.0),
    ]
    summary = summarize(rows)
    assert (summary["triton_first_picks"], summary["aten_first_picks"]) == (1, 2)
    assert summary["compile_ratio_vs_default_geomean_triton_first_picks"] == pytest.approx(9.0)
    assert summary["compile_ratio_vs_default_geomean_aten_first_picks"] == pytest.approx(1.2**0.5)
    assert summary["compile_ratio_vs_default_geomean"] == pytest.approx((9.0 * 1.2 * 30.0) ** 0.25)


def test_e2e_pairs_a_method_with_default_modes_graph_compiled_in_a_frame_of_its_own():
    """The reference a method's runtime is paired with is a graph of its own, compiled once by
    default_reference after the method's graph of the same function, and computes what it does."""
    import torch

    from benchmarks.e2e import default_reference

    torch._dynamo.reset()
    graphs = torch._dynamo.utils.counters["stats"]
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    torch.compile(torch.mm, dynamic=False)(a, b)
    before = graphs["unique_graphs"]
    reference = default_reference(torch.mm, (a, b))
    assert graphs["unique_graphs"] == before + 1
    with torch.no_grad():  # as e2e times it: the call that compiled it ran without autograd too
        torch.testing.assert_close(reference(a, b), a @ b)
    assert graphs["unique_graphs"] == before + 1


def test_e2e_measure_times_a_method_beside_default_modes_graph(monkeypatch):
    """measure() as a worker runs it, with real torch.compile on the CPU and only the CUDA timers
    replaced: a diode method's record holds the paired default timing, default mode's none; the
    method's graph and the reference are compiled once each, nothing while timing."""
    import time

    import torch

    from benchmarks import common, e2e

    def timed(fn, inputs=((),), rep_ms=None):  # stands for do_bench_cudagraph: one call per input
        start = time.perf_counter()
        for x in inputs:
            fn(*x)
        return (time.perf_counter() - start) * 1e6 / len(inputs)

    for module in (e2e, common):
        monkeypatch.setattr(module, "bench_cudagraph_us", timed)
    monkeypatch.setattr(e2e, "bench_us", lambda fn: timed(lambda: fn()))
    monkeypatch.setattr(e2e, "input_copies", lambda inputs: [inputs, inputs])
    monkeypatch.setattr(e2e, "wall_us_per_call", lambda fn: timed(lambda: fn()))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args, **kwargs: None)
    graphs = torch._dynamo.utils.counters["stats"]
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    default = e2e.measure(torch.mm, (a, b), "default", "NVIDIA-H100-matmul")
    before = graphs["unique_graphs"]
    diode = e2e.measure(torch.mm, (a, b), "diode_top1", "NVIDIA-H100-matmul")
    assert "default_runtime_us" not in default and default["runtime_us"] > 0
    assert diode["default_runtime_us"] > 0 and diode["runtime_us"] == diode["runtime_cudagraph_us"] > 0
    assert graphs["unique_graphs"] == before + 2


def test_a_report_without_stock_max_autotune_enters_the_table_with_what_it_timed(tmp_path):
    """Runs of default mode and diode top-1 alone give the rows against default mode, said so."""
    from benchmarks import results_table
    from benchmarks.e2e_report import write_e2e_report

    shipped = json.loads(REPORT.read_text())
    head = {k: v for k, v in shipped.items() if k not in ("rows", "summary")}
    rows = [r | {"methods": {m: t for m, t in r["methods"].items() if m != "max_autotune"}} for r in shipped["rows"]]
    write_e2e_report(dict(head), rows, tmp_path / "two.json", complete=True)
    report = json.loads((tmp_path / "two.json").read_text())
    (gemms, value), *rest = list(results_table.e2e(report))
    s = report["summary"]
    assert "max-autotune not timed" in gemms and not rest  # the part's rows are GEMMs alone
    assert f"{len(rows)} held-out real-model GEMMs" in gemms
    assert value == f"{s['runtime_ratio_vs_default_geomean']:.3f}x; {s['runtime_ratio_vs_default_worst']:.3f}x"
    assert [name for name, _ in results_table.e2e(shipped)][0].startswith("end to end, 21 held-out real-model GEMMs:")


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


def test_readme_is_short_and_states_no_figure_outside_the_generated_table():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    begin, end = text.index("<!-- results:begin"), text.index("<!-- results:end -->")
    outside = text[:begin] + text[end:]
    figures = [m.group(0) for m in re.finditer(r"\b\d[\d,.]*\s?(x|us|ms|s|%)(?!\w)", outside) if m.group(0) != "1x"]
    assert figures == [], figures


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
    L2: each copy in a storage of its own, with the original's sizes, strides, offset and values,
    an expanded bias (elements that share a location) among them."""
    import torch

    from benchmarks.common import input_copies

    base = torch.randn(3 * 64 * 40 + 5)
    a = base[5:].as_strided((3, 64, 40), (2560, 1, 64), 5)  # transposed batches, at an offset
    bias, scale = torch.randn(40).expand(64, 40), 2
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


def test_e2e_combine_refuses_to_write_over_a_report_it_reads(tmp_path, combine):
    report = tmp_path / "a.json"
    report.write_bytes(REPORT.read_bytes())
    done = combine(report, out=report)
    assert done.returncode == 2 and "--out" in done.stderr, done.stderr
    assert report.read_bytes() == REPORT.read_bytes()

"""The recorder through real torch.compile on the CPU (Inductor autotunes bmm with CPP,ATEN)."""

import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor import select_algorithm

from torch_diode.collection import Collector, collect
from torch_diode.dataset_io import load_dataset
from torch_diode.features import is_aten
from torch_diode.types import problem_key

pytestmark = pytest.mark.slow

CPU_BMM = {"max_autotune": True, "max_autotune_gemm_backends": "CPP,ATEN"}


def compile_bmm(a, b):
    torch._dynamo.reset()
    with inductor_config.patch(CPU_BMM):
        return torch.compile(torch.bmm, fullgraph=True)(a, b)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One real compile recorded by diode, with a plain saver beside it capturing the raw call."""
    path = tmp_path_factory.mktemp("rec") / "run.json"
    raw = []

    def plain_saver(timings, name, input_nodes, choices, *rest):
        raw.append((dict(timings), name, list(input_nodes), list(choices), len(rest)))

    savers = select_algorithm.get_algorithm_selector_cache().feedback_saver_fns
    savers.append(plain_saver)
    caches_before = inductor_config.force_disable_caches
    try:
        # B is (3, 24, 16) stored column-major (the CPP template takes that layout; a transposed
        # A gets a single choice and no benchmarking on the CPU)
        a = torch.randn(3, 40, 24)
        b = torch.randn(3, 16, 24).transpose(1, 2)
        with collect(path) as collector:
            assert inductor_config.force_disable_caches is True
            out = compile_bmm(a, b)
        torch.testing.assert_close(out, torch.bmm(a, b))
        assert inductor_config.force_disable_caches == caches_before
        assert plain_saver in savers and collector._saver not in savers  # removed only its own
    finally:
        savers.remove(plain_saver)
    return path, collector, raw


def test_every_field_is_recorded(recorded):
    path, collector, raw = recorded
    assert collector.stats["gemms"] == 1 and collector.stats["errors"] == 0
    ds = load_dataset(path)
    ((hw, problem, timings),) = list(ds.problems())
    assert (problem.op, problem.B, problem.M, problem.N, problem.K) == ("bmm", 3, 40, 16, 24)
    assert (problem.dtype_a, problem.dtype_b, problem.dtype_out) == ("float32",) * 3
    assert problem.transpose_b and not problem.transpose_a
    assert problem.strides_a == (960, 24, 1) and problem.strides_b == (384, 1, 24)
    assert problem.bias_shape is None
    assert hw.device_name.startswith("CPU") and hw.torch_version == torch.__version__
    # every benchmarked choice, with the time Inductor measured (ms -> us)
    (raw_timings, name, _, _, extra_args) = raw[0]
    assert name == "bmm" and len(timings) == len(raw_timings) >= 2
    assert extra_args >= 1  # torch >= 2.11 passes more than 4 arguments; the recorder accepts them
    ids = {t.config.template_id for t in timings}
    assert "aten::bmm" in ids
    assert all("_0" not in i and "Wrapper" not in i for i in ids), (
        ids
    )  # ids come from the template, not the kernel name
    measured = sorted(v * 1000 for v in raw_timings.values())
    assert sorted(t.time_us for t in timings) == pytest.approx(measured)


def test_failures_are_kept_as_failures(recorded, tmp_path):
    _, _, raw = recorded
    timings, name, nodes, choices, _ = raw[0]
    first = next(iter(timings))
    broken = {c: (math.inf if c is first else t) for c, t in timings.items()}
    collector = Collector(tmp_path / "f.msgpack")
    collector.record(broken, name, nodes, choices)
    collector.flush()
    ((_, _, recorded_timings),) = list(load_dataset(tmp_path / "f.msgpack").problems())
    failed = [t for t in recorded_timings if t.failed]
    assert len(failed) == 1 and math.isinf(failed[0].time_us)
    assert collector.stats["failed_choices"] == 1


@pytest.mark.parametrize("precision, marked", [("high", True), ("highest", False)])
def test_an_aten_choice_of_fp32_under_tf32_is_recorded_as_such(recorded, tmp_path, precision, marked):
    """cuBLAS runs TF32 kernels for fp32 where TF32 is allowed: the recorded ATen config says so
    (the features read it), the other choices keep their own flag."""
    _, _, raw = recorded
    timings, name, nodes, choices, _ = raw[0]
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        collector = Collector(tmp_path / "t.msgpack")
        collector.record(timings, name, nodes, choices)
        collector.flush()
    finally:
        torch.set_float32_matmul_precision(before)
    ((_, problem, recorded_timings),) = list(load_dataset(tmp_path / "t.msgpack").problems())
    assert problem.dtype_a == "float32"
    aten = [t.config for t in recorded_timings if is_aten(t.config)]
    assert aten and all(c.allow_tf32 is marked for c in aten)
    others = [t.config for t in recorded_timings if not is_aten(t.config)]  # the C++ template's
    assert others and not any(c.allow_tf32 for c in others)


def test_saver_signatures_and_unknown_ops(tmp_path):
    collector = Collector(tmp_path / "s.json")
    collector._saver({}, "int_mm", [], [])  # 4 arguments (older torch)
    collector._saver({}, "scaled_mm", [], [], None, {})  # 6 arguments (torch 2.11)
    assert collector.stats["skipped_int_mm"] == 1 and collector.stats["skipped_scaled_mm"] == 1


def test_a_failing_recorder_never_breaks_compilation(tmp_path):
    class Broken(Collector):
        def record(self, *args, **kwargs):
            raise RuntimeError("boom")

    a, b = torch.randn(2, 16, 8), torch.randn(2, 8, 12)
    with Broken(tmp_path / "b.json") as collector:
        out = compile_bmm(a, b)
    torch.testing.assert_close(out, torch.bmm(a, b))
    assert collector.stats["errors"] == 1


def test_resume_extends_an_existing_file(recorded, tmp_path):
    path, _, _ = recorded
    copy = tmp_path / "copy.json"
    copy.write_bytes(path.read_bytes())
    with collect(copy):
        compile_bmm(torch.randn(2, 32, 8), torch.randn(2, 8, 32))
    assert load_dataset(copy).num_problems == 2


def test_kill_minus_9_then_resume(tmp_path):
    """kill -9 during `diode collect` loses at most the shape in flight; the same command resumes."""
    out = tmp_path / "sweep.json"
    cmd = [
        sys.executable,
        "-m",
        "torch_diode.cli",
        "collect",
        "--device",
        "cpu",
        "--backends",
        "CPP,ATEN",
        "--ops",
        "bmm",
        "--dtypes",
        "float32",
        "--num-shapes",
        "2",
        "--min-size",
        "16",
        "--max-size",
        "48",
        "--max-batch",
        "4",
        "--seed",
        "5",
        "--output",
        str(out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    completed = []
    while time.time() < deadline and proc.poll() is None:
        if out.exists():
            completed = load_dataset(out).metadata.get("completed", [])
            if completed:
                break
        time.sleep(0.2)
    assert completed, "the first shape never completed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = load_dataset(out)  # the file is whole: writes are atomic
    done_before = killed.metadata["completed"]
    assert len(done_before) == 1
    # the writer's lock file stays after kill -9 (no process holds its lock: the resume below takes
    # it), and so may a temporary file where the kill came between a write and its rename

    subprocess.run(cmd, check=True, capture_output=True)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "lock or temporary files left behind"
    final = load_dataset(out)
    assert final.metadata["completed"][: len(done_before)] == done_before
    assert len(set(final.metadata["completed"])) == 2 == len(final.metadata["completed"])
    keys = {problem_key(p) for _, p, _ in final.problems()}
    assert len(keys) == 2
    # shapes measured before the kill were not measured again: one sample per choice
    for _, p, timings in final.problems():
        if problem_key(p) in done_before:
            assert all(len(t.samples_us) == 1 for t in timings)


def test_devices_shard_the_work_and_merge_joins_it(tmp_path, diode_cli):
    """--devices: one worker process per device, each with every N-th shape in its own shard (two
    CPU workers here; GPUs work the same way); `diode dataset merge` joins the shards. The command
    that starts the workers, the merge and the resumed run: the command line in this process."""
    out = tmp_path / "multi.json"
    options = [
        "collect",
        "--backends",
        "CPP,ATEN",
        "--ops",
        "bmm",
        "--dtypes",
        "float32",
        "--num-shapes",
        "2",
        "--min-size",
        "16",
        "--max-size",
        "40",
        "--max-batch",
        "4",
        "--seed",
        "9",
        "--output",
        out,
    ]
    code, stdout, err = diode_cli(*options, "--devices", "cpu", "cpu")
    assert code == 0, err[-2000:]
    shards = [tmp_path / "multi_shard0.json", tmp_path / "multi_shard1.json"]
    done = [load_dataset(s).metadata["completed"] for s in shards]
    assert len(done[0]) == len(done[1]) == 1 and not set(done[0]) & set(done[1])
    assert "diode dataset merge" in stdout
    code, _, err = diode_cli("dataset", "merge", *shards, "-o", out)
    assert code == 0, err[-2000:]
    merged = load_dataset(out)
    assert len({problem_key(p) for _, p, _ in merged.problems()}) == 2
    # the merged file keeps the shards' resume record: collecting into it again measures nothing
    assert sorted(merged.metadata["completed"]) == sorted(done[0] + done[1])
    code, stdout, err = diode_cli(*options, "--device", "cpu")
    resumed = "0 problems measured, 2 already done"
    assert code == 0 and resumed in stdout, stdout + err[-2000:]


def test_exclude_leaves_out_the_problems_of_other_datasets(tmp_path, diode_cli):
    """`diode collect --exclude VALIDATION`: the seed's draws held by VALIDATION are redrawn, and
    every problem measured is new (the validation set stays held out)."""
    from torch_diode.collection.shapes import ShapeSpec, random_problems
    from torch_diode.dataset_io import save_dataset
    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, TimedConfig

    options = [
        "--backends",
        "CPP,ATEN",
        "--ops",
        "bmm",
        "--dtypes",
        "float32",
        "--num-shapes",
        "2",
        "--min-size",
        "16",
        "--max-size",
        "40",
        "--max-batch",
        "4",
        "--seed",
        "9",
    ]
    spec = ShapeSpec(num_shapes=2, min_size=16, max_size=40, ops=("bmm",), dtypes=("float32",), max_batch=4)
    held = Dataset()
    aten = KernelConfig(template_id="aten::bmm")
    for p in random_problems(spec, 9)[:1]:  # the first problem that seed 9 draws
        held.add(detect_hardware("cpu"), p, [TimedConfig(aten, 1.0)])
    save_dataset(held, tmp_path / "validation.json")
    out = tmp_path / "train.json"
    code, _, err = diode_cli(
        "collect", *options, "--device", "cpu", "--exclude", tmp_path / "validation.json", "-o", out
    )
    assert code == 0, err[-2000:]
    measured = {problem_key(p) for _, p, _ in load_dataset(out).problems()}
    assert len(measured) == 2
    assert problem_key(random_problems(spec, 9)[0]) not in measured
    assert problem_key(random_problems(spec, 9)[1]) in measured  # the rest of the draw is kept
    settings = load_dataset(out).metadata["sources"][-1]["settings"]
    assert settings["tf32"] is False and settings["heldout_excluded"] == ["realmodels_heldout"]


def test_a_problem_that_kills_two_runs_is_skipped_on_the_next(tmp_path):
    """A CUDA fault ends the process and cannot be caught: the problem in flight is on disk, a
    resumed run tries it once more (the first run may have been killed from outside), and a run
    resuming after it died twice skips it instead of dying on it again."""
    from torch_diode.collection.sweep_state import CRASHED, begin, done_keys, mark, skip_crashed
    from torch_diode.types import Problem

    path = tmp_path / "sweep.json"
    p = Problem(op="mm", B=1, M=64, N=32, K=16, dtype_a="float32", dtype_b="float32", dtype_out="float32")
    q = Problem(op="mm", B=1, M=32, N=32, K=16, dtype_a="float32", dtype_b="float32", dtype_out="float32")
    # a run that dies keeps what it wrote; the system releases its writer lock (_writer.close() here)
    first = Collector(path)
    begin(first, p)  # the first run dies measuring p
    first._writer.close()
    second = Collector(path)
    assert skip_crashed(second) is None and problem_key(p) not in done_keys(second)
    begin(second, p)  # the second run dies on it too
    second._writer.close()
    third = Collector(path)
    assert skip_crashed(third) == problem_key(p)
    assert problem_key(p) in {s["problem_key"] for s in load_dataset(path).metadata["skipped"]}  # recorded on disk
    assert load_dataset(path).metadata["skipped"] == [{"problem_key": problem_key(p), "reason": CRASHED}]
    begin(third, q)  # a problem measured normally clears the marker
    mark(third, q, None)
    assert "in_flight" not in load_dataset(path).metadata


def test_remeasure_measures_the_hinted_problems_again_and_merge_replace_puts_them_in_place(tmp_path, diode_cli):
    """`diode remeasure FILE --layout-hinted`: the problems whose kernels get layout hints,
    measured again as the file records (here Inductor's CPP,ATEN max-autotune on the CPU), into a
    new file that resumes; `diode dataset merge --replace` takes those problems from it alone."""
    from torch_diode.collection.kernel_spec import layout_hinted
    from torch_diode.dataset_io import save_dataset
    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, Problem, TimedConfig

    settings = {
        "mode": "inductor",
        "max_autotune_gemm_backends": "CPP,ATEN",
        "max_autotune_gemm_search_space": "DEFAULT",
        "tf32": False,
    }
    # two collections: the older one from before collectors recorded TF32 (it ran without: the same
    # settings)
    before_tf32 = {k: v for k, v in settings.items() if k != "tf32"}
    old = Dataset(
        metadata={
            "sources": [
                {"tool": "torch_diode.collect", "settings": before_tf32},
                {"tool": "torch_diode.collect", "settings": settings},
            ]
        }
    )
    hinted = Problem("bmm", 2, 24, 40, 20, "float32", "float32", "float32")  # K = 20: runs of 4
    others = [
        Problem("bmm", 2, 17, 33, 19, "float32", "float32", "float32"),
        Problem("bmm", 2, 32, 32, 32, "float32", "float32", "float32"),
    ]
    assert layout_hinted(hinted) and not any(layout_hinted(p) for p in others)
    stale = TimedConfig(KernelConfig(template_id="aten::bmm"), 12345.0)
    for p in [hinted, *others]:
        old.add(detect_hardware("cpu"), p, [stale])
    save_dataset(old, tmp_path / "old.json")
    remeasure = [
        "remeasure",
        tmp_path / "old.json",
        "--layout-hinted",
        "--device",
        "cpu",
        "-o",
        tmp_path / "new.json",
        # an --only list and a bound that leave no problem out: a re-measurement of all (hinted) ones
        "--only",
        tmp_path / "old.json",
        "--below-us",
        "20000",
    ]
    code, out, err = diode_cli(*remeasure)
    assert code == 0, err[-2000:]
    assert "1 of its 3 problems" in out
    new = load_dataset(tmp_path / "new.json")
    assert [problem_key(p) for _, p, _ in new.problems()] == [problem_key(hinted)]  # recorded with its strides
    assert new.metadata["sources"][0]["settings"]["max_autotune_gemm_backends"] == "CPP,ATEN"
    assert not {"only", "below_us"} & set(new.metadata["sources"][0]["settings"])
    code, out, _ = diode_cli(*remeasure)
    assert code == 0 and "1 already done" in out, out
    merge = ["dataset", "merge", tmp_path / "old.json", tmp_path / "new.json", "--replace"]
    code, out, err = diode_cli(*merge, "-o", tmp_path / "merged.json")
    assert code == 0 and "1 problem(s) taken from a later input alone" in out, err
    merged = {problem_key(p): ts for _, p, ts in load_dataset(tmp_path / "merged.json").problems()}
    assert set(merged) == {problem_key(p) for p in [hinted, *others]}
    assert all(t.time_us != 12345.0 for t in merged[problem_key(hinted)]) and len(merged[problem_key(hinted)]) >= 2
    assert all(ts == [stale] for key, ts in merged.items() if key != problem_key(hinted))

    # the merged file records its hinted re-measurement, so the part that loops over every file
    # leaves it alone (no output written); a file without hinted problems writes none either
    def again(source: str) -> str:
        code, out, err = diode_cli(
            "remeasure", tmp_path / source, "--layout-hinted", "--device", "cpu", "-o", tmp_path / "again.json"
        )
        assert code == 0, err[-2000:]
        return out

    assert "measured with the layout hints; nothing to do" in again("merged.json")
    assert "measured with the layout hints; nothing to do" in again("new.json")
    save_dataset(old.subset(lambda hw, p: not layout_hinted(p)), tmp_path / "plain.json")
    assert "none of its 2 problems gets a layout hint" in again("plain.json")
    # --only: the hinted problems that another dataset lists (those still timed without the hints)
    args = ["remeasure", tmp_path / "old.json", "--layout-hinted", "--device", "cpu", "-o", tmp_path / "again.json"]
    code, out, err = diode_cli(*args, "--only", tmp_path / "plain.json")
    assert code == 0 and "none of its problems in" in out, out + err[-2000:]
    assert "gets a layout hint; nothing to do" in out
    assert not (tmp_path / "again.json").exists()
    code, out, err = diode_cli(*args, "--only", tmp_path / "missing.json")
    assert code == 2 and "missing.json" in err and "Traceback" not in err, err


def test_remeasure_below_us_takes_the_problems_that_ran_under_it(tmp_path, diode_cli):
    """`diode remeasure FILE --below-us US`: only the problems whose fastest recorded time is under
    US microseconds (a problem whose choices all failed has none), measured again as the file
    records (Inductor's CPP,ATEN max-autotune on the CPU here), the new file's record naming the
    bound; a file without such a problem, or a time not above 0, measures nothing."""
    from torch_diode.collection.remeasure import ran_under
    from torch_diode.dataset_io import save_dataset
    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, Problem, TimedConfig

    settings = {"mode": "inductor", "max_autotune_gemm_backends": "CPP,ATEN", "tf32": False}
    old = Dataset(metadata={"sources": [{"tool": "torch_diode.collect", "settings": settings}]})
    short = Problem("bmm", 2, 32, 32, 32, "float32", "float32", "float32")
    aten = KernelConfig(template_id="aten::bmm")
    cpu = detect_hardware("cpu")
    old.add(cpu, short, [TimedConfig(aten, 40.0), TimedConfig(KernelConfig("triton::bmm", 32, 32, 32, 8, 2, 4), 9.0)])
    old.add(cpu, Problem("bmm", 2, 64, 64, 64, "float32", "float32", "float32"), [TimedConfig(aten, 50.0)])
    old.add(
        cpu,
        Problem("mm", 1, 16, 16, 16, "float32", "float32", "float32"),
        [TimedConfig.failure(KernelConfig(template_id="aten::mm"))],
    )
    assert ran_under(old, 10) == {problem_key(short)} and len(ran_under(old, 50.5)) == 2 and ran_under(old, 9) == set()
    save_dataset(old, tmp_path / "old.json")
    remeasure = ["remeasure", str(tmp_path / "old.json"), "--device", "cpu", "-o", str(tmp_path / "new.json")]
    code, out, _ = diode_cli(*remeasure, "--below-us", "5")
    assert code == 0 and "none of its problems ran under 5 us; nothing to do" in out, out
    code, _, err = diode_cli(*remeasure, "--below-us", "0")
    assert code == 2 and "--below-us: 0: give a time in microseconds above 0" in err, err
    assert "Traceback" not in err and not (tmp_path / "new.json").exists()
    code, out, err = diode_cli(*remeasure, "--below-us", "10")
    assert code == 0, err[-2000:]
    assert "1 of its 3 problems (those whose fastest recorded time is under 10 us)" in out, out
    new = load_dataset(tmp_path / "new.json")
    assert [problem_key(p) for _, p, _ in new.problems()] == [problem_key(short)]
    assert new.metadata["sources"][0]["settings"]["below_us"] == 10


def test_remeasure_without_lead_leaves_the_files_timed_with_the_lead(tmp_path, diode_cli):
    """`diode remeasure FILE --without-lead` measures again only a file whose fast-collector timings
    had no lead before each flush: a file collected with the lead, or of Inductor's own timings, or
    into which a whole re-measurement with the lead was merged, is left as it is. A merged
    re-measurement of its hinted problems alone does not make a file led."""
    from torch_diode.collection.fast_sweep import FastSweep
    from torch_diode.collection.provenance import hinted_already, led_already
    from torch_diode.collection.timing import LEAD_US
    from torch_diode.dataset_io import save_dataset
    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, Problem, TimedConfig

    led = {**FastSweep().settings(), "tf32": False}  # what the collector records now
    assert led["lead_us"] == LEAD_US > 0
    fast = {k: v for k, v in led.items() if k != "lead_us"}  # a collection from before the lead
    remeasured = {**led, "command": "remeasure", "layout_hinted_only": False}

    def dataset(*settings):
        d = Dataset(metadata={"sources": [{"tool": "torch_diode.collect", "settings": s} for s in settings]})
        timing = TimedConfig(KernelConfig(template_id="aten::mm"), 10.0)
        d.add(detect_hardware("cpu"), Problem("mm", 1, 64, 64, 64, "float32", "float32", "float32"), [timing])
        return d

    assert not led_already(dataset(fast))
    assert not led_already(dataset(fast, led))  # one collection of the file without it
    assert led_already(dataset(fast, remeasured))
    assert not led_already(dataset(fast, {**remeasured, "layout_hinted_only": True}))
    assert not led_already(dataset(fast, {**remeasured, "only": ["data/h100/unhinted"]}))
    assert not led_already(dataset(fast, {**remeasured, "shard": "0/2"}))
    # a hinted re-measurement of the short problems alone leaves a file collected before the hints unhinted
    unhinted, hinted = {**fast, "layout_hints": False}, {**remeasured, "layout_hinted_only": True}
    assert not hinted_already(dataset(unhinted))
    assert hinted_already(dataset(unhinted, hinted))
    assert not hinted_already(dataset(unhinted, {**hinted, "below_us": 30.0}))
    # the short kernels: all of those the next re-measurement would take
    assert led_already(dataset(fast, {**remeasured, "below_us": 30.0}), below_us=30.0)
    assert led_already(dataset(fast, {**remeasured, "below_us": 30.0}), below_us=10.0)
    assert not led_already(dataset(fast, {**remeasured, "below_us": 10.0}), below_us=30.0)
    assert not led_already(dataset(fast, {**remeasured, "below_us": 30.0}))  # all its problems
    assert led_already(dataset(fast, remeasured), below_us=30.0)
    for name, d in (("led", dataset(led)), ("inductor", dataset({"mode": "inductor", "tf32": False}))):
        save_dataset(d, tmp_path / f"{name}.json")
        code, out, err = diode_cli(
            "remeasure", tmp_path / f"{name}.json", "--without-lead", "--device", "cpu", "-o", tmp_path / "o.json"
        )
        assert code == 0 and "takes none); nothing to do" in out, out + err[-2000:]
        assert not (tmp_path / "o.json").exists()
    # a collection's placeholder chunk (shapes not yet measured) holds nothing to measure again
    save_dataset(
        Dataset(metadata={"sources": [{"tool": "torch_diode.collect", "settings": fast}]}), tmp_path / "empty.json"
    )
    code, out, err = diode_cli(
        "remeasure", tmp_path / "empty.json", "--without-lead", "--device", "cpu", "-o", tmp_path / "o.json"
    )
    assert code == 0 and "holds no problem; nothing to do" in out, out + err[-2000:]
    assert not (tmp_path / "o.json").exists()

"""The `diode` command line, run as a user runs it (a subprocess of the installed script)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torch_diode.dataset_io import dataset_to_dict, load_dataset, save_dataset

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "h100_sample.json.gz"
DIODE = [sys.executable, "-m", "torch_diode.cli"]


def diode(*args, check=True):
    proc = subprocess.run([*DIODE, *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"diode {args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "diode"
    assert script.exists()
    out = subprocess.run([script, "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("dataset", "collect", "collect-shapeset", "create-validation", "remeasure"):
        assert command in out


@pytest.mark.parametrize(
    "command",
    [
        ["dataset"],
        ["dataset", "stats"],
        ["dataset", "coverage"],
        ["dataset", "merge"],
        ["dataset", "convert"],
        ["dataset", "split"],
        ["collect"],
        ["collect-shapeset"],
        ["create-validation"],
        ["remeasure"],
    ],
)
def test_every_command_has_help(command):
    out = diode(*command, "--help").stdout
    assert "usage: diode" in out and len(out.splitlines()) > 3


def test_stats_report_json(tmp_path):
    report = tmp_path / "r.json"
    out = diode("dataset", "stats", SAMPLE, "--report-json", report, "--problems").stdout
    data = json.loads(report.read_text())
    for key in ("num_problems", "num_timed_configs", "num_failures", "ops", "dtypes", "hardware"):
        assert key in data
    ds = load_dataset(SAMPLE)
    assert data["num_problems"] == ds.num_problems == 12
    assert data["num_timed_configs"] == ds.num_timed_configs
    assert data["num_failures"] == sum(t.failed for _, _, ts in ds.problems() for t in ts)
    assert set(data["ops"]) == {"mm", "addmm", "bmm", "baddbmm"}
    assert data["hardware"][0]["sm_count"] == 132
    assert "NVIDIA H100" in out and "fastest measured config" in out


def test_convert_merge_split(tmp_path):
    mp = tmp_path / "s.msgpack"
    diode("dataset", "convert", SAMPLE, mp)
    assert dataset_to_dict(load_dataset(mp)) == dataset_to_dict(load_dataset(SAMPLE))

    train, val = tmp_path / "train.json", tmp_path / "val.msgpack.gz"
    diode(
        "dataset",
        "split",
        SAMPLE,
        "--train",
        train,
        "--validation",
        val,
        "--validation-fraction",
        "0.25",
        "--seed",
        "3",
    )
    t, v = load_dataset(train), load_dataset(val)
    tp = {p for _, p, _ in t.problems()}
    vp = {p for _, p, _ in v.problems()}
    assert not tp & vp and len(tp) + len(vp) == 12 and len(vp) == 3
    # every problem keeps all of its timed configs (split by problem, never by row)
    src = {p: ts for _, p, ts in load_dataset(SAMPLE).problems()}
    for ds in (t, v):
        for _, p, ts in ds.problems():
            assert ts == src[p]
    # deterministic for a seed, different for another
    diode(
        "dataset",
        "split",
        SAMPLE,
        "--train",
        tmp_path / "t2.json",
        "--validation",
        tmp_path / "v2.json",
        "--validation-fraction",
        "0.25",
        "--seed",
        "3",
    )
    assert {p for _, p, _ in load_dataset(tmp_path / "v2.json").problems()} == vp

    # merging the two halves (a folder) gives back every problem
    folder = tmp_path / "parts"
    folder.mkdir()
    save_dataset(t, folder / "a.json")
    save_dataset(v, folder / "b.msgpack")
    merged = tmp_path / "merged.json"
    assert "merged 2 file(s)" in diode("dataset", "merge", folder, "-o", merged).stdout  # a folder's files
    assert {p for _, p, _ in load_dataset(merged).problems()} == tp | vp


def test_bad_file_gives_a_clear_error_and_nonzero_exit(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"format": "torch-diode-dataset", "schema_version": 1, "metadata": {}, "configs": [], "hardware": [{}]}'
    )
    proc = diode("dataset", "stats", bad, check=False)
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "hardware[0].hardware" in proc.stderr


def test_fast_mode_without_a_gpu_is_a_clear_error(tmp_path):
    import torch

    if torch.cuda.is_available():
        return
    proc = diode(
        "collect",
        "--search-mode",
        "fast",
        "--device",
        "cpu",
        "--num-shapes",
        "1",
        "--output",
        tmp_path / "x.json",
        check=False,
    )
    assert proc.returncode == 2 and "CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr


def one_bmm(k: int, sources: list | None = None):
    """A dataset of one fp32 bmm 2x24x40xk timed once on the CPU, recording ``sources``."""
    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, Problem, TimedConfig

    ds = Dataset(metadata={"sources": sources}) if sources is not None else Dataset()
    problem = Problem("bmm", 2, 24, 40, k, "float32", "float32", "float32")
    ds.add(detect_hardware("cpu"), problem, [TimedConfig(KernelConfig("aten::bmm"), 1.0)])
    return ds


def test_remeasure_names_what_it_cannot_read(tmp_path):
    """`diode remeasure` reads one file's recorded settings: a folder, or a file recording none or
    two different ones, is one line naming it (exit 2)."""
    ds = one_bmm(20)
    save_dataset(ds, tmp_path / "bare.json")
    ds.metadata["sources"] = [
        {"tool": "torch_diode.collect", "settings": {"mode": "fast", "exhaustive_sample": 48, "seed": 1, "reps": 6}},
        {"tool": "torch_diode.collect", "settings": {"mode": "fast", "exhaustive_sample": 150, "seed": 1, "reps": 6}},
    ]
    save_dataset(ds, tmp_path / "mixed.json")
    for args, words in [
        ([tmp_path], ["folder"]),
        ([tmp_path / "bare.json"], ["bare.json", "metadata.sources", "no collection settings"]),
        ([tmp_path / "mixed.json"], ["mixed.json", "different settings"]),
    ]:
        proc = diode("remeasure", *args, "--device", "cpu", "-o", tmp_path / "out.json", check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and all(w in proc.stderr for w in words), proc.stderr
    assert not (tmp_path / "out.json").exists()
    # such a file that holds none of --only's problems has nothing to measure again: not an error
    save_dataset(one_bmm(24), tmp_path / "other.json")
    proc = diode(
        "remeasure",
        tmp_path / "mixed.json",
        "--only",
        tmp_path / "other.json",
        "--device",
        "cpu",
        "-o",
        tmp_path / "out.json",
        check=False,
    )
    assert proc.returncode == 0 and "nothing to do" in proc.stdout, proc.stdout + proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_remeasure_reads_the_samples_rotations_a_file_recorded(tmp_path):
    """A file's collections that drew their EXHAUSTIVE sample with other rotations measured other
    configs: remeasure refuses to take them as one; one from before rotations were recorded drew
    one sample (rotations 1) and agrees with a later run of 1."""
    settings = {"mode": "fast", "exhaustive_sample": 48, "seed": 1, "reps": 6}
    for name, rotations, code in [("older", 1, 0), ("rotated", 8, 2), ("per_problem", 0, 2)]:
        sources = [
            {"tool": "torch_diode.collect", "settings": settings},
            {"tool": "torch_diode.collect", "settings": {**settings, "exhaustive_rotations": rotations}},
        ]
        save_dataset(one_bmm(20, sources), tmp_path / f"{name}.json")
        proc = diode("remeasure", tmp_path / f"{name}.json", "--dry-run", "-o", tmp_path / "out.json", check=False)
        assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
        assert code == 0 or ("different settings" in proc.stderr and f"{name}.json" in proc.stderr)
    from torch_diode.collection.provenance import measurement_settings  # a file of per-problem draws alone
    from torch_diode.dataset_io import load_dataset

    sources = [{"tool": "torch_diode.collect", "settings": {**settings, "exhaustive_rotations": 0}}]
    save_dataset(one_bmm(20, sources), tmp_path / "drawn.json")
    drawn = measurement_settings(str(tmp_path / "drawn.json"), load_dataset(tmp_path / "drawn.json"))
    assert drawn["exhaustive_rotations"] == 0
    proc = diode("collect", "--exhaustive-rotations", "-1", "-o", tmp_path / "x.json", check=False)
    assert proc.returncode == 2 and "--exhaustive-rotations" in proc.stderr and "Traceback" not in proc.stderr


def test_remeasure_on_another_gpu_is_refused(tmp_path):
    """A file is measured again on the GPU that measured it: elsewhere (an H100's file on an H200,
    or here on the CPU) it is one line naming the file and both devices, exit 2, nothing written."""
    from dataclasses import replace

    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, Problem, TimedConfig

    settings = {"mode": "inductor", "max_autotune_gemm_backends": "CPP,ATEN", "tf32": False}
    ds = Dataset(metadata={"sources": [{"tool": "torch_diode.collect", "settings": settings}]})
    h100 = replace(detect_hardware("cpu"), device_name="NVIDIA H100 80GB HBM3")
    ds.add(
        h100,
        Problem("bmm", 2, 24, 40, 20, "float32", "float32", "float32"),
        [TimedConfig(KernelConfig("aten::bmm"), 1.0)],
    )
    save_dataset(ds, tmp_path / "h100.json")
    proc = diode("remeasure", tmp_path / "h100.json", "--device", "cpu", "-o", tmp_path / "out.json", check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert all(w in proc.stderr for w in ["h100.json", "NVIDIA H100 80GB HBM3", "cpu is"]), proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_remeasure_with_nothing_to_do_does_not_import_torch(tmp_path):
    """`collect.sh remeasure-hinted` asks every dataset file: one measured with the layout hints, or
    holding none of --only's problems, says "nothing to do" without importing torch (nor opening
    the GPU)."""
    settings = {"mode": "fast", "exhaustive_sample": 48, "seed": 1, "reps": 6}
    for name, layout_hints, k in [("hinted", True, 20), ("other", False, 24), ("old", False, 20)]:  # K = 20: hinted
        sources = [{"tool": "torch_diode.collect", "settings": {**settings, "layout_hints": layout_hints}}]
        save_dataset(one_bmm(k, sources), tmp_path / f"{name}.json")
    script = (
        "import sys\n"
        "from torch_diode.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "print('torch imported' if 'torch' in sys.modules else 'torch not imported', rc)\n"
    )
    for name, only in [("hinted", []), ("old", ["--only", str(tmp_path / "other.json")])]:
        args = ["remeasure", str(tmp_path / f"{name}.json"), "--layout-hinted", *only, "-o", str(tmp_path / "out.json")]
        proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)
        assert "nothing to do" in proc.stdout and "torch not imported 0" in proc.stdout, proc.stdout + proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_remeasure_dry_run_says_what_it_would_measure_and_touches_no_device(tmp_path):
    """--dry-run (collect.sh asks each file so before it measures one): the count of problems it
    would measure again, or "nothing to do", exit 0, with no output written, no device opened (here
    --device cuda on a machine that may have none) and, for remeasure-lead's question (a file timed
    without the lead), torch never imported."""
    settings = {"mode": "fast", "exhaustive_sample": 48, "seed": 1, "reps": 6}
    for name, lead_us in [("old", None), ("led", 100.0)]:
        sources = [{"tool": "torch_diode.collect", "settings": {**settings, "lead_us": lead_us}}]
        save_dataset(one_bmm(20, sources), tmp_path / f"{name}.json")  # timed 1 us
    script = (
        "import sys\n"
        "from torch_diode.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "print('torch imported' if 'torch' in sys.modules else 'torch not imported', rc)\n"
    )
    would = "1 of its 1 problems to measure again (--dry-run: nothing measured)"
    for name, says in [("old", would), ("led", "nothing to do")]:
        args = ["remeasure", str(tmp_path / f"{name}.json"), "--without-lead", "--below-us", "30", "--dry-run"]
        args += ["--device", "cuda"]
        proc = subprocess.run(
            [sys.executable, "-c", script, *args, "-o", str(tmp_path / "out.json")], capture_output=True, text=True
        )
        assert says in proc.stdout and "torch not imported 0" in proc.stdout, proc.stdout + proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_merge_replace_takes_a_later_inputs_problems_alone(tmp_path):
    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, Problem, TimedConfig

    hw = detect_hardware("cpu")
    p, q = (Problem("mm", 1, 64, 64, n, "float32", "float32", "float32") for n in (24, 32))
    aten, tiled = KernelConfig("aten::mm"), KernelConfig("triton::mm", 32, 32, 32, 8, 2, 4, True)
    old, new = Dataset(), Dataset()
    old.add(hw, p, [TimedConfig(aten, 10.0), TimedConfig(tiled, 20.0)])
    old.add(hw, q, [TimedConfig(aten, 30.0)])
    new.add(hw, p, [TimedConfig(aten, 14.0)])
    save_dataset(old, tmp_path / "old.json")
    save_dataset(new, tmp_path / "new.json")
    for replace, expected in [(False, [12.0, 20.0]), (True, [14.0])]:
        out = tmp_path / f"merged_{replace}.json"
        diode(
            "dataset",
            "merge",
            tmp_path / "old.json",
            tmp_path / "new.json",
            *(["--replace"] if replace else []),
            "-o",
            out,
        )
        merged = {x: ts for _, x, ts in load_dataset(out).problems()}
        assert [t.time_us for t in merged[p]] == expected and [t.time_us for t in merged[q]] == [30.0]


def test_constant_ints_are_named_fast_mode_only_and_measured_again_as_recorded(tmp_path, monkeypatch, diode_cli):
    """--constant-ints takes none, all or names of the kernels' ints (another name is one line,
    exit 2), is refused with Inductor's mode (it compiles its own kernels) and reaches the fast
    collector's kernel_spec; `diode remeasure` measures a file again with the ints its collections
    held (collections that held others are two settings), or with those --constant-ints names."""
    from torch_diode.cli import measure as cli_measure
    from torch_diode.collection import kernel_spec
    from torch_diode.collection.fast_sweep import FastSweep
    from torch_diode.collection.sweep_state import SweepSummary

    assert cli_measure.constant_ints("K, M") == cli_measure.constant_ints("M,K") == ("M", "K")  # one order
    assert cli_measure.constant_ints("all") == tuple(dict.fromkeys(kernel_spec.MM_INTS + kernel_spec.BMM_INTS))
    assert cli_measure.constant_ints("none") == ()
    for bad, mode in (("Q", "fast"), ("K", "max-autotune")):
        proc = diode("collect", "--search-mode", mode, "--constant-ints", bad, "--device", "cpu", "--num-shapes", "1",
                     "-o", tmp_path / "x.json", check=False)  # fmt: skip
        assert proc.returncode == 2 and "--constant-ints" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.json").exists(), proc.stderr
    assert "fast mode only" in proc.stderr
    seen = []  # the ints each fast sweep runs with (the sweep itself needs a GPU)
    monkeypatch.setattr(
        FastSweep, "run", lambda self, *a, **k: seen.append(kernel_spec.CONSTANT_INTS) or SweepSummary()
    )
    monkeypatch.setattr(kernel_spec, "CONSTANT_INTS", ())
    settings = {"mode": "fast", "exhaustive_sample": 48, "seed": 1, "reps": 6}
    for name, held in (("plain", settings), ("held", {**settings, "constant_ints": ["K"]})):
        save_dataset(one_bmm(20, [{"tool": "torch_diode.collect", "settings": held}]), tmp_path / f"{name}.json")
    for name, instead in (("plain", ()), ("held", ()), ("plain", ("--constant-ints", "all"))):
        code, _, err = diode_cli("remeasure", tmp_path / f"{name}.json", *instead, "--device", "cpu", "-o",
                                 tmp_path / f"again_{name}_{len(instead)}.json")  # fmt: skip
        assert code == 0, err
    assert seen == [(), ("K",), cli_measure.constant_ints("all")]
    sources = [{"tool": "torch_diode.collect", "settings": s} for s in (settings, {**settings, "constant_ints": ["K"]})]
    save_dataset(one_bmm(20, sources), tmp_path / "both.json")
    proc = diode("remeasure", tmp_path / "both.json", "--dry-run", "-o", tmp_path / "out.json", check=False)
    assert proc.returncode == 2 and "different settings" in proc.stderr
    proc = diode("remeasure", tmp_path / "held.json", "--constant-ints", "X", "-o", tmp_path / "out.json", check=False)
    assert proc.returncode == 2 and "--constant-ints" in proc.stderr and "Traceback" not in proc.stderr
    inductor = {"mode": "inductor", "max_autotune_gemm_backends": "ATEN", "tf32": False}
    save_dataset(one_bmm(20, [{"tool": "torch_diode.collect", "settings": inductor}]), tmp_path / "inductor.json")
    code, out, err = diode_cli("remeasure", tmp_path / "inductor.json", "--constant-ints", "K", "--device", "cpu",
                               "-o", tmp_path / "out.json")  # fmt: skip
    assert code == 2 and "inductor.json was measured in Inductor's mode" in err and not out, (out, err)

"""data/h100/collect.sh runs a part again after a crash (the collector resumes and skips a problem
that ended two runs), never after a bad input, a timeout or Ctrl-C. DIODE, the script's own
setting for the command it runs, is a stand-in that exits with given codes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def gpu_path(tmp_path: Path, card: str = "NVIDIA H100 80GB HBM3") -> str:
    """A PATH whose nvidia-smi names ``card``: the script checks the GPU against $DATA (h100), so
    the runs below do not depend on the GPU of the machine that runs the tests."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{card}'\n")
    smi.chmod(0o755)
    return f"{bin_dir}:{os.environ['PATH']}"


def script_env(tmp_path: Path, diode: str, calls: Path, **extra: str) -> dict[str, str]:
    """collect.sh's environment: DATA under ``tmp_path`` (h100), ``diode`` in place of diode (it
    logs to $CALLS = ``calls``), an nvidia-smi naming an H100 (:func:`gpu_path`), and ``extra``."""
    return {
        **os.environ,
        "PATH": gpu_path(tmp_path),
        "DATA": str(tmp_path / "h100"),
        "DIODE": diode,
        "CALLS": str(calls),
        **extra,
    }


def run_part(
    tmp_path: Path, codes: list[int], retries: int = 4, part: str = "train-mm", wrapper: Path | None = None
) -> tuple[int, list[str]]:
    calls = tmp_path / "calls"
    codes_file = tmp_path / "codes"
    codes_file.write_text("\n".join(map(str, codes)) + "\n")
    fake = tmp_path / "fake_diode.sh"
    # each call logs its arguments (and the TMA switch) and exits with the next code of the list
    fake.write_text(
        'echo "${ENABLE_PERSISTENT_TMA_MATMUL:-0} $*" >> "$CALLS"\n'
        'code=$(head -n 1 "$CODES"); tail -n +2 "$CODES" > "$CODES.rest"; mv "$CODES.rest" "$CODES"\n'
        'exit "${code:-0}"\n'
    )
    env = script_env(
        tmp_path,
        f"bash {wrapper or fake}",
        calls,
        FAKE=str(fake),
        RETRIES=str(retries),
        CODES=str(codes_file),
        PYTHON=sys.executable,  # the interpreter with torch_diode, for the parts that run Python
    )
    proc = subprocess.run(
        ["bash", str(ROOT / "data" / "h100" / "collect.sh"), part], env=env, capture_output=True, text=True
    )
    return proc.returncode, calls.read_text().splitlines() if calls.exists() else []


def run_on_gpus(
    tmp_path: Path, fake: Path, parts: list[str], gpus: int = 2, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess, Path]:
    """collect.sh PARTS with GPUS=``gpus`` and the stand-in ``fake`` for diode (it logs to $CALLS)."""
    calls = tmp_path / "calls"
    env = script_env(tmp_path, f"bash {fake}", calls, GPUS=str(gpus), **(env or {}))
    script = str(ROOT / "data" / "h100" / "collect.sh")
    return subprocess.run(["bash", script, *parts], env=env, capture_output=True, text=True, timeout=60), calls


def script_parts() -> list[str]:
    """The parts collect.sh knows: the labels of its ``case``."""
    import re

    text = (ROOT / "data" / "h100" / "collect.sh").read_text()
    return re.findall(r"^\s+([a-z0-9-]+)(?:\|[^)\s]*)?\)\s", text, flags=re.M)


@pytest.mark.parametrize(
    "codes, retries, want_rc, want_calls",
    [
        ([0], 4, 0, 1),
        ([1, 139, 0], 4, 0, 3),  # a Python error, then a segfault: run again, resumed
        ([1, 1, 1, 1], 2, 1, 3),  # gives up after RETRIES more runs
        ([2, 0], 4, 2, 1),  # bad input: not run again
        ([124, 0], 4, 124, 1),  # the caller's timeout
        ([130, 0], 4, 130, 1),  # Ctrl-C
    ],
)
def test_a_crashed_part_runs_again(tmp_path, codes, retries, want_rc, want_calls):
    rc, calls = run_part(tmp_path, codes, retries)
    assert rc == want_rc and len(calls) == want_calls, (rc, calls)
    assert all(c.startswith("0 collect ") and c.endswith("h100/train/h100_mm.msgpack.gz") for c in calls)


def test_every_part_gives_the_cli_arguments_it_accepts(tmp_path):
    """Each part's command, as the script builds it, parses with diode's own argument parser, and
    only the TMA parts turn Inductor's persistent TMA template on."""
    from torch_diode.cli import build_parser, hoist_global_options

    parts = script_parts()
    assert {"train-mm", "realmodels", "v2-decomposek", "inductor-decomposek", "inductor-tma"} <= set(parts)
    assert len(parts) >= 26
    parser = build_parser()
    for part in parts:
        if part in ("remeasure-hinted", "remeasure-lead"):  # one call per dataset file: test_remeasure_part_...
            continue
        if part.startswith("fill-"):  # a coverage snapshot and a collect per design: test_fill_parts_...
            continue
        (tmp_path / part).mkdir()
        rc, calls = run_part(tmp_path / part, [0], 0, part)
        assert rc == 0 and len(calls) == 1, (part, rc, calls)
        tma, *argv = calls[0].split()
        args = parser.parse_args(hoist_global_options(parser, argv))
        assert args.command in ("collect", "collect-shapeset", "create-validation"), part
        assert tma == ("1" if part in ("inductor-tma", "v2-tma", "val-v2-tma") else "0"), part
        # Inductor's own timings (with the host's launch in its ATen times) never go where training reads
        inductor_timed = args.search_mode == "max-autotune"
        assert inductor_timed == part.startswith("inductor-"), part
        assert ("/inductor_timed/" in args.output) == inductor_timed, (part, args.output)
        if inductor_timed:
            assert args.search_space == "DEFAULT", part


@pytest.mark.parametrize("part", ["remeasure-hinted", "remeasure-lead"])
def test_remeasure_part_measures_every_file_again_and_merges_it_in_place(tmp_path, part):
    """remeasure-hinted (remeasure-lead): one `diode remeasure --layout-hinted --only
    $DATA/unhinted` (`--without-lead --below-us 30`) per dataset file of realmodels, validation and train
    (attention files of train first), each into $DATA/remeasured/<folder>/<file>; where it wrote
    one, `diode dataset merge --replace` of the file and it, moved over the file, and the
    re-measurement removed."""
    from torch_diode.cli import build_parser, hoist_global_options
    from torch_diode.collection.sweep_state import SweepSummary

    files = [
        ("realmodels", "h100_realmodels.msgpack.gz"),
        ("validation", "h100_v.msgpack.gz"),
        ("train", "h100_a.msgpack.gz"),
        ("train", "h100_v2_attn_qk.msgpack.gz"),
        ("train", "h100_b.msgpack.gz"),
    ]
    for folder, name in files:
        (tmp_path / "h100" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "h100" / folder / name).write_text("old")

    # the stand-in writes every output it is given, except the re-measurement of h100_b (as
    # `diode remeasure` where no problem is hinted), and prints diode's summary line; the first run
    # of h100_a stops half way with exit status 0, so it is run until a run's summary accounts for
    # both of its problems (measured then or before); the first run of h100_v skips a problem (one
    # that ended two runs, counted done as well), so it is run until a run measures nothing
    def summary(shapes: int, **counts: int) -> str:
        return f"summary: {shapes} shapes: {SweepSummary(**counts, seconds=1.0).line()} -> out"

    wrapper = tmp_path / "writes_outputs.sh"
    wrapper.write_text(
        'bash "$FAKE" "$@" || exit $?\n'
        'echo "${TORCH_DIODE_NO_AUTOREGISTER:-0} $1" >> "$CALLS.registration"\n'
        'dry=0; for a in "$@"; do [ "$a" = --dry-run ] && dry=1; done\n'
        'out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done\n'
        'case "$out" in\n'
        '  "") ;;\n'
        '  *h100_b.msgpack.gz) echo "none of its 3 problems gets a layout hint; nothing to do" ;;\n'
        '  *) if [ $dry = 1 ]; then echo "2 of its 2 problems to measure again"; exit 0; fi\n'
        '    case "$out" in\n'
        '  *h100_a.msgpack.gz|*h100_v.msgpack.gz) mkdir -p "$(dirname "$out")"\n'
        '    if [ -e "$out.half" ]; then echo "new" > "$out"; rm "$out.half"\n'
        f'      case "$out" in *h100_a*) echo "{summary(2, problems_measured=1, problems_resumed=1)}" ;;\n'
        f'        *) echo "{summary(2, problems_resumed=2, problems_skipped=1)}" ;; esac\n'
        '    else touch "$out.half"\n'
        f'      case "$out" in *h100_a*) echo "{summary(2, problems_measured=1)}" ;;\n'
        f'        *) echo "{summary(2, problems_measured=1, problems_resumed=1, problems_skipped=1)}" ;; esac; fi ;;\n'
        '  *) mkdir -p "$(dirname "$out")" && echo "new" > "$out"\n'
        f'    echo "{summary(1, problems_measured=1, timed_configs=4)}" ;;\n'
        "    esac ;;\n"
        "esac\n"
    )
    (tmp_path / "h100" / "unhinted").mkdir()  # the list of the problems to measure again
    rc, calls = run_part(tmp_path, [0] * 20, 2, part, wrapper=wrapper)
    assert rc == 0, calls
    parser = build_parser()
    parsed = [parser.parse_args(hoist_global_options(parser, call.split()[1:])) for call in calls]
    # each file is first asked whether it holds anything to measure again (--dry-run), without the
    # import-time registration, as the merges are run; h100_b says it holds nothing and is not measured
    registration = (tmp_path / "calls.registration").read_text().splitlines()
    assert [r.split()[0] == "1" for r in registration] == [a.command == "dataset" or a.dry_run for a in parsed]
    asked = [Path(a.input).name for a in parsed if a.command == "remeasure" and a.dry_run]
    assert asked == [
        "h100_realmodels.msgpack.gz",
        "h100_v.msgpack.gz",
        "h100_v2_attn_qk.msgpack.gz",
        "h100_a.msgpack.gz",
        "h100_b.msgpack.gz",
    ]
    remeasured = [a for a in parsed if a.command == "remeasure" and not a.dry_run]
    assert [Path(a.input).name for a in remeasured] == [
        "h100_realmodels.msgpack.gz",
        "h100_v.msgpack.gz",  # a problem skipped, then nothing left to measure
        "h100_v.msgpack.gz",
        "h100_v2_attn_qk.msgpack.gz",
        "h100_a.msgpack.gz",  # half, then the rest
        "h100_a.msgpack.gz",
    ]
    for a in [a for a in parsed if a.command == "remeasure"]:
        if part == "remeasure-hinted":
            assert a.layout_hinted and not a.without_lead and a.only == [str(tmp_path / "h100" / "unhinted")]
        else:
            # the problems whose timings the lead changes: the short kernels
            assert a.without_lead and a.below_us == 30 and not a.layout_hinted and a.only is None
        assert Path(a.output).parent.parent.name == ("remeasured" if part == "remeasure-hinted" else "remeasured_lead")
        assert Path(a.output).name == Path(a.input).name and Path(a.output).parent.name == Path(a.input).parent.name
    merges = [a for a in parsed if a.command == "dataset"]
    assert len(merges) == 4 and all(a.replace for a in merges)
    for folder, name in files:
        merged = name != "h100_b.msgpack.gz"
        assert (tmp_path / "h100" / folder / name).read_text().strip() == ("new" if merged else "old"), name
        assert not list((tmp_path / "h100").glob(f"remeasured*/{folder}/{name}"))
    assert not list((tmp_path / "h100").rglob("*merged*"))


@pytest.mark.parametrize("part", ["remeasure-hinted", "remeasure-lead"])
def test_remeasure_part_deals_its_files_to_the_gpus(tmp_path, part):
    """GPUS=2 remeasure-hinted (remeasure-lead): the part's files (in its order) alternate between
    the two GPUs, which re-measure and merge them at once, each merge into a file of its own."""
    names = [f"h100_{c}.msgpack.gz" for c in "abcde"]
    (tmp_path / "h100" / "train").mkdir(parents=True)
    for name in names:
        (tmp_path / "h100" / "train" / name).write_text("old")
    fake = tmp_path / "fake_diode.sh"
    fake.write_text(
        'echo "$CUDA_VISIBLE_DEVICES $*" >> "$CALLS"\n'
        'case " $* " in *" --dry-run "*) echo "1 of its 1 problems to measure again"; exit 0 ;; esac\n'
        'out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done\n'
        'case "$out" in\n'
        '  *.merged.msgpack.gz) echo "new" > "$out" ;;\n'
        '  *) if [ -e "$out" ]; then echo "summary: 1 shapes: 0 problems measured, 1 already done";\n'
        '    else mkdir -p "$(dirname "$out")" && echo "new" > "$out"\n'
        '      echo "summary: 1 shapes: 1 problems measured"; fi ;;\n'
        "esac\n"
    )
    proc, calls = run_on_gpus(tmp_path, fake, [part])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    gpus = {}
    for line in calls.read_text().splitlines():
        gpu, *argv = line.split()
        if argv[0] == "remeasure":
            gpus.setdefault(Path(argv[1]).name, set()).add(gpu)
    assert gpus == {name: {str(i % 2)} for i, name in enumerate(names)}
    assert all((tmp_path / "h100" / "train" / name).read_text().strip() == "new" for name in names)
    assert not list((tmp_path / "h100").rglob("*merged*")) and "[gpu 1] " in proc.stdout


@pytest.mark.parametrize(
    "part", [f"{kind}/{shard}" for kind in ("remeasure-hinted", "remeasure-lead") for shard in ("2/2", "1", "x/2")]
)
def test_a_remeasure_shard_out_of_range_is_an_unknown_part(tmp_path, part):
    rc, calls = run_part(tmp_path, [0], 0, part)
    assert rc == 2 and calls == []


@pytest.mark.parametrize("part, precision", [("fill-f32", "highest"), ("fill-tf32", "high")])
def test_fill_parts_snapshot_the_coverage_before_each_design_and_keep_it(tmp_path, part, precision):
    """fill-f32/fill-tf32: per design (every op and layout, then attention, long K and vocabulary N) a
    coverage report of $DATA/train with targets, written once, then `diode collect --fill-cells`
    of that report into a file of the design's own; run again, the kept snapshots are read, not
    written again (the same draw resumes)."""
    from torch_diode.cli import build_parser, hoist_global_options

    wrapper = tmp_path / "writes_reports.sh"
    wrapper.write_text(
        'bash "$FAKE" "$@" || exit $?\n'
        'out=""; while [ $# -gt 0 ]; do [ "$1" = --report-json ] && out=$2; shift; done\n'
        '[ -z "$out" ] || echo "{}" > "$out"\n'
    )
    parser = build_parser()
    rc, calls = run_part(tmp_path, [0] * 8, 0, part, wrapper=wrapper)
    assert rc == 0, calls
    parsed = [parser.parse_args(hoist_global_options(parser, c.split()[1:])) for c in calls]
    assert [a.command for a in parsed] == ["dataset", "collect"] * 4
    tag = part.removeprefix("fill-")
    designs = ["ops", "attn", "hugek", "vocab"]
    for design, report, collect in zip(designs, parsed[::2], parsed[1::2]):
        assert report.targets and report.inputs == [str(tmp_path / "h100" / "train")]
        assert report.report_json == str(tmp_path / "h100" / "fill" / f"h100_{tag}_{design}.json")
        assert collect.fill_cells == report.report_json and collect.float32_matmul_precision == precision
        assert collect.dtypes == ["float32"] and collect.exclude and collect.search_mode == "fast"
        assert collect.output == str(tmp_path / "h100" / "train" / f"h100_fill_{tag}_{design}.msgpack.gz")
    assert len({a.seed for a in parsed[1::2]}) == 4
    (tmp_path / "calls").unlink()
    rc, calls = run_part(tmp_path, [0] * 4, 0, part, wrapper=wrapper)
    assert rc == 0 and [c.split()[1] for c in calls] == ["collect"] * 4, calls


def test_inductor_misaligned_part_measures_the_misaligned_real_model_gemms(tmp_path, monkeypatch):
    """inductor-misaligned: a shapeset of exactly the realmodels_heldout entries with misaligned
    rows, measured by stock max-autotune into inductor_timed/."""
    from torch_diode.collection.shapes import load_shapeset

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    rc, calls = run_part(tmp_path, [0], 0, "inductor-misaligned")
    assert rc == 0 and len(calls) == 1, (rc, calls)
    shapes = tmp_path / "realmodels_heldout_misaligned.json"
    assert f"--shapeset {shapes} " in calls[0] and "/inductor_timed/h100_realmodels_misaligned" in calls[0]
    every = load_shapeset("realmodels_heldout")
    want = [(e.model, e.layer, e.problem) for e in every if e.problem.misaligned_operands]
    assert 0 < len(want) < len(every)
    assert [(e.model, e.layer, e.problem) for e in load_shapeset(shapes)] == want


def test_parts_are_dealt_to_the_gpus_and_run_side_by_side(tmp_path):
    """GPUS=2: parts 0 and 2 run on GPU 0 one after the other, part 1 on GPU 1, both GPUs at once
    (the stand-in waits until the other GPU has started); the first failing GPU's code is the
    script's."""
    fake = tmp_path / "fake_diode.sh"
    fake.write_text(
        'echo "$CUDA_VISIBLE_DEVICES ${*: -1}" >> "$CALLS"\n'
        'touch "$CALLS.gpu$CUDA_VISIBLE_DEVICES"\n'
        'for _ in $(seq 100); do [ -e "$CALLS.gpu$((1 - CUDA_VISIBLE_DEVICES))" ] && break; sleep 0.05; done\n'
        'case "${*: -1}" in *v2_odd*) exit 2 ;; esac\n'
    )
    proc, calls = run_on_gpus(tmp_path, fake, ["v2-layouts", "v2-odd", "v2-hidden"])
    lines = calls.read_text().splitlines()
    gpu_of = {Path(out).name: gpu for gpu, out in (line.split() for line in lines)}
    assert gpu_of == {
        "h100_v2_layouts.msgpack.gz": "0",
        "h100_v2_odd.msgpack.gz": "1",
        "h100_v2_hidden.msgpack.gz": "0",
    }
    assert [Path(line.split()[1]).name for line in lines if line.startswith("0 ")] == [
        "h100_v2_layouts.msgpack.gz",
        "h100_v2_hidden.msgpack.gz",
    ]
    assert proc.returncode == 2 and "[gpu 1] " in proc.stdout, proc.stdout


@pytest.mark.parametrize("gpus", ["two", "0", "-1"])
def test_a_bad_gpu_count_is_one_line_and_runs_nothing(tmp_path, gpus):
    calls = tmp_path / "calls"
    env = script_env(tmp_path, "echo", calls, GPUS=gpus)
    proc = subprocess.run(
        ["bash", str(ROOT / "data" / "h100" / "collect.sh"), "v2-layouts"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stderr.strip() == f"GPUS: expected a number of GPUs (1 or more), got '{gpus}'"
    assert "v2-layouts" not in proc.stdout


def test_remeasure_part_never_merges_a_file_whose_runs_keep_measuring(tmp_path):
    """A re-measurement whose every run ends with status 0 and problems still measured is run
    RETRIES + 1 times, then the part fails with the old file in place and nothing merged."""
    (tmp_path / "h100" / "train").mkdir(parents=True)
    (tmp_path / "h100" / "train" / "h100_a.msgpack.gz").write_text("old")
    wrapper = tmp_path / "never_done.sh"
    wrapper.write_text('bash "$FAKE" "$@" || exit $?\necho "summary: 9 shapes: 1 problems measured"\n')
    rc, calls = run_part(tmp_path, [0] * 10, 2, "remeasure-hinted", wrapper=wrapper)
    assert rc == 1 and len(calls) == 4 and all(" remeasure " in f" {c} " for c in calls), calls
    assert "--dry-run" in calls[0] and not any("--dry-run" in c for c in calls[1:]), calls
    assert (tmp_path / "h100" / "train" / "h100_a.msgpack.gz").read_text() == "old"


@pytest.mark.parametrize("card, want_rc", [("NVIDIA H200", 2), ("NVIDIA H100 80GB HBM3", 0)])
def test_the_script_measures_only_on_its_datas_gpu(tmp_path, card, want_rc):
    """data/h100 on a machine whose nvidia-smi names an H200 (a call for H100s may be given H200s):
    exit 2 before any diode command; on an H100 the part runs."""
    fake = tmp_path / "fake_diode.sh"
    fake.write_text('echo "$*" >> "$CALLS"\n')
    env = {"PATH": gpu_path(tmp_path / "smi", card)}
    proc, calls = run_on_gpus(tmp_path, fake, ["train-mm"], gpus=1, env=env)
    assert proc.returncode == want_rc, proc.stderr
    if want_rc:
        assert "H100" in proc.stderr and card in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert not calls.exists()
    else:
        assert len(calls.read_text().splitlines()) == 1

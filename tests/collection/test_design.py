"""`diode sample`: the design of a new GPU's first measurements (torch_diode.collection.design), on
the repository's measured data."""

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from torch_diode.cli import build_parser
from torch_diode.collection.design import RACE_SCALE, candidates, design
from torch_diode.collection.shapes import load_shapeset, problem_identity
from torch_diode.coverage import settings_say_tf32
from torch_diode.dataset_io import load_dataset, load_datasets, load_each, save_dataset
from torch_diode.features import is_aten
from torch_diode.types import Dataset, problem_key

ROOT = Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "data" / "h100" / "validation"
TF32_FILE = ROOT / "data" / "h100" / "train" / "h100_v2_tf32_attn_pv_chunk0000.msgpack.gz"


@pytest.fixture(scope="module")
def pool():
    return candidates(load_each([VALIDATION]))


def cells(sample) -> set[str]:
    return {c for cand in sample for c in cand.cells}


def test_the_design_covers_more_cells_than_random_samples_of_its_size(pool):
    sample = design(pool, 40, seed=0)
    assert len(sample) == 40 and len({c.problem for c in sample}) == 40
    rng = random.Random(0)
    best_random = max(len(cells(rng.sample(pool, 40))) for _ in range(20))
    assert len(cells(sample)) > best_random


def test_every_problem_drawn_adds_a_cell_while_the_data_has_one_the_sample_lacks(pool):
    sample = design(pool, 60, seed=0)
    every = cells(pool)
    for i, cand in enumerate(sample):
        before = cells(sample[:i])
        if before == every:
            break
        assert set(cand.cells) - before, f"draw {i} adds no cell while {sorted(every - before)[:3]} are missing"
    assert cells(sample) == every


def test_the_design_is_deterministic_and_takes_the_whole_pool_when_asked_for_more(pool):
    assert [c.problem for c in design(pool, 25, seed=3)] == [c.problem for c in design(pool, 25, seed=3)]
    assert len(design(pool, len(pool) + 5)) == len(pool)
    with pytest.raises(ValueError, match="at least one"):
        design(pool, 0)


def test_candidates_leave_out_held_out_tf32_and_unmeasured_problems():
    held = load_shapeset("realmodels_heldout")[0].problem
    data = load_datasets([VALIDATION])
    hw, problem, timings = next(iter(data.problems()))
    tf32 = next((hw, p, ts) for hw, p, ts in data.problems() if p.dtype_a == "float32")
    planted = Dataset()
    planted.add(hw, problem, timings)
    planted.add(hw, held, timings)  # a held-out real model's problem
    planted.add(hw, replace(problem, M=problem.M + 1), timings[:1])  # one timing: nothing to rank
    tf32_problem = replace(tf32[1], M=tf32[1].M + 3)
    planted.add(hw, tf32_problem, [replace(t, config=replace(t.config, allow_tf32=True)) for t in tf32[2]])
    kept = {c.problem for c in candidates([planted])}
    assert kept == {problem_identity(problem)}


def test_a_file_whose_settings_say_tf32_gives_no_candidate_and_another_file_measures_its_problems_without():
    """The coverage report's rule (coverage.measured_with_tf32), file by file: the fp32 problems of a
    file whose collection ran with TF32 are left out though no Triton config of theirs allows TF32
    (attention-sized: Inductor sets allow_tf32 from N, K >= 512 only); measured again without TF32 in
    another file, they are candidates with that file's times alone."""
    tf32 = load_dataset(TF32_FILE)
    assert settings_say_tf32(tf32)
    assert not any(t.config.allow_tf32 and t.config.is_tiled for _, _, ts in tf32.problems() for t in ts)
    assert candidates([tf32]) == []
    plain = Dataset(metadata={"sources": [{"tool": "torch_diode.collect", "settings": {"tf32": False}}]})
    for hw, problem, timings in tf32.problems():  # cuBLAS twice as slow without TF32
        plain.add(
            hw, problem, [replace(t, time_us=t.time_us * 2, samples_us=()) if is_aten(t.config) else t for t in timings]
        )
    assert [(c.problem, c.race) for c in candidates([tf32, plain])] == [
        (c.problem, c.race) for c in candidates([plain])
    ]
    assert len(candidates([plain])) == tf32.num_problems
    # TF32 changes only fp32 dots: the file's problems in half precision are candidates
    half = Dataset(metadata=tf32.metadata)
    for hw, problem, timings in tf32.problems():
        half.add(hw, replace(problem, dtype_a="bfloat16", dtype_b="bfloat16", dtype_out="bfloat16"), timings)
    assert len(candidates([half])) == tf32.num_problems


def test_diode_sample_reads_each_file_s_tf32_settings(tmp_path, diode_cli):
    """`diode sample` of a TF32 file and another: the sample holds the other's problems only."""
    other = ROOT / "data" / "sample" / "h100_sample.json.gz"
    out = tmp_path / "sample.json"
    code, stdout, _ = diode_cli("sample", TF32_FILE, other, "-n", 10000, "-o", out)
    assert code == 0, stdout
    expected = {c.problem for c in candidates(load_each([other]))}
    assert expected and {e.problem for e in load_shapeset(out)} == expected
    out.unlink()
    code, _, err = diode_cli("sample", TF32_FILE, "-o", out)  # nothing left to sample: one line, nothing written
    assert code == 2 and len(err.strip().splitlines()) == 1 and "DATA" in err and "TF32" in err, err
    assert not out.exists()


def test_the_race_sets_cublas_against_every_compiled_kernel_decompose_k_included():
    """decompose_k has no block sizes but compiles a kernel: it races cuBLAS on the compiled side
    (features.is_aten's rule), so a problem where it alone is measured beside cuBLAS has a race."""
    data = load_datasets([VALIDATION])
    hw, problem, timings = next(
        (hw, p, ts) for hw, p, ts in data.problems() if any(t.config.template_id == "decompose_k" for t in ts)
    )
    ok = [t for t in timings if not t.failed]
    aten = [t for t in ok if is_aten(t.config)]
    decompose_k = [t for t in ok if t.config.template_id == "decompose_k"]
    assert aten and decompose_k and not any(t.config.is_tiled for t in decompose_k)
    planted = Dataset()
    planted.add(hw, problem, aten + decompose_k)
    (cand,) = candidates([planted])
    gap = math.log(min(t.time_us for t in aten) / min(t.time_us for t in decompose_k))
    assert cand.race == pytest.approx(math.exp(-abs(gap) / RACE_SCALE)) and cand.race > 0


def test_diode_sample_writes_a_shapeset_that_collect_shapeset_reads(tmp_path, diode_cli, pool):
    out = tmp_path / "sample.json"
    code, stdout, _ = diode_cli("sample", VALIDATION, "-n", 30, "-o", out)
    assert code == 0, stdout
    # the command it prints runs as printed, its compile workers left to the collector's default
    # (the CPUs of the machine that measures, which is not this one)
    command = stdout.split("diode collect-shapeset ", 1)[1].splitlines()[0].split()
    assert "--workers" not in command
    assert build_parser().parse_args(["collect-shapeset", *command]).shapeset == str(out)
    entries = load_shapeset(out)
    assert [e.problem for e in entries] == [c.problem for c in design(pool, 30)]
    measured = {problem_key(p) for _, p, _ in load_datasets([VALIDATION]).problems()}
    assert all(problem_key(e.problem) in measured for e in entries)
    first = out.read_bytes()
    assert diode_cli("sample", VALIDATION, "-n", 30, "-o", out)[0] == 0 and out.read_bytes() == first


def test_diode_sample_refuses_to_write_over_a_dataset(tmp_path, diode_cli):
    dataset = tmp_path / "data.json.gz"
    dataset.write_bytes((ROOT / "data" / "sample" / "h100_sample.json.gz").read_bytes())
    code, _, err = diode_cli("sample", VALIDATION, "-n", 5, "-o", dataset)
    assert code == 2 and "--output" in err and dataset.read_bytes()[:2] == b"\x1f\x8b"


def test_diode_sample_refuses_the_data_of_several_gpus(tmp_path, diode_cli):
    """A sample is drawn from one GPU's measurements: files of two GPUs are refused in one line
    naming both, before anything is written."""
    data = load_datasets([ROOT / "data" / "sample" / "h100_sample.json.gz"])
    other = Dataset()
    for hw, problem, timings in data.problems():
        other.add(replace(hw, device_name="NVIDIA H200"), problem, timings)
    save_dataset(other, tmp_path / "h200.json.gz")
    out = tmp_path / "sample.json"
    code, _, err = diode_cli(
        "sample", ROOT / "data" / "sample" / "h100_sample.json.gz", tmp_path / "h200.json.gz", "-o", out
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "DATA" in err and "NVIDIA H200" in err and "H100" in err and "not one" in err, err
    assert not out.exists()

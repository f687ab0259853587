"""The data model: exact round trips, merge semantics, and clear errors on bad files."""

import gzip
import json
import math
from pathlib import Path

import msgpack
import pytest

from torch_diode.dataset_io import SCHEMA_VERSION, dataset_to_dict, load_dataset, load_datasets, save_dataset
from torch_diode.formats import DatasetFormatError
from torch_diode.types import Dataset, Hardware, KernelConfig, Problem, TimedConfig

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "h100_sample.json.gz"

H100 = Hardware("NVIDIA H100 80GB HBM3", (9, 0), 132, 85017493504, 232448, "2.11.0+cu130", "3.6.0", "13.0")
CPU = Hardware("CPU x86_64", None, 2, 1 << 34, 1 << 20, "2.13.0+cpu")

MM = Problem(
    "mm",
    1,
    1000,
    700,
    1024,
    "float16",
    "float16",
    "float16",
    transpose_b=True,
    strides_a=(1024, 1),
    strides_b=(1, 1024),
)
BADD = Problem("baddbmm", 8, 256, 256, 64, "bfloat16", "bfloat16", "float32", bias_shape=(1, 1, 256))
TRITON = KernelConfig(
    "triton::mm",
    64,
    64,
    32,
    8,
    3,
    4,
    even_k=True,
    acc_type="tl.float32",
    extras={"prefix_args": 1, "epilogue_fn_hash": "x"},
)
ATEN = KernelConfig("aten::mm")


def make_dataset() -> Dataset:
    ds = Dataset(metadata={"created": "2026-11-22T00:00:00+00:00", "sources": [{"tool": "test", "settings": {"n": 1}}]})
    ds.add(
        H100,
        MM,
        [
            TimedConfig(TRITON, 11.25),
            TimedConfig(ATEN, 12.5),
            TimedConfig.failure(KernelConfig("triton::mm", 256, 256, 128, 8, 5, 8)),
        ],
    )
    ds.add(H100, BADD, [TimedConfig(ATEN, 9.0, samples_us=(8.0, 9.0, 10.0)), TimedConfig(TRITON, 1 / 3)])
    ds.add(CPU, MM, [TimedConfig(ATEN, 500.0)])
    return ds


@pytest.mark.parametrize("suffix", [".json", ".json.gz", ".msgpack", ".msgpack.gz"])
def test_round_trip_is_exact(tmp_path, suffix):
    ds = make_dataset()
    path = save_dataset(ds, tmp_path / f"d{suffix}")
    back = load_dataset(path)
    assert dataset_to_dict(back) == dataset_to_dict(ds)
    assert [(h, p, t) for h, p, t in back.problems()] == [(h, p, t) for h, p, t in ds.problems()]
    # floats survive bit-exactly, failures stay failures
    timings = back.entries[0].ops["baddbmm"][BADD]
    assert timings[1].time_us == 1 / 3
    failed = back.entries[0].ops["mm"][MM][2]
    assert failed.failed and math.isinf(failed.time_us)


def test_json_and_msgpack_hold_the_same_data(tmp_path):
    ds = make_dataset()
    a = load_dataset(save_dataset(ds, tmp_path / "a.json"))
    b = load_dataset(save_dataset(ds, tmp_path / "b.msgpack"))
    assert dataset_to_dict(a) == dataset_to_dict(b)


def test_configs_are_stored_once(tmp_path):
    d = dataset_to_dict(make_dataset())
    templates = [c["template_id"] for c in d["configs"]]
    assert templates.count("aten::mm") == 1  # shared by three problems


def test_sample_dataset_is_real_and_loads():
    ds = load_dataset(SAMPLE)
    assert ds.num_problems >= 10
    (hw,) = [e.hardware for e in ds.entries]
    assert hw.device_name.startswith("NVIDIA H100") and hw.sm_count == 132
    ops = {p.op for _, p, _ in ds.problems()}
    assert ops == {"mm", "addmm", "bmm", "baddbmm"}
    for _, problem, timings in ds.problems():
        ids = {t.config.template_id for t in timings}
        assert any(i.startswith("aten::") for i in ids) and any(i.startswith("triton::") for i in ids)
        assert all(t.failed or t.time_us > 0 for t in timings)


# ----- merge semantics ------------------------------------------------------------------------
def test_merge_keeps_hardware_apart_and_pools_samples():
    a = Dataset()
    a.add(H100, MM, [TimedConfig(ATEN, 10.0), TimedConfig.failure(TRITON)])
    b = Dataset()
    b.add(H100, MM, [TimedConfig(ATEN, 14.0), TimedConfig(TRITON, 7.0)])
    b.add(CPU, MM, [TimedConfig(ATEN, 400.0)])
    a.merge(b)
    assert [e.hardware for e in a.entries] == [H100, CPU]
    aten, triton = a.entries[0].ops["mm"][MM]
    assert aten.samples_us == (10.0, 14.0) and aten.time_us == 12.0  # median of both samples
    assert not triton.failed and triton.time_us == 7.0  # a success beats a failure
    assert a.entries[1].ops["mm"][MM][0].time_us == 400.0


def test_merge_of_three_samples_takes_the_median():
    ds = Dataset()
    for t in (30.0, 10.0, 11.0):
        ds.add(H100, MM, [TimedConfig(ATEN, t)])
    (timed,) = ds.entries[0].ops["mm"][MM]
    assert timed.time_us == 11.0 and sorted(timed.samples_us) == [10.0, 11.0, 30.0]


def test_merge_records_sources_and_different_software_stays_apart():
    other = Hardware(**{**H100.__dict__, "torch_version": "2.13.0"})
    a, b = Dataset(metadata={"sources": [{"tool": "a"}]}), Dataset(metadata={"sources": [{"tool": "b"}]})
    a.add(H100, MM, [TimedConfig(ATEN, 1.0)])
    b.add(other, MM, [TimedConfig(ATEN, 2.0)])
    a.merge(b)
    assert len(a.entries) == 2
    assert [s["tool"] for s in a.metadata["sources"]] == ["a", "b"]


def test_merge_keeps_each_source_record_once():
    """A re-measurement merged a second time (a resumed merge) or two chunks of one collection add
    no record the file holds already; records that differ stay, in order."""
    a = Dataset(metadata={"sources": [{"tool": "a"}, {"tool": "r", "below_us": 30.0}]})
    b = Dataset(metadata={"sources": [{"tool": "r", "below_us": 30.0}, {"tool": "r", "below_us": 10.0}]})
    a.merge(b).merge(b)
    assert a.metadata["sources"] == [{"tool": "a"}, {"tool": "r", "below_us": 30.0}, {"tool": "r", "below_us": 10.0}]


def test_merge_joins_the_resume_records():
    """A merged collection file still says which problems are done or skipped (a skip that the
    other input measured is done), so a resumed collection into it measures none of them again."""
    a = Dataset(metadata={"sources": [], "completed": ["k1", "k2"], "skipped": [{"problem_key": "k3", "reason": "x"}]})
    b = Dataset(metadata={"sources": [], "completed": ["k2", "k3"], "skipped": [{"problem_key": "k4", "reason": "y"}]})
    a.merge(b)
    assert a.metadata["completed"] == ["k1", "k2", "k3"]
    assert a.metadata["skipped"] == [{"problem_key": "k4", "reason": "y"}]
    plain = Dataset(metadata={"sources": []}).merge(Dataset(metadata={"sources": []}))
    assert "completed" not in plain.metadata and "skipped" not in plain.metadata


def test_a_subset_claims_no_left_out_problem_done(tmp_path):
    """A subset's resume record names the problems it keeps (and those done without timings, which
    no predicate judged), not the ones left out: a subset file given to --only or --exclude stands
    for its own problems."""
    from torch_diode.collection.shapes import held_keys
    from torch_diode.types import problem_key

    d = make_dataset()
    problems = [p for _, p, _ in d.problems()]
    assert len({problem_key(p) for p in problems}) >= 2
    kept = problems[0]
    d.metadata["completed"] = [*dict.fromkeys(problem_key(p) for p in problems), "mm:1x1x1x1:failed"]
    sub = d.subset(lambda hw, p: p == kept)
    assert sub.metadata["completed"] == [problem_key(kept), "mm:1x1x1x1:failed"]
    assert len(d.metadata["completed"]) == len({problem_key(p) for p in problems}) + 1  # the source is unchanged
    save_dataset(sub, tmp_path / "sub.json")
    assert held_keys([str(tmp_path / "sub.json")]) == {problem_key(kept), "mm:1x1x1x1:failed"}
    assert "completed" not in Dataset(metadata={"sources": []}).subset(lambda hw, p: True).metadata
    # a problem kept on one GPU and left out on the other stays done
    h100_only = d.subset(lambda hw, p: hw == H100)
    assert problem_key(MM) in h100_only.metadata["completed"] and problem_key(BADD) in h100_only.metadata["completed"]
    cpu_only = d.subset(lambda hw, p: hw == CPU)
    assert problem_key(MM) in cpu_only.metadata["completed"] and problem_key(BADD) not in cpu_only.metadata["completed"]


def test_load_datasets_merges_a_folder(tmp_path):
    save_dataset(make_dataset(), tmp_path / "x" / "one.json")
    save_dataset(make_dataset(), tmp_path / "x" / "sub" / "two.msgpack.gz")
    merged = load_datasets([tmp_path / "x"])
    assert merged.num_problems == make_dataset().num_problems
    aten = merged.entries[0].ops["mm"][MM][1]
    assert aten.samples_us == (12.5, 12.5)
    only_json = load_datasets([tmp_path / "x"], extensions=["json"])
    assert only_json.entries[0].ops["mm"][MM][1].samples_us == (12.5,)


# ----- errors ---------------------------------------------------------------------------------
def _write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def _good() -> dict:
    return dataset_to_dict(make_dataset())


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["hardware"][0]["ops"]["mm"][0]["problem"].pop("M"), "hardware[0].ops.mm[0].problem.M"),
        (
            lambda d: d["hardware"][0]["ops"]["mm"][0]["problem"].__setitem__("K", "64"),
            "hardware[0].ops.mm[0].problem.K",
        ),
        (
            lambda d: d["hardware"][0]["ops"]["mm"][0]["problem"].__setitem__("N", True),
            "hardware[0].ops.mm[0].problem.N",
        ),
        (
            lambda d: d["hardware"][0]["ops"]["mm"][0]["problem"].__setitem__("dtype_a", "float17"),
            "hardware[0].ops.mm[0].problem.dtype_a",
        ),
        (lambda d: d["hardware"][0]["ops"]["mm"][0]["problem"].__setitem__("M", 0), "hardware[0].ops.mm[0].problem.M"),
        (lambda d: d["hardware"][0]["hardware"].pop("sm_count"), "hardware[0].hardware.sm_count"),
        (lambda d: d["configs"][0].__setitem__("block_m", 64.5), "configs[0].block_m"),
        (lambda d: d["configs"][0].pop("even_k"), "configs[0].even_k"),
        (
            lambda d: d["hardware"][0]["ops"]["mm"][0]["time_us"].__setitem__(0, "fast"),
            "hardware[0].ops.mm[0].time_us[0]",
        ),
        (
            lambda d: d["hardware"][0]["ops"]["mm"][0]["time_us"].__setitem__(0, -1.0),
            "hardware[0].ops.mm[0].time_us[0]",
        ),
        (lambda d: d["hardware"][0]["ops"]["mm"][0]["config"].__setitem__(0, 999), "hardware[0].ops.mm[0].config[0]"),
        (lambda d: d["hardware"][0]["ops"]["mm"][0]["config"].__setitem__(0, True), "hardware[0].ops.mm[0].config[0]"),
        (lambda d: d["hardware"][0]["ops"]["mm"][0]["failed"].__setitem__(0, 0), "hardware[0].ops.mm[0].failed[0]"),
        (lambda d: d["hardware"][0]["ops"]["mm"][0]["failed"].pop(), "hardware[0].ops.mm[0].failed"),
        (lambda d: d["hardware"][0]["ops"].__setitem__("conv", []), "hardware[0].ops.conv"),
        (lambda d: d.pop("configs"), "configs"),
        (lambda d: d.__setitem__("format", "something-else"), "format"),
    ],
)
def test_bad_fields_name_the_file_and_field(tmp_path, mutate, field):
    data = _good()
    mutate(data)
    path = _write_json(tmp_path / "bad.json", data)
    with pytest.raises(DatasetFormatError) as info:
        load_dataset(path)
    assert info.value.field_path == field
    assert str(path) in str(info.value) and field in str(info.value)


def test_newer_schema_is_refused(tmp_path):
    data = _good()
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(DatasetFormatError, match="upgrade torch-diode") as info:
        load_dataset(_write_json(tmp_path / "new.json", data))
    assert info.value.field_path == "schema_version"


@pytest.mark.parametrize("suffix", [".json", ".msgpack", ".json.gz", ".msgpack.gz"])
def test_truncated_files_are_refused(tmp_path, suffix):
    path = save_dataset(make_dataset(), tmp_path / f"d{suffix}")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DatasetFormatError, match="truncated or corrupt") as info:
        load_dataset(path)
    assert str(path) in str(info.value)


def test_garbage_and_wrong_top_level_type(tmp_path):
    (tmp_path / "g.msgpack").write_bytes(b"\xc1\xc1\xc1")
    with pytest.raises(DatasetFormatError):
        load_dataset(tmp_path / "g.msgpack")
    (tmp_path / "l.msgpack").write_bytes(msgpack.packb([1, 2, 3]))
    with pytest.raises(DatasetFormatError, match="expected an object"):
        load_dataset(tmp_path / "l.msgpack")
    (tmp_path / "z.json.gz").write_bytes(gzip.compress(b"{not json"))
    with pytest.raises(DatasetFormatError, match="not valid json"):
        load_dataset(tmp_path / "z.json.gz")


def test_unknown_suffix_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset suffix"):
        save_dataset(make_dataset(), tmp_path / "d.csv")
    with pytest.raises(DatasetFormatError, match="cannot read"):
        load_dataset(tmp_path / "missing.json")


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    path = save_dataset(make_dataset(), tmp_path / "d.json")
    before = path.read_bytes()
    import torch_diode.fileio as fileio

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(fileio.os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        save_dataset(Dataset(), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["d.json"]  # no temporary left behind


def test_problem_and_config_validation():
    with pytest.raises(ValueError, match="Problem.op"):
        Problem("conv", 1, 1, 1, 1, "float16", "float16", "float16")
    with pytest.raises(ValueError, match="Problem.B"):
        Problem("mm", 2, 1, 1, 1, "float16", "float16", "float16")
    with pytest.raises(ValueError, match="bias_shape"):
        Problem("mm", 1, 1, 1, 1, "float16", "float16", "float16", bias_shape=(1,))
    with pytest.raises(ValueError, match="time_us"):
        TimedConfig(ATEN, float("nan"))
    assert KernelConfig("triton::mm", 16, 16, 16, 1, 1, 2, extras=[("b", 1), ("a", 2)]).extras == (("a", 2), ("b", 1))


def test_misaligned_operands_follow_layout_strides_and_dtype():
    def p(m, n, k, dtype="float16", **kw):
        return Problem("mm", 1, m, n, k, dtype, dtype, dtype, **kw).misaligned_operands

    assert p(64, 64, 64) == ()
    assert p(2048, 512, 479, transpose_b=True) == ("a", "b")  # K=479: both operands' rows
    assert p(197, 197, 64) == ("b", "out")  # B is K x N: rows of N=197
    assert p(197, 197, 64, transpose_b=True) == ("out",)  # attention scores: B stored N x K
    assert p(100, 64, 64, transpose_a=True) == ("a",)  # A stored K x M: rows of M=100 halves
    assert p(100, 64, 64, dtype="float32", transpose_a=True) == ()  # 400 bytes
    assert p(64, 64, 64, strides_a=(72, 1)) == ()  # a padded row stride (144 bytes) is aligned
    assert p(64, 64, 64, strides_a=(65, 1)) == ("a",)
    # where nothing steps between rows, alignment does not matter
    assert p(1, 333, 479) == ("b",)  # one row of A and of the output; B's rows (333 halves) matter
    assert p(1, 333, 479, strides_b=(0, 1)) == ()  # B broadcast: every row starts at the same address
    assert p(1, 64, 479, strides_a=(1, 1)) == ()  # a single row whose recorded row stride is 1
    assert Problem("mm", 1, 1, 333, 479, "float16", "float16", "float16").leading_dims == (16, 333, 16)
    # one row per batch: the batch stride steps between rows (decode attention over 1025 keys)
    decode = Problem("bmm", 128, 1, 1025, 128, "bfloat16", "bfloat16", "bfloat16", transpose_b=True)
    assert decode.leading_dims == (128, 128, 1025) and decode.misaligned_operands == ("out",)
    assert (
        Problem("bmm", 4, 8, 64, 64, "float16", "float16", "float16", strides_a=(4000, 64, 1)).misaligned_operands == ()
    )
    assert Problem(
        "bmm", 4, 8, 64, 64, "float16", "float16", "float16", strides_a=(4001, 64, 1)
    ).misaligned_operands == ("a",)


def test_row_alignment_bytes_is_the_power_of_two_that_divides_each_operands_row():
    """K=479 halves: A's rows (958 bytes) and B's stored N x K rows are 2-byte aligned, the output's
    rows of N=2052 halves (4104 bytes) 8-byte aligned; 16 bytes is the most it says (the vector
    width that matters); misaligned_operands are those under 16."""
    problem = Problem("mm", 1, 2048, 2052, 479, "float16", "float16", "float16", transpose_b=True)
    assert problem.row_alignment_bytes() == (2, 2, 8)
    assert problem.misaligned_operands == ("a", "b", "out")
    fp32 = Problem("mm", 1, 64, 64, 100, "float32", "float32", "float32")  # rows of 400, 256, 256 bytes
    assert fp32.row_alignment_bytes() == (16, 16, 16) and fp32.misaligned_operands == ()  # 16 at most


def test_copy_problems_takes_what_each_files_predicate_picks(tmp_path):
    """dataset_tools.copy_problems (data/h100/make_unhinted.py, data/h200/make_unled.py): the
    problems each file's predicate keeps, with their timings; a file whose predicate is None gives
    none; one source record naming the files problems came from."""
    from torch_diode.dataset_tools import copy_problems

    d = make_dataset()
    problems = [p for _, p, _ in d.problems()]
    save_dataset(d, tmp_path / "a.json")
    save_dataset(d, tmp_path / "b.json")
    picks = {"a.json": lambda p: p == problems[0], "b.json": None}
    out = copy_problems([tmp_path / "a.json", tmp_path / "b.json"], lambda path, ds: picks[path.name], {"tool": "t"})
    assert [p for _, p, _ in out.problems()] == [problems[0]]
    (_, _, timings), *_ = [x for x in d.problems() if x[1] == problems[0]]
    assert [t.samples_us for _, _, ts in out.problems() for t in ts] == [t.samples_us for t in timings]
    assert out.metadata["sources"] == [{"tool": "t", "settings": {"files": ["a.json"]}}]


def test_a_config_read_before_does_not_let_a_wrong_type_through(tmp_path):
    """A config equal to a good one read before but for the type of a value (0 for False) is
    refused: the configs table checked whole lets no such value through."""
    data = _good()
    load_dataset(_write_json(tmp_path / "good.json", data))
    (aten,) = [i for i, c in enumerate(data["configs"]) if c["template_id"] == "aten::mm"]
    data["configs"][aten]["even_k"] = 0
    with pytest.raises(DatasetFormatError) as info:
        load_dataset(_write_json(tmp_path / "bad.json", data))
    assert info.value.field_path == f"configs[{aten}].even_k"


def test_an_int_time_loads_as_a_float_and_an_infinite_one_is_refused(tmp_path):
    data = _good()
    row = data["hardware"][0]["ops"]["mm"][0]
    i = row["failed"].index(False)
    row["time_us"][i] = 7
    loaded = load_dataset(_write_json(tmp_path / "int.json", data))
    times = [t.time_us for _, _, timings in loaded.problems() for t in timings]
    assert 7.0 in times and all(type(t) is float for t in times)
    row["time_us"][i] = math.inf  # json writes Infinity, which Python's json reads back
    with pytest.raises(DatasetFormatError) as info:
        load_dataset(_write_json(tmp_path / "inf.json", data))
    assert info.value.field_path == f"hardware[0].ops.mm[0].time_us[{i}]"

"""The fast collection path on a GPU: correct kernels, and a small end-to-end sweep."""

import pytest
import torch

from torch_diode.collection.fast_sweep import FastSweep, choices_for, untiled_launcher
from torch_diode.collection.inductor_sweep import op_function
from torch_diode.collection.operands import layout_tensors
from torch_diode.dataset_io import load_dataset, save_dataset
from torch_diode.inductor.config_space import triton_configs
from torch_diode.types import Problem

pytestmark = pytest.mark.gpu

PROBLEMS = [
    Problem("mm", 1, 200, 96, 72, "float16", "float16", "float16"),
    Problem("mm", 1, 333, 130, 100, "bfloat16", "bfloat16", "bfloat16", transpose_a=True),
    Problem("addmm", 1, 64, 1000, 520, "float16", "float16", "float16", transpose_b=True),
    Problem("bmm", 3, 100, 64, 48, "bfloat16", "bfloat16", "bfloat16"),
    Problem("baddbmm", 2, 64, 80, 40, "float16", "float16", "float16", bias_shape=(1, 1, 80)),
    Problem("mm", 1, 128, 256, 96, "float32", "float32", "float32"),
    # long K: Inductor offers decompose_k, whose launchers are checked with the ATen ones
    Problem("mm", 1, 32, 64, 8192, "float16", "float16", "float16"),
    Problem("mm", 1, 16, 48, 6144, "bfloat16", "bfloat16", "bfloat16", transpose_a=True),
    Problem("mm", 1, 16, 16, 4096, "float32", "float32", "float32"),
    # strides and bounds with a power-of-two factor below 16: the kernels get layout hints
    Problem("bmm", 12, 200, 64, 200, "bfloat16", "bfloat16", "bfloat16"),
    Problem("mm", 1, 1000, 700, 1000, "float16", "float16", "float16", transpose_b=True),
    Problem("addmm", 1, 300, 100, 100, "float32", "float32", "float32", transpose_a=True),
]


def reference(problem, a, b, bias):
    fn = op_function(problem.op)
    return fn(bias, a, b) if bias is not None else fn(a, b)


@pytest.mark.parametrize("constants", [False, True], ids=["runtime_ints", "constant_ints"])
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.short())
def test_template_kernels_match_eager(problem, constants, monkeypatch):
    """Each sampled config's kernel computes the product, its ints passed at run time or, with
    kernel_spec.CONSTANT_INTS, every size and stride held as a constant."""
    from torch_diode.collection import kernel_spec
    from torch_diode.collection.triton_mm import make_launcher

    if constants:
        monkeypatch.setattr(kernel_spec, "CONSTANT_INTS", kernel_spec.int_names(problem.op in ("bmm", "baddbmm")))
    a, b, out, bias = layout_tensors(problem, "cuda")
    expected = reference(problem, a, b, bias).float()
    configs = triton_configs(problem, "DEFAULT")
    assert any(not c.even_k for c in configs) or problem.K % 16 == 0
    tol = 5e-2 if problem.dtype_a != "float32" else 1e-3
    for config in configs[:: max(1, len(configs) // 8)]:
        out.zero_()
        try:
            make_launcher(a, b, out, bias, config)()
        except Exception as e:  # out of shared memory is a legitimate failure, wrong results are not
            assert "resource" in str(e).lower(), e
            continue
        torch.testing.assert_close(
            out.float(), expected, atol=tol * max(1.0, expected.abs().max().item() / 10), rtol=tol
        )
    untiled = [c for c in choices_for(problem, 0, 0) if not c.is_tiled]
    long_k = problem.op == "mm" and problem.K >= 32 * max(problem.M, problem.N)
    assert any(c.template_id == "decompose_k" for c in untiled) == long_k
    for config in untiled:
        out.zero_()
        untiled_launcher(problem, config, a, b, out, bias)()
        torch.testing.assert_close(out.float(), expected, atol=tol * 10, rtol=tol)


@pytest.mark.parametrize(
    "problem",
    [
        # an operand of 5.8e9 elements (11.5 GB) reached through the batch stride: an illegal memory
        # access ended an H100 collection on this problem
        Problem("bmm", 512, 4, 1024, 11008, "bfloat16", "bfloat16", "bfloat16", transpose_b=True),
        # B of 2.15e9 elements reached through K offsets (row-major K x N)
        Problem("mm", 1, 16, 65600, 32768, "bfloat16", "bfloat16", "bfloat16"),
    ],
    ids=lambda p: p.short(),
)
def test_template_kernels_index_operands_past_int32(problem):
    """int32 offsets would wrap; the kernels index in int64 and match eager."""
    from torch_diode.collection.triton_mm import make_launcher

    a, b, out, bias = layout_tensors(problem, "cuda")
    expected = reference(problem, a, b, bias).float()
    for config in triton_configs(problem, "DEFAULT")[:3]:
        out.zero_()
        make_launcher(a, b, out, bias, config)()
        torch.testing.assert_close(
            out.float(), expected, atol=5e-2 * max(1.0, expected.abs().max().item() / 10), rtol=5e-2
        )
    del a, b, out, bias
    torch.cuda.empty_cache()


def test_fast_sweep_end_to_end(tmp_path):
    out = tmp_path / "fast.msgpack"
    summary = FastSweep(exhaustive_sample=30, reps=3, workers=4, progress=False).run(PROBLEMS[:3], out, chunk_size=2)
    assert summary.problems_measured == 3
    files = sorted(tmp_path.glob("fast_chunk*.msgpack"))
    assert len(files) == 2
    for f in files:
        ds = load_dataset(f)
        for _, problem, timings in ds.problems():
            ids = {t.config.template_id for t in timings}
            assert any(i.startswith("aten::") for i in ids) and any(i.startswith("triton::") for i in ids)
            ok = [t for t in timings if not t.failed]
            assert len(ok) >= 0.8 * len(timings)
            assert all(0.5 < t.time_us < 1e5 for t in ok)
    again = FastSweep(exhaustive_sample=30, reps=3, workers=4, progress=False).run(PROBLEMS[:3], out, chunk_size=2)
    assert again.problems_resumed == 3 and again.problems_measured == 0
    assert all(len(load_dataset(f).metadata["sources"]) == 1 for f in files)  # same settings: one record
    assert "release" in load_dataset(files[0]).metadata["sources"][0]["settings"]["ptxas"]  # the ptxas compiled with
    # a chunk file that holds its problems without a resume record (written so by a merge of files
    # that kept none) is done as well: nothing is measured again
    stripped = load_dataset(files[0])
    stripped.metadata.pop("completed")
    save_dataset(stripped, files[0])
    third = FastSweep(exhaustive_sample=30, reps=3, workers=4, progress=False).run(PROBLEMS[:3], out, chunk_size=2)
    assert third.problems_resumed == 3 and third.problems_measured == 0


def test_fast_sweep_with_constant_ints_compiles_them_in_its_workers_and_records_them(tmp_path, monkeypatch):
    """kernel_spec.CONSTANT_INTS reaches the compile workers, and the timing process launches what
    they compiled (a kernel keyed otherwise there would be compiled again: a binary more in the
    cache); the file's settings record it; the times stay close to those of the kernels with
    runtime ints."""
    from torch_diode.collection import kernel_spec

    problem = Problem("mm", 1, 308, 320, 768, "float16", "float16", "float16", transpose_b=True)
    sweep = FastSweep(exhaustive_sample=20, reps=5, workers=4, progress=False)
    runtime = sweep.run([problem], tmp_path / "runtime.msgpack")
    monkeypatch.setattr(kernel_spec, "CONSTANT_INTS", kernel_spec.MM_INTS)
    cache = tmp_path / "triton_cache"  # the constants' kernels alone: what the workers compiled, nothing more
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    summary = sweep.run([problem], tmp_path / "const.msgpack")
    assert summary.problems_measured == 1 and summary.failed_configs == runtime.failed_configs
    binaries = {p.parent for p in cache.rglob("*.cubin")}
    assert 0 < len(binaries) <= summary.kernels_compiled  # the timing process compiled none again
    (const,) = load_dataset(tmp_path / "const.msgpack").metadata["sources"]
    assert const["settings"]["constant_ints"] == list(kernel_spec.MM_INTS)
    times = [
        {t.config: t.time_us for _, _, ts in load_dataset(tmp_path / f).problems() for t in ts if not t.failed}
        for f in ("runtime.msgpack", "const.msgpack")
    ]
    ratios = [times[1][c] / times[0][c] for c in times[0] if c.is_tiled and c in times[1]]
    assert ratios and 0.7 < sorted(ratios)[len(ratios) // 2] < 1.1


def test_fast_sweep_with_a_draw_per_problem_times_each_problems_own_sample(tmp_path):
    """--exhaustive-rotations 0: each problem is timed on the configs of its own draw (those
    choices_for offers it), and the file records the rotations for diode remeasure."""
    out = tmp_path / "drawn.msgpack"
    problems = [PROBLEMS[3], PROBLEMS[9]]  # two bmm problems, whose EXHAUSTIVE lists agree
    sweep = FastSweep(exhaustive_sample=12, exhaustive_rotations=0, reps=3, workers=4, progress=False)
    assert sweep.run(problems, out).problems_measured == 2
    ds = load_dataset(out)
    assert ds.metadata["sources"][0]["settings"]["exhaustive_rotations"] == 0
    timed = [(problem, [t.config for t in timings]) for _, problem, timings in ds.problems()]
    assert len(timed) == 2
    for problem, configs in timed:
        assert configs == choices_for(problem, 12, 0, rotations=0)
    assert timed[0][1][-12:] != timed[1][1][-12:]


def test_fast_sweep_never_adds_to_a_file_measured_on_another_gpu(tmp_path):
    """A file of another GPU's measurements (as collect.sh's data/h100 files are on an H200) stops
    the sweep before it measures: one GPU's timings per file."""
    from dataclasses import replace

    from torch_diode.hardware import DeviceError, detect_hardware
    from torch_diode.types import Dataset, KernelConfig, TimedConfig

    other = replace(detect_hardware("cuda"), device_name="NVIDIA B200")
    ds = Dataset()
    ds.add(other, PROBLEMS[0], [TimedConfig(KernelConfig("aten::mm"), 10.0)])
    out = tmp_path / "other.json"
    save_dataset(ds, out)
    before = out.read_bytes()
    with pytest.raises(DeviceError, match="NVIDIA B200"):
        FastSweep(exhaustive_sample=10, reps=3, workers=2, progress=False).run(PROBLEMS[1:2], out)
    assert out.read_bytes() == before


def test_a_compile_past_the_timeout_is_a_failed_config_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """A compile timeout shorter than any Triton compile (an empty Triton cache, so that nothing is
    loaded instead): every Triton variant is given up, recorded as a failed config and counted,
    the workers are replaced each time, and the problem is still measured with its ATen choices
    timed."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    out = tmp_path / "timeout.json"
    sweep = FastSweep(exhaustive_sample=0, reps=3, workers=2, progress=False, compile_timeout_s=0.2)
    summary = sweep.run(PROBLEMS[:1], out)
    assert summary.problems_measured == 1
    assert summary.compile_timeouts == summary.kernels_compiled >= 1
    ((_, _, timings),) = list(load_dataset(out).problems())
    triton = [t for t in timings if t.config.template_id.startswith("triton::")]
    aten = [t for t in timings if t.config.template_id.startswith("aten::")]
    assert triton and all(t.failed for t in triton)
    assert aten and not any(t.failed for t in aten)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_fast_sweep_on_second_gpu_matches_first(tmp_path):
    """A worker given cuda:1 (diode collect --devices cuda:0 cuda:1) must launch and time its
    kernels on cuda:1: the same problems fail the same configs (out of shared memory) on both."""
    problems = PROBLEMS[:2]
    summaries = [
        FastSweep(exhaustive_sample=20, reps=3, workers=4, progress=False, device=device).run(
            problems, tmp_path / f"{i}.msgpack"
        )
        for i, device in enumerate(("cuda:0", "cuda:1"))
    ]
    assert [s.problems_measured for s in summaries] == [2, 2]
    assert summaries[1].timed_configs == summaries[0].timed_configs
    assert summaries[1].failed_configs == summaries[0].failed_configs
    assert summaries[1].failed_configs < summaries[1].timed_configs / 2


TMA_PROBLEMS = [
    Problem("mm", 1, 200, 96, 72, "float16", "float16", "float16"),
    Problem("mm", 1, 1024, 4096, 512, "bfloat16", "bfloat16", "bfloat16", transpose_b=True),
    Problem("mm", 1, 512, 136, 6144, "bfloat16", "bfloat16", "bfloat16", transpose_a=True),
    Problem("mm", 1, 128, 1104, 2560, "float16", "float16", "float16", transpose_a=True, transpose_b=True),
    Problem("addmm", 1, 512, 64, 6144, "float16", "float16", "float16", transpose_a=True),
    Problem("addmm", 1, 4000, 1000, 1536, "bfloat16", "bfloat16", "bfloat16", transpose_b=True),
    Problem("mm", 1, 128, 256, 100, "float32", "float32", "float32"),
]


@pytest.mark.parametrize("problem", TMA_PROBLEMS, ids=lambda p: p.short())
def test_persistent_tma_kernel_matches_eager(problem):
    """The fast path's copy of Inductor's persistent TMA template: every config Inductor offers
    with ENABLE_PERSISTENT_TMA_MATMUL=1 computes the product (partial tiles in M, N and K, both
    majornesses of each operand, the addmm epilogue)."""
    from torch._inductor import config
    from torch.utils._triton import has_triton_tma_device

    from torch_diode.collection.triton_mm import make_launcher
    from torch_diode.inductor.config_space import tma_configs, tma_offered

    if not has_triton_tma_device():
        pytest.skip("the GPU or Triton has no TMA")
    with config.patch({"triton.enable_persistent_tma_matmul": True}):
        assert tma_offered(problem)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    a, b, out, bias = layout_tensors(problem, "cuda")
    expected = reference(problem, a, b, bias).float()
    tol = 5e-2 if problem.dtype_a != "float32" else 1e-3
    configs = tma_configs(problem, sms)
    assert configs
    for config_ in configs:
        out.zero_()
        try:
            make_launcher(a, b, out, bias, config_)()
        except Exception as e:  # out of shared memory is a legitimate failure, wrong results are not
            assert "resource" in str(e).lower(), e
            continue
        torch.testing.assert_close(
            out.float(), expected, atol=tol * max(1.0, expected.abs().max().item() / 10), rtol=tol
        )


def test_fast_sweep_times_tma_where_inductor_offers_it(tmp_path, monkeypatch):
    """With Inductor's TMA flag set, the fast collector times the persistent TMA template's
    configs too, on the problems where Inductor offers it (not on a misaligned one)."""
    from torch._inductor import config
    from torch.utils._triton import has_triton_tma_device

    if not has_triton_tma_device():
        pytest.skip("the GPU or Triton has no TMA")
    problems = [TMA_PROBLEMS[1], Problem("mm", 1, 333, 130, 100, "bfloat16", "bfloat16", "bfloat16", transpose_a=True)]
    with config.patch({"triton.enable_persistent_tma_matmul": True}):
        summary = FastSweep(exhaustive_sample=10, reps=3, workers=4, progress=False).run(
            problems, tmp_path / "t.msgpack"
        )
    assert summary.problems_measured == 2
    ds = load_dataset(tmp_path / "t.msgpack")
    tma = {
        p.short(): [t for t in ts if t.config.template_id == "triton::mm_persistent_tma"] for _, p, ts in ds.problems()
    }
    assert len(tma[problems[0].short()]) >= 4 and not tma[problems[1].short()]
    assert all(not t.failed and 0.5 < t.time_us < 1e5 for t in tma[problems[0].short()])


def test_a_launcher_whose_first_two_repetitions_stall_is_timed_once_more():
    """The host stalls 3 ms between the events of a short kernel's first two timed repetitions (as
    a descheduled process would): both read over 1 ms, and the third repetition, queued after every
    launcher's first two, times the kernel; a kernel that does not stall gets all its repetitions."""
    import time

    from torch_diode.collection.timing import flush_buffer, time_launchers

    x = torch.ones(1024, device="cuda")
    calls = {"stalling": 0}

    def stalling():
        calls["stalling"] += 1
        if calls["stalling"] in (2, 3):  # the first call only loads; then the two first repetitions
            time.sleep(0.003)
        x.add_(1.0)

    def steady():
        x.add_(1.0)

    times = time_launchers([stalling, steady, None], reps=6, flush=flush_buffer("cuda"))
    assert calls["stalling"] == 4 and times[2] is None
    assert times[0] < 0.5 and times[1] < 0.5, times


def test_a_host_slower_than_the_flush_is_not_timed_behind_a_lead():
    """The host spends the flush's own time and 50 us more before each launch of a kernel of a few
    microseconds: without a lead the GPU waits for it between the events, with the collector's lead
    of GPU time queued before each flush (timing.LEAD_US) it does not."""
    import time

    from torch_diode.collection.timing import LEAD_US, _sleep_cycles_per_us, flush_buffer, time_launchers

    assert 200 < _sleep_cycles_per_us(torch.cuda.current_device()) < 5000  # a clock of 0.2-5 GHz
    assert LEAD_US >= 100
    flush = flush_buffer("cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush_ms = []
    for _ in range(5):
        start.record()
        flush.zero_()
        end.record()
        torch.cuda.synchronize()
        flush_ms.append(start.elapsed_time(end))
    delay_s = min(flush_ms) / 1000 + 50e-6
    x = torch.ones(1024, device="cuda")

    def slow_host():
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < delay_s:
            pass
        x.add_(1.0)

    (no_lead,) = time_launchers([slow_host], reps=4, flush=flush, lead_us=0.0)
    (lead,) = time_launchers([slow_host], reps=4, flush=flush)  # the collector's lead
    assert lead < 0.02, (lead, flush_ms)  # milliseconds: the kernel alone
    assert no_lead > lead + 0.02, (no_lead, lead, flush_ms)

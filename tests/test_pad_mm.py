"""benchmarks/pad_mm.py, and benchmarks/e2e.py recording its facts per measurement (CPU: pad_mm never pads there,
so an explicit F.pad stands in for its rewrite)."""

import os

import pytest
import torch
import torch.nn.functional as F

from benchmarks import pad_mm as padding


@pytest.fixture(scope="module")
def e2e():
    """benchmarks.e2e, whose import sets TORCH_DIODE_NO_AUTOREGISTER for its workers: the
    environment is restored after this module, so later tests' subprocesses do not inherit it."""
    saved = dict(os.environ)
    from benchmarks import e2e as module

    yield module
    os.environ.clear()
    os.environ.update(saved)


def test_measure_records_pad_mm_on_cpu(e2e, monkeypatch):
    # measure() is the worker's function; only its GPU timing is replaced
    for name in ("bench_us", "bench_cudagraph_us", "wall_us_per_call"):
        monkeypatch.setattr(e2e, name, lambda *args: 1.0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    a, b = torch.randn(199, 64), torch.randn(64, 72)
    record = e2e.measure(torch.mm, (a, b), "default", "unused")
    pad_mm = record["pad_mm"]
    assert pad_mm["counters"]["pad_mm_bench"] == 0  # can_pad: CUDA/XPU only
    assert set(pad_mm["counters"]) == set(padding.PAD_MM_COUNTERS)
    assert pad_mm["gemms"] == [{"op": "mm", "shapes": [[199, 64], [64, 72]], "padded": False}]
    assert pad_mm["padded_gemms"] == 0
    assert pad_mm["cached_decisions"] == {} and pad_mm["cached_base_mm_ms"] == {}
    assert "error" not in pad_mm


def test_pad_mm_facts_sees_a_padded_operand():
    torch._dynamo.reset()
    fn = torch.compile(lambda a, b: torch.mm(F.pad(a, (0, 0, 0, 1)), b)[:-1], dynamic=False)
    # a cached graph would skip the pass; the C++ kernels stay in their cache
    with torch._inductor.config.patch(fx_graph_cache=False), padding.pad_mm_facts() as facts:
        fn(torch.randn(199, 64), torch.randn(64, 72))
    assert facts["gemms"] == [{"op": "mm", "shapes": [[200, 64], [64, 72]], "padded": True}]
    assert facts["padded_gemms"] == 1


def test_pad_mm_facts_diffs_counters_and_cache():
    from torch._dynamo.utils import counters
    from torch._inductor.fx_passes import pad_mm
    from torch._inductor.utils import fresh_cache

    counters["inductor"]["pad_mm_bench"] += 5  # an earlier compile's
    with fresh_cache():
        with padding.pad_mm_facts() as facts:
            counters["inductor"]["pad_mm_bench"] += 2
            pad_mm.set_cached_should_pad("key", True)
            pad_mm.set_cached_base_mm_benchmark_time("base mm time: key", 0.021)
    assert facts["counters"]["pad_mm_bench"] == 2
    assert "gemms" not in facts  # nothing compiled
    assert facts["cached_decisions"] == {"key": True}
    assert facts["cached_base_mm_ms"] == {"key": 0.021}


def test_pad_mm_facts_never_raises_without_counters(monkeypatch):
    monkeypatch.setattr(padding, "PAD_MM_COUNTERS", ("no_such_counter",))
    with padding.pad_mm_facts() as facts:
        pass
    assert facts["counters"] == {"no_such_counter": 0}


def test_workers_share_pad_decisions_not_autotune_timings(tmp_path):
    from torch._inductor.fx_passes import pad_mm
    from torch._inductor.utils import fresh_cache

    shared = tmp_path / "decisions.json"
    with fresh_cache():  # the first worker decides
        pad_mm.set_cached_should_pad("mm 199", True)
        pad_mm.get_pad_cache().set_value("mm", "inputs", "choice", value=1.5)  # an autotune timing
        padding.save_pad_decisions(shared)
    with fresh_cache():  # a later worker, its own cache directory
        assert pad_mm.get_cached_should_pad("mm 199") is None
        padding.load_pad_decisions(shared)
        assert pad_mm.get_cached_should_pad("mm 199") is True
        assert pad_mm.get_pad_cache().lookup("mm") is None
        pad_mm.set_cached_should_pad("bmm 7", False)
        padding.save_pad_decisions(shared)
    assert padding.json.loads(shared.read_text()) == {"mm 199": True, "bmm 7": False}


def test_sharing_from_a_missing_file_changes_nothing(tmp_path):
    from torch._inductor.utils import fresh_cache

    with fresh_cache():
        padding.load_pad_decisions(tmp_path / "none.json")
        assert padding.pad_cache_entries() == {}
